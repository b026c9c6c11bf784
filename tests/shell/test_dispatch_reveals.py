"""Revealing retired decks (SHF-INFO): never a deck whose cards a hand can still deal."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.shell.dispatch import Need, Planner, reveals
from controller.table.event_types import DeckVerified
from controller.table.events import TableEvent
from simulators.scenario.core_runner import run_core
from simulators.scenario.model import load_scenario
from tests.helpers import SCENARIOS

TS = datetime(2026, 1, 1, tzinfo=UTC)


def verified(shuffle_id: int, *, stub: bool = False) -> TableEvent:
    return TableEvent(DeckVerified(shuffle_id, 52, stub=stub or None), TS, None)


def test_a_stub_reshuffle_reveals_nothing_the_next_deck_reveals_every_deck_of_the_hand() -> None:
    assert reveals([1001], [verified(1002, stub=True)]) == []
    assert reveals([1001, 1002], [verified(1003)]) == [
        Need("reveal", None, 1001),
        Need("reveal", None, 1002),
    ]
    assert reveals([], [verified(1003)]) == []


def test_the_planner_keeps_both_decks_of_a_hand_with_a_stub_reshuffle() -> None:
    run = run_core(load_scenario(SCENARIOS / "board-host-turn-premature-burn.toml"))
    hand = run.state.last_hand
    assert hand is not None
    planner = Planner("shuffler")
    state = run.state
    decks = sorted(
        {e.data["shuffle_id"] for e in run.events if e.type == "deck.verified"}
    )  # the hand's deck, then its reshuffled stub
    assert len(decks) == 2
    assert hand.deal.shuffle_id == decks[1]
    planner.in_play = [decks[0]]
    planner.track(state)
    assert planner.in_play == decks
    needs = [need for need, _ in planner.plan(state, [verified(decks[1] + 1)])]
    assert needs == [Need("reveal", None, decks[0]), Need("reveal", None, decks[1])]
    planner.done(needs[0])
    assert planner.in_play == [decks[1]]
