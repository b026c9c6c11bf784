"""``tablectl sim rfid`` as its own process: options, scenario files, control channel, the driver
against it end to end."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.table.inputs import Health, TagArrived, TagDeparted
from drivers.rfid.tsp_reader.driver import TspReader
from simulators.command_vocabulary import CommandError
from simulators.control_client import ControlClient, ControlError
from simulators.errors import ScenarioError
from simulators.rfid.commands import COMMANDS, FaultCommand, PlaceCommand, parse_command
from simulators.rig.launcher import LaunchedProcess, launch
from tests.device_rig import EventLog
from tests.tsp_reader.conftest import ANTENNAS, FAST, UIDS

A, B, C = UIDS[:3]
TABLECTL = [sys.executable, "-m", "controller.cli"]


@dataclass
class SimProcess:
    process: LaunchedProcess
    link: Path
    control: ControlClient


Start = Callable[..., Awaitable[SimProcess]]


@pytest.fixture
async def sim_rfid(tmp_path: Path) -> AsyncIterator[Start]:
    """Start ``tablectl sim rfid`` processes; all are stopped at the end of the test."""
    started: list[SimProcess] = []

    async def start(*args: str) -> SimProcess:
        link, control = tmp_path / f"rfid{len(started)}", tmp_path / f"rfid{len(started)}.ctl"
        process = await launch(
            ["sim", "rfid", "--link", str(link), "--control", str(control), *args],
            dict(os.environ),
            stdout=None,
            stderr=2,  # where this process writes its own (the test run captures it)
        )
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 20)
        assert line.startswith(b"/dev/pts/"), line
        client = ControlClient(control)
        await client.connect()
        started.append(SimProcess(process, link, client))
        return started[-1]

    yield start
    for sim in started:
        with contextlib.suppress(Exception):
            await sim.control.close()
        if sim.process.returncode is None:
            sim.process.terminate()
        assert await asyncio.wait_for(sim.process.wait(), 10) == 0


async def test_the_driver_against_the_simulator_process(sim_rfid: Start, tmp_path: Path) -> None:
    scenario = tmp_path / "tags.toml"
    scenario.write_text(
        f'tags = {{ 0 = ["{A}"] }}\n\n[[step]]\nat = 0.0\nplace = ["{B}"]\nantenna = 2\n',
        encoding="utf-8",
    )
    sim = await sim_rfid("--scenario", str(scenario), "--seed", "3")
    log = EventLog()
    reader = TspReader.from_options("rfid", {"port": str(sim.link), **FAST, "antennas": ANTENNAS})
    await reader.start(log.sink)
    async with reader:
        await log.first(TagArrived, uid=A)
        await log.first(TagArrived, uid=B)
        await sim.control.send({"remove": [A]})
        await log.first(TagDeparted, uid=A)
        mark = len(log.events)
        await sim.control.fault("unplug")
        await log.health("rfid", Health.RECONNECTING, after=mark)
        await sim.control.send({"place": [C], "antenna": 1})
        reply = await sim.control.fault("replug")
        assert reply["path"].startswith("/dev/pts/")
        await log.health("rfid", Health.ONLINE, after=mark)
        await log.first(TagArrived, uid=C, after=mark)
        status = await sim.control.status()
    assert status["plugged"] is True
    assert status["antennas"]["1"]["zone"] == "seat:2"
    assert status["antennas"]["2"]["asserted"] == [B]
    with pytest.raises(ControlError, match="unplug does not take rate"):
        await sim.control.send({"fault": "unplug", "rate": 0.5})
    with pytest.raises(ControlError, match="antenna: the reader has antennas 0 to 15"):
        await sim.control.send({"place": [A], "antenna": 20})


@pytest.mark.parametrize(
    ("args", "scenario", "message"),
    [
        (["--tag", "3"], None, "expected ANTENNA:UID"),
        (["--tag", "0:xyz"], None, "not a tag UID"),
        (["--antennas", "40"], None, "--antennas must be 1 to 32"),
        ([], 'colour = "red"\n', "unknown key(s) colour"),
        ([], '[[step]]\nat = 1\nfault = "flap"\nrate = 3\n', "step 1: rate"),
        ([], '[[step]]\nfault = "unplug"\n', "step 1: 'at' must be seconds"),
        ([], "tags = { 40 = [] }\n", "tags: the reader has antennas 0 to 15"),
    ],
)
async def test_bad_options_and_scenarios_exit_2_with_the_reason(
    tmp_path: Path, args: list[str], scenario: str | None, message: str
) -> None:
    if scenario is not None:
        (tmp_path / "bad.toml").write_text(scenario, encoding="utf-8")
        args = [*args, "--scenario", str(tmp_path / "bad.toml")]
    process = await asyncio.create_subprocess_exec(
        *TABLECTL, "sim", "rfid", *args, stderr=asyncio.subprocess.PIPE
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 2
    assert message in stderr.decode()


def test_commands_and_scenarios_parse_with_clear_errors(tmp_path: Path) -> None:
    assert parse_command({"place": ["04:A1:B2:C3:D4:E5:00"], "antenna": 1}) == PlaceCommand(
        place=[A], antenna=1
    )
    assert parse_command({"fault": "antenna", "antenna": 2, "code": "short"}) == FaultCommand(
        fault="antenna", antenna=2, code="short"
    )
    for bad, message in (
        ({"fault": "antenna"}, "antenna needs the antenna number"),
        ({"fault": "antenna", "antenna": 1, "code": "melted"}, "antenna code must be one of"),
        ({"fault": "raise", "code": "JAM_INPUT"}, "unknown reader fault 'JAM_INPUT'"),
        ({"clear": "everything"}, "clear takes one of"),
        ({"place": [A]}, "antenna: Field required"),
        ({"place": ["zz"], "antenna": 0}, "not a tag UID"),
        ({"status": True, "place": [A]}, "exactly one of the keys"),
    ):
        with pytest.raises(CommandError, match=message):
            parse_command(bad)
    path = tmp_path / "s.toml"
    path.write_text('seed = 4\n[[step]]\nat = 2\nclear = "all"\n[[step]]\nat = 1\nstatus = true\n')
    scenario = COMMANDS.load_scenario(path)
    assert scenario.seed == 4
    assert [at for at, _ in scenario.steps] == [1.0, 2.0]
    path.write_text("seed = true\n")
    with pytest.raises(ScenarioError, match="seed must be an integer"):
        COMMANDS.load_scenario(path)
