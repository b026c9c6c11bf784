"""The README's example scenario runs and its expectation holds; it opens with the two commands."""

from __future__ import annotations

import re
from pathlib import Path

from simulators.scenario.cli import envelopes
from simulators.scenario.core_runner import run_core
from simulators.scenario.expect import check
from simulators.scenario.model import parse_scenario

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_scenario_passes() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```toml\n(.*?)```", text, re.S)
    assert block is not None
    scenario = parse_scenario(block.group(1), "README.md")
    run = run_core(scenario)
    verdict = check(envelopes(scenario, run.events), scenario.expect, scenario.expect_not)
    assert verdict.passed, verdict.failures
    assert scenario.expect


def test_the_readme_opens_with_the_two_commands() -> None:
    first_block = README.read_text(encoding="utf-8").split("```")[1]
    commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
