"""SHF-RAND: the chi-square audit of shuffled decks."""

from __future__ import annotations

import random

import pytest

from controller.cards import STANDARD_DECK, Card
from controller.game.audit import chi_square_critical, position_uniformity


def test_the_critical_value_matches_the_tables() -> None:
    # chi-square 95 % points: df 10 -> 18.307, df 100 -> 124.342 (published tables)
    assert chi_square_critical(10) == pytest.approx(18.307, abs=0.05)
    assert chi_square_critical(100) == pytest.approx(124.342, abs=0.05)


def test_shf_rand_a_fair_shuffler_passes() -> None:
    rng = random.Random(2026)
    decks = [rng.sample(STANDARD_DECK, 52) for _ in range(2000)]
    result = position_uniformity(decks)
    assert result.decks == 2000
    assert result.passed, result


def test_shf_rand_a_biased_shuffler_fails_the_chi_square_test() -> None:
    rng = random.Random(2026)

    def biased() -> list[Card]:
        deck = rng.sample(STANDARD_DECK, 52)
        if rng.random() < 0.2:  # one deck in five leaves the ace of spades on top
            deck.remove(Card("As"))
            deck.insert(0, Card("As"))
        return deck

    result = position_uniformity(biased() for _ in range(2000))
    assert not result.passed
    assert result.statistic > result.critical


def test_shf_rand_needs_whole_decks() -> None:
    with pytest.raises(ValueError, match="whole decks"):
        position_uniformity([STANDARD_DECK[:51]])
    with pytest.raises(ValueError, match="no decks"):
        position_uniformity([])
