"""The ``pn532`` driver: several NXP PN532 modules on UART, one per zone.

Each module hangs on its own serial port and is its own device (its id defaults to the reader's
id and the zone, e.g. ``rfid-seat3``). The driver polls them all concurrently and yields the
core's inputs: :class:`TagArrived` / :class:`TagDeparted` for debounced presence edges and
:class:`DeviceHealthChanged` when a module goes online, stale or reconnecting.

.. code-block:: python

    async with Pn532Reader.from_options("rfid", options) as reader:
        async for event in reader.events():
            table.apply(event)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from controller.table.inputs import DeviceInput, Health, Zone
from drivers.rfid.pn532.commands import FirmwareVersion
from drivers.rfid.pn532.config import Pn532Config
from drivers.rfid.pn532.supervisor import ModuleSupervisor
from drivers.rfid.presence import PresenceTracker


def utc_now() -> datetime:
    """The default clock: aware UTC time."""
    return datetime.now(UTC)


class Pn532Reader:
    """A group of PN532 modules, polled concurrently, reporting through one event stream."""

    def __init__(
        self, device: str, config: Pn532Config, *, clock: Callable[[], datetime] = utc_now
    ) -> None:
        self.device = device
        self.config = config
        self.tracker: PresenceTracker[Zone] = PresenceTracker(config.debounce)
        self._queue: asyncio.Queue[DeviceInput] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self.modules = [
            ModuleSupervisor(
                device=module.device_id(device),
                port=module.port,
                zone=Zone.parse(module.zone),
                config=config,
                max_tags=module.max_tags,
                tracker=self.tracker,
                emit=self._queue.put_nowait,
                clock=clock,
            )
            for module in config.modules
        ]

    @classmethod
    def from_options(cls, device: str, options: Mapping[str, Any], **kwargs: Any) -> Pn532Reader:
        """Build from a table config's options (raises pydantic's ValidationError if wrong)."""
        return cls(device, Pn532Config.model_validate(options), **kwargs)

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Start polling every module."""
        if self._tasks:
            return
        for module in self.modules:
            name = f"pn532 {module.device} on {module.port}"
            self._tasks.append(asyncio.create_task(module.run(), name=name))

    async def stop(self) -> None:
        """Stop polling and close every port."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def __aenter__(self) -> Pn532Reader:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # ----------------------------------------------------------------- output

    async def events(self) -> AsyncIterator[DeviceInput]:
        """Every device input, in the order the modules produced them."""
        while True:
            yield await self._queue.get()

    async def next_event(self) -> DeviceInput:
        """The next device input."""
        return await self._queue.get()

    def pending_events(self) -> list[DeviceInput]:
        """The inputs already produced and not yet taken, without waiting."""
        out = []
        while not self._queue.empty():
            out.append(self._queue.get_nowait())
        return out

    def present(self, zone: Zone | str) -> frozenset[str]:
        """The tags asserted in a zone now."""
        return self.tracker.present(Zone.parse(zone) if isinstance(zone, str) else zone)

    def health(self) -> dict[str, Health | None]:
        """Each module's health (None until it has been polled or has failed to connect)."""
        return {module.device: module.health for module in self.modules}

    def firmware(self) -> dict[str, FirmwareVersion | None]:
        """Each module's firmware version, once it has answered."""
        return {module.device: module.firmware for module in self.modules}
