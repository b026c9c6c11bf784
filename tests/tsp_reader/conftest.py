"""Fixtures for the TSP/1 reader: the driver against its simulator on a real pty (in-process) or
behind the fake pyusb backend, and an event log to wait on (conditions with deadlines, never
sleeps)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceInput,
    Health,
    TagArrived,
    TagDeparted,
)
from drivers.rfid.tsp_reader.driver import TspReader
from drivers.rfid.tsp_reader.usb import TspUsbReader
from simulators.pty import PtyCable
from simulators.rfid.model import ReaderConfig, ReaderModel
from simulators.rfid.server import ReaderPtyServer
from simulators.rfid.usb_backend import SimulatedUsbBus
from simulators.rfid.usb_device import SimulatedUsbReader

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

E = TypeVar("E", bound=DeviceInput)


class EventLog:
    """Collects a reader's inputs through its sink."""

    def __init__(self) -> None:
        self.events: list[DeviceInput] = []
        self._changed = asyncio.Event()

    async def sink(self, item: DeviceInput) -> None:
        self.events.append(item)
        self._changed.set()

    async def wait_for(
        self, predicate: Callable[[DeviceInput], bool], timeout: float = 10.0, after: int = 0
    ) -> DeviceInput:
        """The first input from index ``after`` on that matches (waiting for it if needed)."""
        async with asyncio.timeout(timeout):
            while True:
                for event in self.events[after:]:
                    if predicate(event):
                        return event
                self._changed.clear()
                await self._changed.wait()

    async def first(
        self, kind: type[E], timeout: float = 10.0, after: int = 0, **fields: object
    ) -> E:
        """The first input of ``kind`` whose fields equal ``fields``."""

        def match(event: DeviceInput) -> bool:
            return isinstance(event, kind) and all(
                str(getattr(event, k)) == str(v) for k, v in fields.items()
            )

        event = await self.wait_for(match, timeout, after)
        assert isinstance(event, kind)
        return event

    async def health(self, device: str, health: Health, after: int = 0) -> DeviceHealthChanged:
        return await self.first(DeviceHealthChanged, device=device, health=health, after=after)

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    def tags(self, after: int = 0) -> list[tuple[str, str, str]]:
        """Arrivals and departures as (kind, zone, uid), in order."""
        out = []
        for event in self.events[after:]:
            if isinstance(event, TagArrived | TagDeparted):
                kind = "arrived" if isinstance(event, TagArrived) else "departed"
                out.append((kind, str(event.zone), event.uid))
        return out

    def faults(self) -> list[tuple[str, str, int]]:
        return [
            ("raised" if isinstance(e, DeviceFault) else "cleared", e.code, e.fault_id)
            for e in self.events
            if isinstance(e, DeviceFault | DeviceFaultCleared)
        ]


async def until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Poll a condition, with a deadline."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


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


@dataclass
class UsbRig:
    """Simulated readers on a simulated USB bus, and the driver on one of them."""

    bus: SimulatedUsbBus
    device: SimulatedUsbReader
    reader: TspUsbReader
    log: EventLog

    def sim(self, **command: Any) -> dict[str, Any]:
        reply = self.device.handle(command)
        assert reply["ok"], reply
        return reply

    async def sweeps(self, count: int) -> None:
        model = self.device.model
        start = model.sweep
        await until(lambda: (model.sweep - start) % 0x10000 >= count)


UsbRigFactory = Callable[..., Awaitable[UsbRig]]


@pytest.fixture
async def usb_rig() -> AsyncIterator[UsbRigFactory]:
    """``await usb_rig(serials=(…), use=…, **driver_options)``: readers on a fake USB bus."""
    made: list[tuple[SimulatedUsbBus, TspUsbReader]] = []

    async def make(
        serials: tuple[str, ...] = ("RDR-0001",), use: str = "RDR-0001", **options: Any
    ) -> UsbRig:
        bus = SimulatedUsbBus()
        devices = {s: bus.add_reader(s, seed=n) for n, s in enumerate(serials)}
        log = EventLog()
        settings = {**FAST, "antennas": ANTENNAS, "serial_number": use, **options}
        reader = TspUsbReader.from_options("rfid", settings, usb_backend=bus)
        made.append((bus, reader))
        await reader.start(log.sink)
        await reader.wait_online(10)
        return UsbRig(bus, devices[use], reader, log)

    yield make
    for bus, reader in made:
        await reader.stop()
        bus.close()
