"""The simulator's control vocabulary and scenario files: what is accepted, and clear refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulators.pn532.control import ControlError, Request, parse_request
from simulators.pn532.faults import AntennaMode
from simulators.pn532.scenario import ScenarioError, load_scenario, parse_scenario

UID = "04a1b2c3d4e580"


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (
            {"place": [UID, "de:ad:be:ef"]},
            Request("place", uids=(bytes.fromhex(UID), b"\xde\xad\xbe\xef")),
        ),
        ({"remove": []}, Request("remove")),
        ({"tags": [UID]}, Request("tags", uids=(bytes.fromhex(UID),))),
        ({"fault": "flap", "rate": 0.25}, Request("fault", fault="flap", rate=0.25)),
        ({"fault": "stacked_miss", "rate": 1}, Request("fault", fault="stacked_miss", rate=1.0)),
        ({"fault": "corrupt", "rate": 0}, Request("fault", fault="corrupt")),
        ({"fault": "antenna"}, Request("fault", fault="antenna", mode=AntennaMode.TIMEOUT)),
        (
            {"fault": "antenna", "mode": "silent"},
            Request("fault", fault="antenna", mode=AntennaMode.SILENT),
        ),
        ({"fault": "unplug"}, Request("fault", fault="unplug")),
        ({"clear": "all"}, Request("clear", fault="all")),
        ({"status": True}, Request("status")),
    ],
)
def test_requests_that_are_understood(request_: dict[str, Any], expected: Request) -> None:
    assert parse_request(request_) == expected


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (["place"], "JSON object"),
        ({}, "exactly one action"),
        ({"place": [], "remove": []}, "exactly one action"),
        ({"place": [], "rate": 1}, "unknown key"),
        ({"place": UID}, "list of UID strings"),
        ({"place": ["0102"]}, "4, 7, 8 or 10 bytes"),
        ({"fault": "flap"}, "rate must be"),
        ({"fault": "flap", "rate": 1.5}, "rate must be"),
        ({"fault": "flap", "rate": True}, "rate must be"),
        ({"fault": "flap", "rate": 0.1, "mode": "x"}, "not a mode"),
        ({"fault": "antenna", "mode": "melted"}, "antenna mode must be one of"),
        ({"fault": "antenna", "rate": 0.1}, "not a rate"),
        ({"fault": "replug", "rate": 0.1}, "no options"),
        ({"fault": "meteor"}, "fault must be"),
        ({"clear": "everything"}, "clear takes one of"),
    ],
)
def test_requests_that_are_refused(request_: object, message: str) -> None:
    with pytest.raises(ControlError, match=message):
        parse_request(request_)


def test_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        'seed = 4\ntags = ["deadbeef"]\n'
        '[[step]]\nat = 2\nfault = "unplug"\n'
        f'[[step]]\nat = 0.5\nplace = ["{UID}"]\n',
        encoding="utf-8",
    )
    scenario = load_scenario(path)
    assert scenario.seed == 4
    assert scenario.tags == (b"\xde\xad\xbe\xef",)
    assert [(s.at, s.request.action) for s in scenario.steps] == [(0.5, "place"), (2.0, "fault")]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"speed": 1}, "unknown key"),
        ({"seed": "7"}, "seed must be an integer"),
        ({"tags": ["xyz"]}, "tags: not a tag UID"),
        ({"step": {"at": 1}}, "array of tables"),
        ({"step": [{"place": []}]}, "step 1: 'at' must be"),
        ({"step": [{"at": -1, "place": []}]}, "step 1: 'at' must be"),
        ({"step": [{"at": 1, "place": []}, {"at": 2, "fault": "meteor"}]}, "step 2: fault must be"),
    ],
)
def test_bad_scenarios_are_refused_with_the_place(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(document, "table.toml")


def test_unreadable_scenario_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[[step]\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        load_scenario(broken)
