"""Pots, side pots and the split of each pot among its winners.

POT-SEP: every side pot and the main pot is resolved separately, with its own eligible seats and
its own odd chips; they are listed last-created side pot first, main pot last.
DE-1553 / RR-TIE-3/4 / TDA-ODD: the odd chips of a tied pot, by the profile's reading (catalogue
C-8): to the tied winners clockwise from the button, at most ``odd_chip.max_per_player`` each
(0 = no limit), or literally to the first live players left of the button.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from controller.profiles import OddChipRecipient, Ruleset, RulesProfile
from controller.rules.ids import Rule


class Pot(NamedTuple):
    """A pot: its chips and the seats that can win it."""

    amount: int
    eligible: tuple[int, ...]


class PotSplit(NamedTuple):
    """How one pot is paid: winners' shares and the odd chips within them, after the house's
    take from it (``house``, dropped before the award)."""

    pot: Pot
    winners: Mapping[int, int]
    odd_chips: Mapping[int, int]
    house: int = 0
    boards: tuple[Mapping[int, int], ...] = ()  # RUN-TWICE: each runout's winners and shares


def uncalled(committed: Mapping[int, int]) -> tuple[int, int] | None:
    """The seat and chips of a bet nobody matched, to go back to its owner (or None)."""
    if len(committed) < 2:
        return None
    ranked = sorted(committed.items(), key=lambda item: item[1], reverse=True)
    (top_seat, top), (_, second) = ranked[0], ranked[1]
    return (top_seat, top - second) if top > second else None


def build_pots(committed: Mapping[int, int], live: Sequence[int], dead: int = 0) -> list[Pot]:
    """Main and side pots from each seat's chips in the hand; ``live`` seats can win.

    Folded seats' chips are dead money in the pots their amounts reach; ``dead`` (an ante posted
    for the table) is in the main pot. Pots with the same eligible seats are merged. The result
    is main pot first.
    """
    amounts = [c for c in committed.values() if c > 0]
    levels = sorted({committed[s] for s in live if committed.get(s, 0) > 0})
    pots: list[Pot] = []
    previous = 0
    for level in levels:
        amount = 0
        for c in amounts:
            if c > previous:
                amount += (c if c < level else level) - previous
        eligible = tuple(s for s in live if committed.get(s, 0) >= level)
        if pots and pots[-1].eligible == eligible:
            pots[-1] = Pot(pots[-1].amount + amount, eligible)
        elif amount:
            pots.append(Pot(amount, eligible))
        previous = level
    leftover = sum(c - previous for c in amounts if c > previous)
    if leftover and pots:
        # chips above every live seat's level belong to folded seats: dead money in the top pot
        pots[-1] = Pot(pots[-1].amount + leftover, pots[-1].eligible)
    if dead:
        if pots:
            pots[0] = Pot(pots[0].amount + dead, pots[0].eligible)
        else:  # nobody live put a chip in: the dead money is the whole pot
            pots.append(Pot(dead, tuple(live)))
    return pots


def split_pot(
    pot: Pot,
    winners: Sequence[int],
    clockwise: Sequence[int],
    live: Sequence[int],
    profile: RulesProfile,
    house: int = 0,
) -> PotSplit:
    """Divide ``pot``, less the house's take, among ``winners`` (tied best hands); odd chips per
    the profile.

    ``clockwise`` is every dealt-in seat starting left of the button; ``live`` the seats still
    holding a live hand (for the literal reading of § 1553).
    """
    share, remainder = divmod(pot.amount - house, len(winners))
    paid = dict.fromkeys(winners, share)
    odd: dict[int, int] = {}
    if remainder:
        if profile.odd_chip_recipient is OddChipRecipient.FIRST_LIVE_PLAYER_LITERAL:
            candidates = [s for s in clockwise if s in set(live)]
        else:
            candidates = [s for s in clockwise if s in set(winners)]
        cap = profile.odd_chip_max_per_player or remainder
        for seat in _cycle(candidates, remainder, cap):
            odd[seat] = odd.get(seat, 0) + 1
            paid[seat] = paid.get(seat, 0) + 1
    return PotSplit(pot, paid, odd, house)


def split_runouts(
    pot: Pot,
    winners: Sequence[Sequence[int]],
    clockwise: Sequence[int],
    live: Sequence[int],
    profile: RulesProfile,
    house: int = 0,
) -> PotSplit:
    """RUN-TWICE: ``pot`` less the house's take, in equal parts for the runouts (the odd chips
    of that division to the first, as PHH readers give them), each part split among the winners
    on its board (``winners``, one list per runout) with its own odd chips per the profile."""
    part, remainder = divmod(pot.amount - house, len(winners))
    paid: dict[int, int] = {}
    odd: dict[int, int] = {}
    boards = []
    for run, on_board in enumerate(winners):
        chips = part + (remainder if run == 0 else 0)
        split = split_pot(Pot(chips, pot.eligible), on_board, clockwise, live, profile)
        boards.append(split.winners)
        for seat, won in split.winners.items():
            paid[seat] = paid.get(seat, 0) + won
        for seat, extra in split.odd_chips.items():
            odd[seat] = odd.get(seat, 0) + extra
    return PotSplit(pot, paid, odd, house, tuple(boards))


def _cycle(candidates: Sequence[int], chips: int, cap: int) -> list[int]:
    """Hand out ``chips`` one at a time: each candidate in turn takes up to ``cap`` of them."""
    order: list[int] = []
    while len(order) < chips:  # a second pass only if every candidate reached the cap
        for seat in candidates:
            take = min(cap, chips - len(order))
            order += [seat] * take
            if len(order) == chips:
                break
    return order


def odd_chip_rule(profile: RulesProfile) -> Rule:
    """The source the profile cites for odd chips."""
    if profile.odd_chip_recipient is OddChipRecipient.FIRST_LIVE_PLAYER_LITERAL:
        return Rule.DE_1553
    return {
        Ruleset.DE_CHARITABLE: Rule.DE_1553,
        Ruleset.RROP_CASH: Rule.RR_TIE_3_4,
        Ruleset.TDA_TOURNAMENT: Rule.TDA_ODD,
    }[profile.ruleset]


def resolve(
    pots: Sequence[Pot],
    live: Sequence[int],
    clockwise: Sequence[int],
    winners_of: Callable[[Pot], Sequence[int]],
    profile: RulesProfile,
    house: Sequence[int] = (),
) -> list[PotSplit]:
    """Every pot of ``build_pots`` split, last side pot first and main pot last (POT-SEP);
    ``house`` is the house's take from each pot, main pot first (none when empty)."""
    return [
        split_pot(pot, winners_of(pot), clockwise, live, profile, house[i] if house else 0)
        for i, pot in reversed(tuple(enumerate(pots)))
    ]
