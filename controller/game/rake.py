"""The house's take from the pots, and time, as pure arithmetic (HOUSE-RAKE, HOUSE-DROP-JACKPOT,
HOUSE-TIME).

HOUSE-RAKE: each raked pot gives ``rake.percent`` of itself, rounded down to ``rake.chip_unit``;
the main pot first, then the side pots in the order they were made (``rake.pots = "main"``: the
main pot only), until the hand's total reaches ``rake.cap``. No rake from a hand whose pot is
below ``rake.minimum_pot``, nor (``rake.no_flop_no_drop``) from a hand that ended before the flop.
HOUSE-DROP-JACKPOT: a fixed ``rake.jackpot_drop`` from the main pot of a hand whose pot reaches
``rake.jackpot_threshold`` (flop rule as for the rake), after the rake and never more than is left.
HOUSE-TIME: instead of a rake, every seat dealt in pays ``rake.time_amount`` once per period.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import NamedTuple

from controller.profiles import RakeMode, RakePots, RulesProfile


class HouseTake(NamedTuple):
    """What the dealer drops from each pot (main pot first), and why nothing when nothing."""

    rake: tuple[int, ...]
    jackpot: int
    waived: str | None = None

    @property
    def total(self) -> int:
        """Every chip the house takes from the pots."""
        return sum(self.rake) + self.jackpot

    def from_pot(self, index: int) -> int:
        """The chips taken from the pot at ``index`` (main pot 0): its rake, and the drop."""
        return self.rake[index] + (self.jackpot if index == 0 else 0)


def _percent(profile: RulesProfile) -> Fraction:
    # exact: a percent written 2.5 in TOML rakes 2.5 %, never 2.4999…
    return Fraction(repr(profile.rake_percent)) / 100


def pot_rake(amount: int, percent: Fraction, unit: int) -> int:
    """``percent`` of ``amount``, rounded down to the chip unit."""
    return int(amount * percent / unit) * unit


def take(pots: Sequence[int], flop_seen: bool, profile: RulesProfile) -> HouseTake:
    """The house's take from ``pots`` (their amounts, main pot first)."""
    nothing = (0,) * len(pots)
    total = sum(pots)
    if profile.rake_no_flop_no_drop and not flop_seen:
        return HouseTake(nothing, 0, "no flop, no drop")
    rake = list(nothing)
    waived = None
    if profile.rake_mode is RakeMode.POT:
        if total < profile.rake_minimum_pot:
            waived = f"the pot of {total} is below the minimum of {profile.rake_minimum_pot}"
        else:
            percent = _percent(profile)
            room = profile.rake_cap or total
            raked = pots[:1] if profile.rake_pots is RakePots.MAIN else pots
            for i, amount in enumerate(raked):
                rake[i] = min(pot_rake(amount, percent, profile.rake_chip_unit), room)
                room -= rake[i]
    jackpot = 0
    if profile.rake_jackpot_drop and pots:
        if total >= profile.rake_jackpot_threshold:
            jackpot = min(profile.rake_jackpot_drop, pots[0] - rake[0])
        elif waived is None and not any(rake):
            waived = f"the pot of {total} is below the jackpot threshold"
    return HouseTake(tuple(rake), jackpot, waived if not any(rake) and not jackpot else None)


def time_charges(stacks: Mapping[int, int], seats: Sequence[int], amount: int) -> dict[int, int]:
    """HOUSE-TIME: each seat dealt in pays ``amount``; a seat that cannot pay it and keep a chip
    to play with pays nothing this period (it is named, and plays)."""
    return {seat: (amount if stacks[seat] > amount else 0) for seat in seats}
