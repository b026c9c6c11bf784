"""Fixtures for the TSP/1 reader: the driver against its simulator on a real pty (in-process) or
behind the fake pyusb backend (:mod:`tests.device_rig`: the event log to wait on, conditions with
deadlines, never sleeps)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from drivers.rfid.tsp_reader.driver import TspReader
from drivers.rfid.tsp_reader.usb import TspUsbReader
from simulators.pty import PtyCable
from simulators.rfid.model import ReaderConfig, ReaderModel
from simulators.rfid.server import ReaderPtyServer
from simulators.rfid.usb_device import SimulatedUsbReader
from tests.device_rig import EventLog, UsbRig, UsbRigs
from tests.waiting import until

#: Fast timings that stay forgiving on a loaded 2-core machine.
FAST: dict[str, Any] = {
    "scan_period_ms": 10,
    "arrive_n": 2,
    "depart_n": 3,
    "snapshot_ms": 200,
    "heartbeat_interval": 0.2,
    "heartbeat_failures": 3,
    "response_timeout": 0.15,
    "backoff_base": 0.05,
    "backoff_cap": 0.2,
}
#: Antenna 0 under seat 1, 1 under seat 2, 2 under the board.
ANTENNAS = [
    {"antenna": 0, "zone": "seat:1"},
    {"antenna": 1, "zone": "seat:2"},
    {"antenna": 2, "zone": "board"},
]
UIDS = [f"04a1b2c3d4e5{n:02x}" for n in range(16)]


@dataclass
class PtyRig:
    """A simulated reader on a pty, the driver on it, and what the driver produced."""

    server: ReaderPtyServer
    reader: TspReader
    log: EventLog

    def sim(self, **command: Any) -> dict[str, Any]:
        reply = self.server.handle(command)
        assert reply["ok"], reply
        return reply

    def status(self) -> dict[str, Any]:
        return self.sim(status=True)

    async def sweeps(self, count: int) -> None:
        """Wait until the simulated reader has swept ``count`` more times."""
        start = self.server.model.sweep
        await until(lambda: (self.server.model.sweep - start) % 0x10000 >= count)


RigFactory = Callable[..., Awaitable[PtyRig]]


@pytest.fixture
async def pty_rig(tmp_path: Path) -> AsyncIterator[RigFactory]:
    """``await pty_rig(seed=…, **driver_options)``: a reader on a pty and the driver, online."""
    started: list[tuple[ReaderPtyServer, asyncio.Task[None], TspReader]] = []

    async def make(seed: int = 1, max_queue: int = 64, **options: Any) -> PtyRig:
        loop = asyncio.get_running_loop()
        rng = random.Random(seed)
        model = ReaderModel(ReaderConfig(max_queue=max_queue), rng, loop.time())
        server = ReaderPtyServer(model, PtyCable(tmp_path / f"reader{len(started)}"), rng=rng)
        server.start()
        serving = asyncio.create_task(server.serve(), name="reader-sim")
        log = EventLog()
        settings = {**FAST, "antennas": ANTENNAS, **options}
        reader = TspReader.from_options("rfid", {"port": str(server.port.device), **settings})
        started.append((server, serving, reader))
        await reader.start(log.sink)
        await reader.wait_online(10)
        return PtyRig(server, reader, log)

    yield make
    for server, serving, reader in started:
        await reader.stop()
        server.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await serving


class TspUsbRig(UsbRig[SimulatedUsbReader, TspUsbReader]):
    """TSP/1 readers on a simulated USB bus and the ``tsp-reader-usb`` driver on one of them."""

    async def sweeps(self, count: int) -> None:
        model = self.device.model
        start = model.sweep
        await until(lambda: (model.sweep - start) % 0x10000 >= count)


UsbRigFactory = Callable[..., Awaitable[TspUsbRig]]


@pytest.fixture
def usb_rig(usb_rigs: UsbRigs) -> UsbRigFactory:
    """``await usb_rig(serials=(…), use=…, **driver_options)``: readers on a fake USB bus."""

    async def make(
        serials: tuple[str, ...] = ("RDR-0001",), use: str = "RDR-0001", **options: Any
    ) -> TspUsbRig:
        bus = usb_rigs.bus()
        devices = {s: bus.add_reader(s, seed=n) for n, s in enumerate(serials)}
        settings = {**FAST, "antennas": ANTENNAS, "serial_number": use, **options}
        reader = TspUsbReader.from_options("rfid", settings, usb_backend=bus)
        return await usb_rigs.start(TspUsbRig(bus, devices[use], reader, EventLog()))

    return make
