"""Driver-against-simulator fixtures: ``tablectl sim shuffler`` as a real process on a real pty."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.aio import cancel_and_wait
from controller.table.inputs import DeviceHealthChanged, DeviceInput, Health
from drivers.shuffler.driver import ShufflerDriver
from drivers.shuffler.options import ShufflerOptions
from simulators.control_client import ControlClient
from simulators.rig.launcher import LaunchedProcess, launch
from tests.waiting import until


@dataclass
class Simulator:
    """A running ``tablectl sim shuffler`` process."""

    process: LaunchedProcess
    link: Path
    control: ControlClient

    async def send(self, command: dict[str, Any]) -> dict[str, Any]:
        return await self.control.send(command)

    async def fault(self, name: str, **options: Any) -> dict[str, Any]:
        return await self.control.fault(name, **options)


@dataclass
class Rig:
    """A simulator, a driver on its pty, and the inputs the driver produced."""

    sim: Simulator
    driver: ShufflerDriver
    inputs: list[DeviceInput] = field(default_factory=list)
    device_events: list[object] = field(default_factory=list)
    #: Where in ``inputs`` the driver's health last became ONLINE before the test began: on a
    #: busy machine the first connection may take a few attempts (RECONNECTING first).
    online_at: int = 0

    def of(self, kind: type) -> list[Any]:
        return [item for item in self.inputs if isinstance(item, kind)]

    def health_changes(self) -> list[DeviceHealthChanged]:
        """The driver's health changes since it came online for the test."""
        since = self.inputs[self.online_at :]
        return [item for item in since if isinstance(item, DeviceHealthChanged)]

    def health_path(self) -> list[Health]:
        """The healths the driver went through since it came online for the test."""
        return [change.health for change in self.health_changes()]


SimFactory = Callable[..., Awaitable[Simulator]]


@pytest.fixture
async def start_sim(tmp_path: Path) -> AsyncIterator[SimFactory]:
    """Start simulator processes; all are stopped at the end of the test."""
    started: list[Simulator] = []

    async def start(*args: str, name: str = "shuffler") -> Simulator:
        link = tmp_path / f"{name}.tty"
        control = tmp_path / f"{name}.ctl"
        process = await launch(
            ["sim", "shuffler", "--link", str(link), "--control", str(control),
             "--shuffle-time", "0.05", *args],
            dict(os.environ),
            stdout=None,
            stderr=2,  # where this process writes its own (the test run captures it)
        )  # fmt: skip
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 20)
        assert line.startswith(b"/dev/pts/"), line
        client = ControlClient(control)
        await client.connect()
        sim = Simulator(process, link, client)
        started.append(sim)
        return sim

    yield start
    for sim in started:
        with contextlib.suppress(Exception):
            await sim.control.close()
        if sim.process.returncode is None:
            sim.process.terminate()
        try:
            await asyncio.wait_for(sim.process.wait(), 10)
        except TimeoutError:
            # say where it hangs (its stacks go to stderr), then make sure it is gone
            sim.process.send_signal(signal.SIGUSR1)
            await asyncio.sleep(1)
            sim.process.kill()
            await sim.process.wait()
            pytest.fail("the simulator did not stop on SIGTERM; its stacks are in stderr")


RigFactory = Callable[..., Awaitable[Rig]]


def _online_index(inputs: list[DeviceInput]) -> int | None:
    """Where the last ONLINE health change is in ``inputs`` (None: not there yet)."""
    for index in range(len(inputs) - 1, -1, -1):
        item = inputs[index]
        if isinstance(item, DeviceHealthChanged) and item.health is Health.ONLINE:
            return index
    return None


@pytest.fixture
async def rig(start_sim: SimFactory) -> AsyncIterator[RigFactory]:
    """A driver connected to a fresh simulator; ``rig(*sim_args, **option_overrides)``."""
    tasks: list[asyncio.Task[None]] = []

    async def make(*sim_args: str, online: bool = True, **overrides: Any) -> Rig:
        sim = await start_sim(*sim_args)
        inputs: list[DeviceInput] = []

        async def sink(item: DeviceInput) -> None:
            inputs.append(item)

        options = ShufflerOptions(
            port=str(sim.link),
            heartbeat_interval=0.25,
            backoff_base=0.05,
            backoff_cap=0.4,
            rejected_retry=0.5,
            **overrides,
        )
        device_events: list[object] = []
        driver = ShufflerDriver("shuffler", options, on_device_event=device_events.append)
        tasks.append(asyncio.create_task(driver.supervise(sink).run(), name="driver"))
        rig = Rig(sim, driver, inputs, device_events)
        if online:
            await driver.wait_online(timeout=30)
            await until(lambda: _online_index(inputs) is not None, 30, "the ONLINE health input")
            rig.online_at = _online_index(inputs) or 0
        return rig

    yield make
    stuck = await cancel_and_wait(tasks)
    assert not stuck, "a driver did not stop when cancelled"
