"""Showdown: who shows first, and what each tabled hand is worth.

DE-1551 (Del. § 1551, TDA 17A): the last player to bet or raise on the final round shows first; if
everyone checked, the first player to act on that round (first live hand left of the button when
nobody acted); then clockwise. RR-SD-7 (RR Showdown 7, profile key ``showdown.sidepot_first``):
players in a side pot show before a player all in for the main pot only.
DE-1550b2 / RR-SD-2: cards speak: a tabled hand is read from its cards, not from what is said.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from controller.cards import Card

with warnings.catch_warnings():
    # eval7 builds a range-string parser at import time with pyparsing names that newer pyparsing
    # deprecates; only its evaluator is used here.
    warnings.simplefilter("ignore", DeprecationWarning)
    import eval7

_EVAL7 = {rank + suit: eval7.Card(rank + suit) for rank in "23456789TJQKA" for suit in "cdhs"}


class HandValue(NamedTuple):
    """A seven-card hand read by the evaluator: higher ``strength`` wins."""

    strength: int
    category: str
    best: tuple[Card, ...]


def evaluate(hole: Sequence[Card], board: Sequence[Card]) -> HandValue:
    """The value of the best five-card hand from ``hole`` and ``board``."""
    cards = [*hole, *board]
    ranked = [_EVAL7[c] for c in cards]
    value = eval7.evaluate(ranked)
    # drop the first card whose absence keeps the value, again until five are left: they are
    # the best five. A card that was needed stays needed with fewer cards (a smaller set is
    # never worth more), so each search goes on from where the last one stopped.
    start = 0
    while len(ranked) > 5:
        for i in range(start, len(ranked)):
            rest = ranked[:i] + ranked[i + 1 :]
            if eval7.evaluate(rest) == value:
                ranked, cards, start = rest, cards[:i] + cards[i + 1 :], i
                break
    return HandValue(value, eval7.handtype(value), tuple(cards))


def strength(hole: Sequence[Card], board: Sequence[Card]) -> int:
    """Only the comparable strength (cheaper than :func:`evaluate`)."""
    return int(eval7.evaluate([_EVAL7[c] for c in (*hole, *board)]))


def showdown_order(
    live: Sequence[int],
    clockwise: Sequence[int],
    final_aggressor: int | None,
    final_first_actor: int | None,
    pot_depth: Mapping[int, int] | None = None,
) -> list[int]:
    """The order in which the live hands must be shown.

    ``clockwise`` lists the dealt-in seats from the first left of the button. ``pot_depth`` (for
    RR-SD-7) says in how many pots each seat is eligible; deeper seats show first.
    """
    live_set = set(live)
    in_order = [s for s in clockwise if s in live_set]
    first = final_aggressor if final_aggressor in live_set else None
    if first is None and final_first_actor in live_set:
        first = final_first_actor
    if first is not None:
        i = in_order.index(first)
        in_order = in_order[i:] + in_order[:i]
    if pot_depth:
        in_order.sort(key=lambda s: -pot_depth.get(s, 0))  # stable: clockwise within a depth
    return in_order
