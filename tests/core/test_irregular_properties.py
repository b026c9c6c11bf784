"""Hypothesis: random hands with random irregularities keep every card and every chip."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cards import STANDARD_DECK
from controller.table.state import SET_ASIDE
from controller.table.tray import BOARD_PURPOSES
from simulators.autoplay import Style, random_table
from simulators.irregular import BOARD_MISTAKES, MISTAKES, IrregularDealer
from simulators.scenario.virtual_shuffler import returned_cards
from tests.core.test_properties import Checking, chips

pytestmark = [pytest.mark.slow]


class CheckingIrregular(Checking, IrregularDealer):
    """The irregular dealer, checking conservation after every input and every stub reshuffle."""

    reshuffles = 0

    async def reshuffle_stub(self, seed: int | None) -> None:
        """The deck reshuffled is exactly the cards out of play: not on the board, in a hand,
        burned or mucked (nor dealt unread to a seat or the burn), and the table counts it so."""
        hand = self.run.state.hand
        assert hand is not None
        events = self.run.events[self.returned_from :]
        back, _ = returned_cards(events, self.shuffler.groups, self.seen)
        deck = [*self.shuffler.order[self.shuffler.position :], *back]
        piles = hand.cards.piles
        in_play = {c for pile, cards in piles.items() if pile != SET_ASIDE for c in cards}
        for dealt in self.shuffler.groups.values():  # dealt to a seat or burned, never read
            if dealt.purpose not in BOARD_PURPOSES:
                in_play |= {c for c in dealt.cards if c not in self.seen}
        assert len(deck) == len(set(deck))
        assert set(deck) == set(STANDARD_DECK) - in_play
        assert hand.deal.stub == len(deck), (
            f"the table expects {hand.deal.stub}, the deck has {len(deck)}"
        )
        self.reshuffles += 1
        await super().reshuffle_stub(seed)


@settings(max_examples=100)
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


def board_table(seed: int, profile: str, group_with_burn: bool) -> CheckingIrregular:
    """A random table whose dealer makes a board mistake in almost every hand."""
    rng = random.Random(seed)
    scenario = random_table(rng, profile)
    rules = {"board_group_includes_burn": group_with_burn}
    meta = scenario.scenario.model_copy(update={"house_rules": rules})
    dealer = CheckingIrregular(scenario.model_copy(update={"scenario": meta}), rng, rate=0.95)
    dealer.mistakes = BOARD_MISTAKES
    dealer.total_chips = chips(dealer.run.state)
    return dealer


@settings(max_examples=80)
@given(
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    profile=st.sampled_from(["rrop-cash", "de-charitable", "tda-tournament"]),
    group_with_burn=st.booleans(),
)
def test_every_board_ruling_reshuffles_exactly_the_cards_out_of_play(
    seed: int, profile: str, group_with_burn: bool
) -> None:
    """Premature cards and streets, groups of the wrong size, missing burns, at random: every
    stub reshuffle takes back exactly the cards neither on the board, in a hand, burned nor
    mucked (checked in ``reshuffle_stub``), cards and chips are kept at every input, and every
    hand ends with its betting rounds closed once each, in order."""
    dealer = board_table(seed, profile, group_with_burn)
    for _ in range(3):
        start = len(dealer.run.events)
        if not dealer.play_hand():
            break
        closed = [
            e.data["street"] for e in dealer.run.events[start:] if e.type == "betting.round.closed"
        ]
        assert closed == ["preflop", "flop", "turn", "river"][: len(closed)]
    assert dealer.run.state.hand is None
    assert chips(dealer.run.state) == dealer.total_chips


def test_the_board_property_is_not_vacuous() -> None:
    """The board dealer's tables reshuffle the stub often, so the property above is tried."""
    reshuffles = 0
    for seed in range(30):
        rng = random.Random(seed)
        dealer = IrregularDealer(random_table(rng), rng, rate=0.95)
        dealer.mistakes = BOARD_MISTAKES
        dealer.play_hand()
        reshuffles += sum(1 for e in dealer.run.events if e.type == "stub.reshuffle.required")
    assert reshuffles >= 10
