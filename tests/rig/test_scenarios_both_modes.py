"""Every shipped scenario, played both ways: into the pure core and through the devices.

Device mode runs the file on the rig: the TSP/1 shuffler and reader simulators as processes, the
real drivers in ``tablectl run`` on a fresh journal, the broker. Both runs must pass the file's
expectations, and their event streams must agree in the normal form of
``simulators/scenario/normal.py`` (docs/scenarios.md). The files are split into chunks, each
played on three rigs at once sharing the session's broker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulators.rig.rig import RigOptions
from simulators.scenario.cli import envelopes
from simulators.scenario.core_runner import run_core
from simulators.scenario.device_runner import DeviceRun, run_files
from simulators.scenario.expect import check
from simulators.scenario.model import Scenario, load_scenario
from simulators.scenario.normal import differences, normal_form
from tests.helpers import SCENARIOS

FILES = sorted(SCENARIOS.glob("*.toml"))
SCENARIO_OF = {path: load_scenario(path) for path in FILES}
DEVICE = [path for path in FILES if "device" in SCENARIO_OF[path].scenario.modes]
CORE_ONLY = [path for path in FILES if path not in DEVICE]
# Each chunk starts JOBS benches (two simulators and a launcher each): fewer, longer chunks
# start fewer of them; each still ends well within its timeout on a busy machine.
CHUNKS = 4
JOBS = 3


def core_envelopes(scenario: Scenario) -> list[dict[str, object]]:
    return envelopes(scenario, run_core(scenario).events)


def problems_of(path: Path, run: object) -> list[str]:
    scenario = SCENARIO_OF[path]
    if not isinstance(run, DeviceRun):
        return [f"{path.name}: device mode could not run it: {run}"]
    found = []
    verdict = check(run.envelopes, scenario.expect, scenario.expect_not)
    found += [f"{path.name} (device): {failure}" for failure in verdict.failures]
    core = normal_form(core_envelopes(scenario))
    device = normal_form(run.envelopes)
    found += [f"{path.name}: {d}" for d in differences(core, device)]
    if not core:
        found.append(f"{path.name}: no events at all")
    return found


@pytest.mark.slow(weight=3)  # the longest tests of the suite: started first
@pytest.mark.timeout(600)
@pytest.mark.parametrize("chunk", range(CHUNKS))
async def test_every_scenario_gives_the_same_events_on_the_devices(
    chunk: int, broker_url: str, tmp_path: Path
) -> None:
    files = DEVICE[chunk::CHUNKS]
    options = RigOptions(broker=broker_url, prefix=f"both-{chunk}", directory=tmp_path)
    problems: list[str] = []
    played = 0
    async for index, run in run_files([SCENARIO_OF[p] for p in files], options, JOBS):
        played += 1
        problems += problems_of(files[index], run)
    assert played == len(files)
    assert not problems, "\n".join(problems)


def test_the_core_passes_every_file_including_those_only_it_can_run() -> None:
    for path in FILES:
        scenario = SCENARIO_OF[path]
        verdict = check(core_envelopes(scenario), scenario.expect, scenario.expect_not)
        assert verdict.passed, f"{path.name}: {verdict.failures}"


def test_only_a_few_files_are_core_only_and_each_says_why() -> None:
    assert len(DEVICE) + len(CORE_ONLY) == len(FILES)
    assert len(CORE_ONLY) <= 8, [p.name for p in CORE_ONLY]
    for path in CORE_ONLY:
        text = path.read_text()
        assert "# Core mode only: " in text, f"{path.name} does not say why it is core only"
        assert SCENARIO_OF[path].scenario.modes == ["core"]
