"""zones_in_play: the zones the table tells its readers to read first, phase by phase."""

from __future__ import annotations

from controller.table.inputs import Zone
from controller.table.state import Phase
from controller.table.watch import zones_in_play
from simulators.scenario.core_runner import CoreRunner
from simulators.scenario.model import parse_scenario
from tests.helpers import DEAL, START, act, scenario_text, step

DECK = 'order = ["2c", "3c", "4c", "5c", "6c", "7c", "8c", "9c", "Tc", "Jc"]'


def played(steps: str) -> CoreRunner:
    runner = CoreRunner(parse_scenario(scenario_text({1: 50, 2: 50, 4: 50}, 4, steps, deck=DECK)))
    runner.play()
    return runner


def zones(*names: str) -> frozenset[Zone]:
    return frozenset(Zone.parse(name) for name in names)


def test_before_a_hand_the_muck_and_the_shuffler_input() -> None:
    assert zones_in_play(played("").run.state) == zones("muck", "shuffler_in")


def test_hole_cards_going_out_the_seats_dealt_in() -> None:
    state = played(START).run.state
    assert state.hand is not None
    assert state.hand.phase is Phase.DEALING
    assert zones_in_play(state) == zones("seat:1", "seat:2", "seat:4", "muck")


def test_a_betting_round_the_live_seats_then_the_street_the_burn_and_the_board() -> None:
    state = played(DEAL + act(4, "fold")).run.state  # the button acts first three-handed
    assert state.hand is not None
    assert state.hand.phase is Phase.BETTING
    assert zones_in_play(state) == zones("seat:1", "seat:2", "muck")
    state = played(DEAL + step(auto="check_round")).run.state
    assert state.hand is not None
    assert state.hand.phase is Phase.BOARD
    assert zones_in_play(state) == zones("burn", "board", "muck")


def test_the_award_the_live_seat_then_after_the_hand_every_zone_still_holding_cards() -> None:
    folded = DEAL + act(4, "fold") + act(1, "fold")
    state = played(folded).run.state
    assert state.hand is not None
    assert state.hand.phase is Phase.AWARD
    assert zones_in_play(state) == zones("seat:2", "muck")
    state = played(folded + step(dealer="award")).run.state
    assert state.hand is None
    assert zones_in_play(state) == zones("seat:1", "seat:2", "seat:4", "muck", "shuffler_in")
