"""End to end: the driver against ``tablectl sim pn532`` running as its own process."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from controller.table.inputs import Health
from drivers.rfid.pn532.driver import Pn532Reader
from simulators.control_client import ControlError

StartReader = Callable[..., Awaitable[tuple[Pn532Reader, Any]]]
Until = Callable[..., Awaitable[None]]

A, B = "04a1b2c3d4e580", "04c0ffee000001"


async def test_driver_against_the_simulator_process(
    sim_process: Callable[..., Any], reader_with_log: StartReader, until: Until
) -> None:
    sim = sim_process("--tag", A, "--seed", "3")
    reader, log = await reader_with_log([{"port": str(sim.link), "zone": "seat:7"}], depart_n=8)
    await log.arrived(A)
    await asyncio.to_thread(sim.request, place=[B])
    await log.arrived(B)

    await asyncio.to_thread(sim.request, fault="flap", rate=0.2)
    module = reader.modules[0]
    polls = module.polls
    await until(lambda: module.polls >= polls + 100, timeout=30)
    assert module.missed_reads > 0
    assert log.departures() == []
    await asyncio.to_thread(sim.request, clear="flap")

    await asyncio.to_thread(sim.request, fault="unplug")
    await log.health("rfid-seat7", Health.RECONNECTING)
    assert not sim.link.exists()
    mark = len(log.events)
    await asyncio.to_thread(sim.request, remove=[A])
    await asyncio.to_thread(sim.request, fault="replug")
    await log.health("rfid-seat7", Health.ONLINE, after=mark)
    await log.departed(A, after=mark)
    assert [e.uid for e in log.departures()] == [A]
    assert reader.present("seat:7") == {B}

    status = await asyncio.to_thread(sim.request, status=True)
    assert status["unplugs"] == 1
    assert status["tags"] == [B]
    assert sim.link.resolve() == Path(status["path"])  # the link follows the fresh pty
    assert status["errors_sent"] == 0


async def test_scenario_file_places_and_lifts_tags(
    tmp_path: Path, sim_process: Callable[..., Any], reader_with_log: StartReader
) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(
        f'seed = 9\ntags = ["{A}"]\n\n'
        f'[[step]]\nat = 0.8\nplace = ["{B}"]\n\n'
        f'[[step]]\nat = 1.6\nremove = ["{A}"]\n',
        encoding="utf-8",
    )
    sim = sim_process("--scenario", str(scenario))
    _reader, log = await reader_with_log([{"port": str(sim.link), "zone": "board"}])
    arrived_a = await log.arrived(A)
    arrived_b = await log.arrived(B)
    departed_a = await log.departed(A)
    assert arrived_a.ts < arrived_b.ts < departed_a.ts


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--scenario", "{tmp}/bad.toml"], 2, "step 1: fault: Input should be"),
        (["--tag", "zz"], 2, "not a tag UID"),
        (["--link", "{tmp}/no/such/dir/pn532"], 1, "No such file or directory"),
    ],
)
def test_bad_start_up_is_refused_with_a_reason(
    tmp_path: Path, args: list[str], status: int, message: str
) -> None:
    (tmp_path / "bad.toml").write_text('[[step]]\nat = 1\nfault = "meteor"\n', encoding="utf-8")
    command = [sys.executable, "-m", "controller.cli", "sim", "pn532"]
    command += [arg.format(tmp=tmp_path) for arg in args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == status
    assert message in result.stderr
    assert "Traceback" not in result.stderr


async def test_control_channel_answers_every_line_even_bad_ones(
    sim_process: Callable[..., Any],
) -> None:
    sim = sim_process()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(str(sim.control))
        lines = [
            b"not json\n",
            b'{"place": ["xyz"]}\n',
            b'{"place": [], "x": 1}\n',
            b'{"status": true}\n',
        ]
        conn.sendall(b"".join(lines))
        stream = conn.makefile("rb")
        replies = [json.loads(stream.readline()) for _ in lines]
    assert [r["ok"] for r in replies] == [False, False, False, True]
    assert "not JSON" in replies[0]["error"]
    assert "UID" in replies[1]["error"]
    assert replies[2]["error"] == "x: Extra inputs are not permitted"  # names the key
    assert replies[3]["device"] == str(sim.link)
    async with sim.client() as client:
        with pytest.raises(ControlError, match="mode: Input should be 'timeout'"):
            await client.fault("antenna", mode="on fire")


def test_sigterm_stops_cleanly(sim_process: Callable[..., Any]) -> None:
    sim = sim_process("--tag", A)
    assert sim.link.is_symlink()
    assert sim.stop() == 0
    assert not sim.link.exists()
    assert not sim.control.exists()
