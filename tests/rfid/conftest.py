"""Fixtures for PN532 driver tests: simulators on real ptys, readers, an event log to wait on
(:mod:`tests.device_rig`)."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from drivers.rfid.pn532.driver import Pn532Reader
from simulators.control_client import ControlClient
from simulators.pn532.server import Pn532Simulator
from simulators.rig.launcher import spawn
from tests.device_rig import EventLog
from tests.waiting import until as until_condition

#: Fast but forgiving timings for ptys on a loaded 2-core CI machine.
FAST = {"poll_interval": 0.01, "ack_timeout": 0.1, "response_timeout": 0.2, "reconnect_min": 0.05}


@pytest.fixture
def until() -> Callable[..., Awaitable[None]]:
    """``await until(condition, timeout)``: poll a condition, with a deadline."""
    return until_condition


@pytest.fixture
async def simulators(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Pn532Simulator]]]:
    """Start in-process simulators, each on a real pty behind a symlink in ``tmp_path``."""
    started: list[Pn532Simulator] = []

    async def start(
        name: str = "pn532", seed: int = 1, tags: tuple[str, ...] = ()
    ) -> Pn532Simulator:
        sim = Pn532Simulator(seed=seed, link=tmp_path / name, tags=[bytes.fromhex(t) for t in tags])
        await sim.start()
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture
async def reader_with_log() -> AsyncIterator[
    Callable[..., Awaitable[tuple[Pn532Reader, EventLog]]]
]:
    """Start readers (with test timings) and collect their events."""
    running: list[tuple[Pn532Reader, EventLog]] = []

    async def start(modules: list[dict[str, str]], **options: Any) -> tuple[Pn532Reader, EventLog]:
        reader = Pn532Reader.from_options("rfid", {"modules": modules, **FAST, **options})
        await reader.start()
        log = EventLog(reader)
        running.append((reader, log))
        return reader, log

    yield start
    for reader, log in running:
        await reader.stop()
        await log.close()


class SimProcess:
    """``tablectl sim KIND`` running as its own process, with a link and a control socket."""

    def __init__(self, tmp_path: Path, *args: str, kind: str = "pn532") -> None:
        self.link = tmp_path / kind
        self.control = tmp_path / f"{kind}.ctl"
        command = ["sim", kind, "--link", str(self.link), "--control", str(self.control)]
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:  # forked by the launcher, which has imported tablectl once for the whole run
            self.proc = spawn([*command, *args], dict(os.environ), stdout=out_w, stderr=err_w)
        finally:
            os.close(out_w)
            os.close(err_w)
        self.stdout = open(out_r, encoding="utf-8")  # noqa: SIM115 (closed by stop)
        self.stderr_pipe = open(err_r, encoding="utf-8")  # noqa: SIM115 (closed by stop)
        ready, _, _ = select.select([self.stdout], [], [], 20.0)
        line = self.stdout.readline() if ready else ""
        if not line.startswith("/dev/pts/"):
            self.stop()
            raise RuntimeError(f"the simulator did not start: {line!r} {self.stderr()}")
        self.pty = line.strip()

    def client(self) -> ControlClient:
        return ControlClient(self.control)

    def request(self, **request: Any) -> dict[str, Any]:
        """One command, from a test's own thread (``asyncio.to_thread`` in an async test)."""

        async def send() -> dict[str, Any]:
            async with self.client() as client:
                return await client.send(request)

        return asyncio.run(send())

    def stderr(self) -> str:
        if self.proc.poll() is None or self.stderr_pipe.closed:
            return ""
        return self.stderr_pipe.read()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.stdout, self.stderr_pipe):
            stream.close()
        assert self.proc.returncode is not None
        return self.proc.returncode


@pytest.fixture
def sim_process(tmp_path: Path) -> Iterator[Callable[..., SimProcess]]:
    """Start simulator processes (``sim_process("--tag", UID, …)``); stopped at teardown."""
    started: list[SimProcess] = []

    def start(*args: str, kind: str = "pn532") -> SimProcess:
        started.append(SimProcess(tmp_path, *args, kind=kind))
        return started[-1]

    yield start
    for process in started:
        process.stop()
