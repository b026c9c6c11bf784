"""Every shipped scenario file passes in the pure core."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulators.errors import ScenarioError
from simulators.scenario.core_runner import run_core
from simulators.scenario.model import Scenario, parse_scenario
from tests.helpers import SCENARIOS, run_file

FILES = sorted(p.name for p in SCENARIOS.glob("*.toml"))


@pytest.mark.parametrize("name", FILES)
def test_scenario_passes_in_the_core(name: str) -> None:
    run_file(name)


def test_there_are_scenarios() -> None:
    assert len(FILES) >= 5
    assert all(Path(SCENARIOS / f).stat().st_size for f in FILES)


def host_paced(*steps: str) -> Scenario:
    """A host-paced table of six with the given steps (TOML)."""
    text = (
        '[scenario]\nname = "host"\n[table]\n'
        'stacks = { "1" = 100, "2" = 100, "3" = 100, "4" = 100, "5" = 100, "6" = 100 }\n'
        'button = 6\ndispense = "host"\n'
        '[[step]]\ndealer = "start_hand"\n[[step]]\nshuffler = "shuffle"\n'
        '[[step]]\nauto = "deal_hole"\n[[step]]\nauto = "check_round"\n' + "".join(steps)
    )
    return parse_scenario(text, "host.toml")


def test_a_host_paced_step_must_be_the_group_the_table_asks_for() -> None:
    with pytest.raises(ScenarioError, match="the table asks for a burn group of 1 cards"):
        run_core(host_paced('[[step]]\nshuffler = "dispense"\npurpose = "flop"\n'))
    # the same group from the keypad is the dealer's doing: premature, not refused
    run = run_core(host_paced('[[step]]\nshuffler = "dispense"\npurpose = "flop"\nby = "dealer"\n'))
    assert [e.type for e in run.events][-1] == "deal.group.dispensed"


def test_a_host_paced_table_asks_for_nothing_until_the_stub_is_reshuffled() -> None:
    burn = '[[step]]\nshuffler = "dispense"\n[[step]]\nreader = "arrive"\nzone = "burn"\n'
    four = burn + '[[step]]\nshuffler = "dispense"\ncount = 4\n'
    spread = '[[step]]\nreader = "arrive"\nzone = "board"\n[[step]]\ndealer = "confirm"\n'
    with pytest.raises(ScenarioError, match="asks the shuffler for no group"):
        run_core(host_paced(four, spread, '[[step]]\nshuffler = "dispense"\n'))
    run = run_core(
        host_paced(
            four, spread, '[[step]]\nshuffler = "reshuffle"\n[[step]]\nshuffler = "dispense"\n'
        )
    )
    last = run.events[-1]
    assert (last.type, last.data["purpose"], last.data["count"]) == (
        "deal.group.dispensed",
        "flop",
        3,
    )
