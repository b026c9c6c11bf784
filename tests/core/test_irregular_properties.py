"""Hypothesis: random hands with random irregularities keep every card and every chip."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from simulators.autoplay import Style, random_table
from simulators.irregular import MISTAKES, IrregularDealer
from tests.core.test_properties import Checking, chips


class CheckingIrregular(Checking, IrregularDealer):
    """The irregular dealer, checking conservation after every input."""


@settings(max_examples=50)
@given(
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    profile=st.sampled_from(["rrop-cash", "de-charitable", "tda-tournament"]),
)
def test_irregular_hands_keep_cards_and_chips_and_misdeals_return_everything(
    seed: int, profile: str
) -> None:
    rng = random.Random(seed)
    dealer = CheckingIrregular(random_table(rng, profile), rng, Style(), rate=0.9)
    dealer.total_chips = chips(dealer.run.state)
    for _ in range(3):
        if not dealer.play_hand():
            break
    assert dealer.run.state.hand is None
    assert chips(dealer.run.state) == dealer.total_chips


def test_every_mistake_is_made_and_survived() -> None:
    made: set[str] = set()
    for seed in range(120):
        rng = random.Random(seed)
        dealer = IrregularDealer(random_table(rng), rng, Style(), rate=1.0)
        for _ in range(2):
            if not dealer.play_hand():
                break
        made.update(dealer.made)
    assert made == {name for name, _ in MISTAKES}
