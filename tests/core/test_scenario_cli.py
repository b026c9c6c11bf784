"""``tablectl scenario run``: verdicts, exit codes, JSON lines, and clear errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main
from simulators.errors import ScenarioError
from simulators.scenario.model import parse_scenario
from tests.helpers import SCENARIOS

GOOD = SCENARIOS / "T18-odd-chip-two-way.toml"


def test_a_passing_file_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "run", "--core", str(GOOD)]) == 0
    out = capsys.readouterr().out
    assert f"PASS {GOOD}" in out
    assert "pot.award.proposed" in out


def test_json_prints_one_envelope_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "run", "--core", "--json", str(GOOD)]) == 0
    lines = capsys.readouterr().out.splitlines()
    envelopes = [json.loads(line) for line in lines]
    assert [e["seq"] for e in envelopes] == list(range(1, len(envelopes) + 1))
    assert all(e["schema"] == "tablectl.event/1" for e in envelopes)
    assert envelopes[0]["event_id"] == "T1:core:1"


def test_a_failed_expectation_exits_one_with_what_came_instead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        GOOD.read_text() + '\n[[expect]]\ntype = "pot.awarded"\ndata = { payouts = { "1" = 99 } }\n'
    )
    assert main(["scenario", "run", "--core", "-q", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert "not found" in out


def test_a_file_that_cannot_run_exits_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "broken.toml"
    bad.write_text("[scenario]\nname = 'x'\n")
    assert main(["scenario", "run", "--core", str(bad), str(GOOD)]) == 2
    captured = capsys.readouterr()
    assert "table: Field required" in captured.err
    assert f"PASS {GOOD}" in captured.out  # the other file still ran


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[scenario\n", "not valid TOML"),
        (
            '[scenario]\nname = "x"\n[table]\nstacks = { 1 = 5 }\nbutton = 1\n',
            "line 3: table: at least two seats",
        ),
        (
            '[scenario]\nname = "x"\n[table]\nstacks = { 1 = 5, 2 = 5 }\nbutton = 1\n'
            '[[step]]\ndealer = "start_hand"\n[[step]]\nseat = 3\n',
            "line 8: step.1: a step needs exactly one of",
        ),
        (
            '[scenario]\nname = "x"\n[table]\nstacks = { 1 = 5, 2 = 5 }\nbutton = 1\n'
            '[[step]]\nshuffler = "dispense"\npurpose = "hole"\ncolour = "red"\n',
            "line 9: step.0.colour: Extra inputs are not permitted",
        ),
    ],
)
def test_malformed_files_name_the_line_and_the_key(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(text, "x.toml")


def test_an_unknown_profile_or_command_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        '[scenario]\nname = "x"\nprofile = "nope"\n[table]\nstacks = { 1 = 5, 2 = 5 }\nbutton = 1\n'
    )
    assert main(["scenario", "run", "--core", str(path)]) == 2
    assert "no rules profile named 'nope'" in capsys.readouterr().err
    path.write_text(
        '[scenario]\nname = "x"\n[table]\nstacks = { 1 = 5, 2 = 5 }\nbutton = 1\n'
        '[[step]]\ndealer = "deal_faster"\n'
    )
    assert main(["scenario", "run", "--core", str(path)]) == 2
    assert "unknown dealer command 'deal_faster'" in capsys.readouterr().err
