"""Several rigs at once (``run_files`` with jobs > 1, ``tablectl scenario run -j``) on the rig's
own mosquitto: the broker of docs/security.md, with its ACL and a user per role, where a client
without a login is refused. The rigs of a run share it with the first rig's logins, each under a
prefix of its own, and every file passes on each of them."""

from __future__ import annotations

from pathlib import Path

import aiomqtt
import pytest

from simulators.errors import ScenarioError
from simulators.rig.broker import AUTO
from simulators.rig.errors import RigError
from simulators.rig.rig import Rig, RigOptions
from simulators.scenario.device_runner import DeviceRun, run_files
from simulators.scenario.expect import check
from simulators.scenario.model import load_scenario
from tests.helpers import SCENARIOS
from tests.integration.broker import mosquitto_available

pytestmark = [
    pytest.mark.broker,
    pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed"),
    pytest.mark.slow,
]

# Short files of several kinds: dealer-paced, reader mistakes, a shuffler's power cut, host-paced.
FILES = [
    "normal-hand-4-seats.toml",
    "rule-BURN-ASSIGN.toml",
    "T22-burn-into-muck.toml",
    "rule-SHF-POWER.toml",
    "rule-BOARD-GROUP.toml",
    "board-host-flop-four-burn.toml",
]
JOBS = 3


async def test_the_rigs_own_broker_refuses_a_client_without_a_login(tmp_path: Path) -> None:
    async with Rig(RigOptions(broker=AUTO, directory=tmp_path)) as rig:
        address = rig.address
        assert address is not None
        assert address.console is not None
        assert address.table is not None
        with pytest.raises(aiomqtt.MqttError, match="Not authorized"):
            async with aiomqtt.Client(address.host, address.port, timeout=10):
                pass


async def test_several_rigs_at_once_on_the_rigs_own_broker_all_pass(tmp_path: Path) -> None:
    scenarios = [load_scenario(SCENARIOS / name) for name in FILES]
    assert all("device" in scenario.scenario.modes for scenario in scenarios)
    notes: list[str] = []
    options = RigOptions(broker=AUTO, prefix="jobs", directory=tmp_path)
    runs: dict[int, DeviceRun | ScenarioError | RigError] = {}
    async for index, run in run_files(scenarios, options, JOBS, note=notes.append):
        runs[index] = run
    assert len(notes) == 1
    assert notes[0].startswith("a mosquitto of its own at mqtt://")
    assert sorted(runs) == list(range(len(FILES)))
    problems: list[str] = []
    for index, run in sorted(runs.items()):
        name = FILES[index]
        if not isinstance(run, DeviceRun):
            problems.append(f"{name}: device mode could not run it: {run}")
            continue
        if run.source != "broker":
            problems.append(f"{name}: the events came from the {run.source}, not the broker")
        scenario = scenarios[index]
        verdict = check(run.envelopes, scenario.expect, scenario.expect_not)
        problems += [f"{name}: {failure}" for failure in verdict.failures]
    assert not problems, "\n".join(problems)
    # every rig of the run played at least one table, and only the first started a mosquitto
    for job in range(JOBS):
        assert list((tmp_path / f"rig-{job}").glob("table-*")), f"rig {job} played nothing"
    assert [p.parent.name for p in tmp_path.glob("rig-*/broker")] == ["rig-0"]
