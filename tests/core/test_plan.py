"""next_dispense: what the shell asks the shuffler for, step by step."""

from __future__ import annotations

from controller.table.inputs import Purpose, Zone
from controller.table.plan import DispenseRequest, next_dispense
from simulators.scenario.core_runner import CoreRunner, run_at_once
from simulators.scenario.model import parse_scenario
from tests.helpers import DEAL, START, scenario_text, step

DECK = 'order = ["2c", "3c", "4c", "5c", "6c", "7c"]'


def played(steps: str, house_rules: str = "{}") -> CoreRunner:
    text = scenario_text({1: 50, 2: 50, 3: 50}, 3, steps, house_rules=house_rules, deck=DECK)
    runner = CoreRunner(parse_scenario(text))
    runner.play()
    return runner


def test_hole_groups_one_at_a_time_in_deal_order() -> None:
    runner = played(START)
    assert next_dispense(runner.run.state) == DispenseRequest(Purpose.HOLE, 1, 2)
    run_at_once(runner.dispense(Purpose.HOLE, 1, None))
    assert next_dispense(runner.run.state) is None  # wait until the group is read
    run_at_once(runner.arrive(Zone.parse("seat:1"), runner.shuffler.last_group))
    assert next_dispense(runner.run.state) == DispenseRequest(Purpose.HOLE, 2, 2)


def test_nothing_before_the_deck_is_verified_or_while_held() -> None:
    assert next_dispense(played('[[step]]\ndealer = "start_hand"\n').run.state) is None
    held = played(
        START + step(shuffler="dispense", purpose="hole", seat=1, count=3),
        house_rules='{ "grp.size_error" = "hold" }',
    )
    hand = held.run.state.hand
    assert hand is not None
    assert hand.irregular.holds
    assert next_dispense(held.run.state) is None


def test_burn_then_street_after_the_round() -> None:
    runner = played(DEAL + step(auto="check_round"))
    assert next_dispense(runner.run.state) == DispenseRequest(Purpose.BURN, None, 1)
    burn = run_at_once(runner.dispense(Purpose.BURN, None, None))
    run_at_once(runner.arrive(Zone.parse("burn"), burn))
    assert next_dispense(runner.run.state) == DispenseRequest(Purpose.FLOP, None, 3)


def test_a_replacement_is_asked_for_and_the_exposed_card_is_the_burn() -> None:
    steps = (
        START
        + step(shuffler="dispense", purpose="hole", seat=1)
        + step(reader="arrive", zone="seat:1")
        + step(shuffler="dispense", purpose="hole", seat=2)
        + step(reader="arrive", zone="seat:2")
        + step(dealer="exposed", seat=2, card="4c")
        + step(shuffler="dispense", purpose="hole", seat=3)
        + step(reader="arrive", zone="seat:3")
    )
    runner = played(steps)
    assert next_dispense(runner.run.state) == DispenseRequest(Purpose.EXTRA, 2, 1)
    run_at_once(runner.replace_owed())
    run_at_once(runner.check_round())
    # the exposed card is the flop's burn: no burn is asked for, only the flop
    assert next_dispense(runner.run.state) == DispenseRequest(Purpose.FLOP, None, 3)
