"""The crosstalk soak, short: the automatic dealer through the FEIG radio and the arbiter.

``benchmarks/feig_soak.py`` runs 500 hands; these run a few dozen, enough that crosstalk makes
the unarbitrated table irregular.
"""

from __future__ import annotations

import pytest

from simulators.feig.soak import soak

HANDS = 30


@pytest.mark.slow
def test_crosstalk_causes_no_irregularity_once_arbitrated() -> None:
    figures = soak(HANDS, seed=3)
    assert figures.crosstalk_reads > 1000  # neighbours did hear cards, a read in ten
    assert figures.shadowed > 0
    assert figures.irregularities == []
    assert figures.held_hands == 0


@pytest.mark.slow
def test_without_arbitration_the_same_crosstalk_is_irregular() -> None:
    figures = soak(HANDS, seed=3, arbitrate=False)
    assert "a card moved where it should not" in figures.irregularities


@pytest.mark.slow
def test_real_moves_still_reach_the_core() -> None:
    figures = soak(HANDS, seed=3, slide_moves=True)
    assert figures.moves_injected > 50
    assert figures.moves_reported == figures.moves_injected
    assert figures.irregularities == []
