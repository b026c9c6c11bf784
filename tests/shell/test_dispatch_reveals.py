"""Revealing retired decks (SHF-INFO): never a deck whose cards a hand can still deal."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from controller.shell.dispatch import Dispatch, Need, Planner, reveals
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


def test_the_planner_keeps_a_bounded_memory_over_thousands_of_decks() -> None:
    """A year is ~200,000 decks: group numbers, reveals asked and reveals never answered (no
    shuffler connected) stay bounded, and the newest reveals are the ones kept."""
    run = run_core(load_scenario(SCENARIOS / "board-host-turn-premature-burn.toml"))
    state = replace(run.state, last_hand=None)  # between hands, no deck of its own in play
    assert state.hand is None
    planner = Planner("shuffler")
    key = 0
    for sid in range(1, 3001):
        planner.in_play = [sid]
        key += 1
        dispense = Dispatch(key, "shuffler", Need("dispense", f"h{sid}", sid, "hole", 1, 2), 1)
        planner.adopt([dispense], state)
        planned = planner.plan(state, [verified(sid + 1)])
        assert [need for need, _ in planned] == [Need("reveal", None, sid)]
        dispatches = []
        for need, group in planned:
            key += 1
            dispatches.append(Dispatch(key, "shuffler", need, group))
        planner.adopt(dispatches, state)
    outstanding = [need.shuffle_id for need in planner.outstanding]
    assert outstanding == list(range(2993, 3001))  # the newest eight, oldest first
    assert len(planner.last_group) <= 16
    assert planner.last_group[3000] == 1
    assert len(planner.revealed) <= 16
    assert 3000 in planner.revealed
