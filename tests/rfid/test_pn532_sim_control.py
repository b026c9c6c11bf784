"""The simulator's control vocabulary and scenario files: what is accepted, and clear refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulators.command_vocabulary import CommandError, PlaceCommand, RemoveCommand, StatusCommand
from simulators.errors import ScenarioError
from simulators.pn532.commands import (
    COMMANDS,
    ClearCommand,
    Command,
    FaultCommand,
    TagsCommand,
    parse_command,
)
from simulators.pn532.faults import AntennaMode

UID = "04a1b2c3d4e580"


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ({"place": [UID, "de:ad:be:ef"]}, PlaceCommand(place=[UID, "deadbeef"])),
        ({"remove": []}, RemoveCommand(remove=[])),
        ({"tags": [UID]}, TagsCommand(tags=[UID])),
        ({"fault": "flap", "rate": 0.25}, FaultCommand(fault="flap", rate=0.25)),
        ({"fault": "stacked_miss", "rate": 1}, FaultCommand(fault="stacked_miss", rate=1.0)),
        ({"fault": "corrupt", "rate": 0}, FaultCommand(fault="corrupt", rate=0.0)),
        ({"fault": "antenna"}, FaultCommand(fault="antenna", mode=AntennaMode.TIMEOUT)),
        (
            {"fault": "antenna", "mode": "silent"},
            FaultCommand(fault="antenna", mode=AntennaMode.SILENT),
        ),
        ({"fault": "unplug"}, FaultCommand(fault="unplug")),
        ({"clear": "all"}, ClearCommand(clear="all")),
        ({"status": True}, StatusCommand()),
    ],
)
def test_requests_that_are_understood(request_: dict[str, Any], expected: Command) -> None:
    assert parse_command(request_) == expected


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (["place"], "JSON object"),
        ({}, "exactly one of the keys"),
        ({"place": [], "remove": []}, "exactly one of the keys"),
        ({"place": [], "rate": 1}, "rate: Extra inputs are not permitted"),
        ({"place": UID}, "place: Input should be a valid list"),
        ({"place": ["0102"]}, "4, 7, 8 or 10 bytes"),
        ({"fault": "flap"}, "flap needs a rate from 0 to 1"),
        ({"fault": "flap", "rate": 1.5}, "rate: Input should be less than or equal to 1"),
        ({"fault": "flap", "rate": True}, "rate: Input should be a valid number"),
        ({"fault": "flap", "rate": 0.1, "mode": "x"}, "mode: Input should be"),
        ({"fault": "corrupt", "rate": 0.1, "mode": "silent"}, "corrupt does not take mode"),
        ({"fault": "antenna", "mode": "melted"}, "mode: Input should be 'timeout'"),
        ({"fault": "antenna", "rate": 0.1}, "antenna does not take rate"),
        ({"fault": "replug", "rate": 0.1}, "replug does not take rate"),
        ({"fault": "meteor"}, "fault: Input should be 'flap'"),
        ({"clear": "everything"}, "clear: Input should be 'flap'"),
    ],
)
def test_requests_that_are_refused(request_: object, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        parse_command(request_)


def test_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        'seed = 4\ntags = ["deadbeef"]\n'
        '[[step]]\nat = 2\nfault = "unplug"\n'
        f'[[step]]\nat = 0.5\nplace = ["{UID}"]\n',
        encoding="utf-8",
    )
    scenario = COMMANDS.load_scenario(path)
    assert scenario.seed == 4
    assert scenario.initial == (TagsCommand(tags=["deadbeef"]),)
    assert scenario.steps == (
        (0.5, PlaceCommand(place=[UID])),
        (2.0, FaultCommand(fault="unplug")),
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"speed": 1}, "unknown key"),
        ({"seed": "7"}, "seed must be an integer"),
        ({"tags": ["xyz"]}, "tags: .*not a tag UID"),
        ({"step": {"at": 1}}, "array of tables"),
        ({"step": [{"place": []}]}, "step 1: 'at' must be"),
        ({"step": [{"at": -1, "place": []}]}, "step 1: 'at' must be"),
        (
            {"step": [{"at": 1, "place": []}, {"at": 2, "fault": "meteor"}]},
            "step 2: fault: Input should be",
        ),
    ],
)
def test_bad_scenarios_are_refused_with_the_place(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        COMMANDS.parse_scenario(document, "table.toml")


def test_unreadable_scenario_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        COMMANDS.load_scenario(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[[step]\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        COMMANDS.load_scenario(broken)
