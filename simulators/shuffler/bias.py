"""A shuffler that does not shuffle well: the simulator's deliberately biased modes (pure).

The pit's randomness audit (SHF-RAND, docs/reports.md) must catch a shuffler that is broken in a
way a deck check cannot see: every card is there, every deck is a permutation, but the
permutations are not uniform. Two faults, each a ``--bias`` of ``tablectl sim shuffler``:

* ``riffles=N`` — a weak shuffle: the deck the shuffler takes back (the last deck it dealt, its
  cards in that order: the simplest model of a deck gathered from the table) is given ``N``
  riffle shuffles of the Gilbert–Shannon–Reeds model (cut by a binomial(52, 1/2), cards dropped
  from each packet with probability proportional to its size) instead of a uniform shuffle.
  Bayer and Diaconis ("Trailing the dovetail shuffle to its lair", Ann. Appl. Probab. 2 (1992)
  294–313) show ``N`` such riffles leave at most ``2^N`` rising sequences and a deck far from
  uniform for ``N`` below about ``1.5 log₂ 52`` (7 for 52 cards): each card ends up near where it
  was, which the audit's position changes see.
* ``stuck=P`` — a stuck position: the card at position ``P`` (1 = the top) of the deck taken back
  stays there; the others are shuffled uniformly around it (a slot of the elevator that never
  moves).

The first deck starts from a new deck's order (controller/cards.py's canonical order). Every
draw comes from the RNG given (the simulator's ``--seed`` makes it one per deck), so a run is
reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from controller.cards import STANDARD_DECK

T = TypeVar("T")

#: The most riffles a ``riffles=`` bias takes (beyond a few dozen it is a fair shuffle anyway).
MAX_RIFFLES = 64


@dataclass(frozen=True, slots=True)
class Bias:
    """How the shuffler shuffles instead of uniformly: ``riffles`` GSR riffles of the previous
    deck and/or the card at 1-based position ``stuck`` left where it was."""

    riffles: int | None = None
    stuck: int | None = None

    def __str__(self) -> str:
        parts = [f"riffles={self.riffles}"] if self.riffles is not None else []
        parts += [f"stuck={self.stuck}"] if self.stuck is not None else []
        return ",".join(parts)


def parse_bias(text: str, size: int = len(STANDARD_DECK)) -> Bias:
    """``riffles=N``, ``stuck=P`` or both, comma-separated (ValueError: what is wrong)."""
    values: dict[str, int] = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep or name not in ("riffles", "stuck"):
            raise ValueError(f"bias {part.strip()!r}: riffles=N or stuck=POSITION")
        if name in values:
            raise ValueError(f"bias: {name} given twice")
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"bias {name}={value!r}: a whole number") from None
        values[name] = number
    riffles, stuck = values.get("riffles"), values.get("stuck")
    if riffles is not None and not 1 <= riffles <= MAX_RIFFLES:
        raise ValueError(f"bias riffles={riffles}: from 1 to {MAX_RIFFLES}")
    if stuck is not None and not 1 <= stuck <= size:
        raise ValueError(f"bias stuck={stuck}: a position from 1 (the top) to {size}")
    return Bias(riffles, stuck)


def riffle(deck: Sequence[T], rng: random.Random) -> list[T]:
    """One Gilbert–Shannon–Reeds riffle shuffle of ``deck`` (top first)."""
    cut = sum(rng.getrandbits(1) for _ in deck)  # binomial(n, 1/2)
    left, right = list(deck[:cut]), list(deck[cut:])
    out: list[T] = []
    i = j = 0
    while i < len(left) or j < len(right):
        a, b = len(left) - i, len(right) - j
        if rng.randrange(a + b) < a:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out


def biased_order(previous: Sequence[T], bias: Bias, rng: random.Random) -> list[T]:
    """The next deck of a shuffler with ``bias`` that took back ``previous``."""
    if bias.riffles is not None:
        order = list(previous)
        for _ in range(bias.riffles):
            order = riffle(order, rng)
    else:
        order = rng.sample(list(previous), len(previous))
    if bias.stuck is not None:
        card = previous[bias.stuck - 1]
        order.remove(card)
        order.insert(bias.stuck - 1, card)
    return order
