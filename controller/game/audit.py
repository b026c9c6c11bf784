"""SHF-RAND: an offline audit of the shuffler's randomness.

MD COMAR 36.05.02.17F asks that a shuffler pass a chi-square goodness-of-fit test at 95 %
confidence. This is not a per-hand ruling: it looks at many shuffled decks (from the journal, or
the revealed orders) at once. Each card's position is counted in ``buckets`` equal slices of the
deck; under a fair shuffle every card falls in every slice equally often.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from controller.cards import STANDARD_DECK, Card

_Z95 = 1.6448536269514722  # the one-sided 95 % point of the standard normal


class Uniformity(NamedTuple):
    """The outcome of the chi-square test."""

    decks: int
    statistic: float
    degrees_of_freedom: int
    critical: float

    @property
    def passed(self) -> bool:
        """True when the positions are consistent with a fair shuffle at 95 % confidence."""
        return self.statistic <= self.critical


def chi_square_critical(df: int) -> float:
    """The 95 % critical value of chi-square with ``df`` degrees of freedom (Wilson-Hilferty)."""
    k = 2 / (9 * df)
    return float(df * (1 - k + _Z95 * math.sqrt(k)) ** 3)


def position_uniformity(decks: Iterable[Sequence[Card]], buckets: int = 4) -> Uniformity:
    """Test where each card lands across many shuffled 52-card decks (top first)."""
    counts = {card: [0] * buckets for card in STANDARD_DECK}
    n = 0
    for deck in decks:
        if len(deck) != len(STANDARD_DECK):
            raise ValueError(f"a deck of {len(deck)} cards; the audit needs whole decks")
        n += 1
        for position, card in enumerate(deck):
            counts[card][position * buckets // len(deck)] += 1
    if n == 0:
        raise ValueError("no decks to audit")
    expected = n / buckets
    statistic = sum((o - expected) ** 2 / expected for row in counts.values() for o in row)
    df = len(STANDARD_DECK) * (buckets - 1)
    return Uniformity(n, statistic, df, chi_square_critical(df))
