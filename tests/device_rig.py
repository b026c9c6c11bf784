"""What the reader tests share: a log of a driver's inputs to wait on, a polled condition with a
deadline (never a sleep), and drivers on simulated USB buses (the ``usb_rigs`` fixture of
``tests/conftest.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceInput,
    Health,
    TagArrived,
    TagDeparted,
)
from drivers.contract import Device
from simulators.rfid.usb_backend import SimulatedUsbBus
from simulators.rfid.usb_device import SimulatedUsbDevice

E = TypeVar("E", bound=DeviceInput)


class EventLog:
    """A driver's inputs, through its sink (:meth:`sink`) or, given the driver, collected from
    its :meth:`~drivers.contract.Device.events` in the background."""

    def __init__(self, reader: Device | None = None) -> None:
        self.events: list[DeviceInput] = []
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._collect(reader)) if reader is not None else None

    async def _collect(self, reader: Device) -> None:
        async for event in reader.events():
            await self.sink(event)

    async def sink(self, item: DeviceInput) -> None:
        self.events.append(item)
        self._changed.set()

    async def close(self) -> None:
        """Stop collecting (a log fed through its sink has nothing to stop)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

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

    async def arrived(self, uid: str, after: int = 0) -> TagArrived:
        return await self.first(TagArrived, uid=uid, after=after)

    async def departed(self, uid: str, after: int = 0) -> TagDeparted:
        return await self.first(TagDeparted, uid=uid, after=after)

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    def departures(self) -> list[TagDeparted]:
        return self.of(TagDeparted)

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


DeviceT = TypeVar("DeviceT", bound=SimulatedUsbDevice)
ReaderT = TypeVar("ReaderT", bound=Device)


@dataclass
class UsbRig(Generic[DeviceT, ReaderT]):
    """Simulated readers on a simulated USB bus, the driver on one of them, and its inputs."""

    bus: SimulatedUsbBus
    device: DeviceT
    reader: ReaderT
    log: EventLog

    def sim(self, **command: Any) -> dict[str, Any]:
        """One control command to the simulated reader; it must succeed."""
        reply = self.device.handle(command)
        assert reply["ok"], reply
        return reply


RigT = TypeVar("RigT", bound=UsbRig[Any, Any])


class UsbRigs:
    """Makes the buses and starts the drivers of a test's rigs; stops and closes them all."""

    def __init__(self) -> None:
        self._buses: list[SimulatedUsbBus] = []
        self._readers: list[Device] = []

    def bus(self) -> SimulatedUsbBus:
        """A fresh simulated bus (closed at the end)."""
        bus = SimulatedUsbBus()
        self._buses.append(bus)
        return bus

    async def start(self, rig: RigT) -> RigT:
        """Start the rig's driver, its inputs going to the rig's log; wait until it is online."""
        self._readers.append(rig.reader)
        await rig.reader.start(rig.log.sink)
        await rig.reader.wait_online(10)
        return rig

    async def close(self) -> None:
        for reader in self._readers:
            await reader.stop()
        for bus in self._buses:
            bus.close()
