"""The ``pn532`` driver: several NXP PN532 modules on UART, one per zone.

Each module hangs on its own serial port and is its own device (its id defaults to the reader's
id and the zone, e.g. ``rfid-seat3``). The reader is a :class:`~drivers.contract.Device` whose
connection never ends: it runs every module under the one supervision loop
(:mod:`drivers.supervisor`), concurrently, and hands on the core's inputs they produce:
:class:`TagArrived` / :class:`TagDeparted` for debounced presence edges and
:class:`DeviceHealthChanged` when a module goes online, stale or reconnecting.

.. code-block:: python

    async with Pn532Reader.from_options("rfid", options) as reader:
        async for event in reader.events():
            table.apply(event)
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from controller.table.inputs import DeviceInput, Health, Zone
from drivers.contract import READ, Device, DeviceContext, DeviceStatus
from drivers.rfid.pn532.commands import FirmwareVersion
from drivers.rfid.pn532.config import Pn532Config
from drivers.rfid.pn532.poller import ModulePoller
from drivers.rfid.presence import PresenceTracker
from drivers.supervisor import InputSink, RestartPolicy, Supervisor


class Pn532Reader(Device):
    """A group of PN532 modules, polled concurrently, reporting through one input stream."""

    options_model: ClassVar[type[Pn532Config]] = Pn532Config
    capabilities = frozenset({READ})
    options: Pn532Config

    def __init__(
        self, device_id: str, options: Pn532Config, context: DeviceContext | None = None
    ) -> None:
        super().__init__(device_id, options, context)
        self.tracker: PresenceTracker[Zone] = PresenceTracker(options.debounce)
        self.modules = [
            ModulePoller(
                device_id=module.device_id(device_id),
                port=module.port,
                zone=Zone.parse(module.zone),
                config=options,
                max_tags=module.max_tags,
                tracker=self.tracker,
            )
            for module in options.modules
        ]
        self._modules: dict[str, Supervisor] = {}

    async def run(self, sink: InputSink) -> None:
        """Poll every module, each reconnecting on its own, until cancelled."""
        # Polls do not wait for the journal: the modules queue their inputs, handed on in order.
        queue: asyncio.Queue[DeviceInput] = asyncio.Queue()

        async def enqueue(item: DeviceInput) -> None:
            queue.put_nowait(item)

        # A module is reconnecting, never failed: it keeps looking for its port (docs/drivers.md).
        o = self.options
        policy = RestartPolicy(o.reconnect_min, o.reconnect_max, fail_after=None, stable_after=10.0)
        self._modules = {m.device_id: Supervisor(m, enqueue, policy) for m in self.modules}
        async with asyncio.TaskGroup() as group:
            for module in self.modules:
                name = f"pn532 {module.device_id} on {module.port}"
                group.create_task(self._modules[module.device_id].run(), name=name)
            while True:
                await sink(await queue.get())

    def present(self, zone: Zone | str) -> frozenset[str]:
        """The tags asserted in a zone now."""
        return self.tracker.present(Zone.parse(zone) if isinstance(zone, str) else zone)

    def health(self) -> dict[str, Health | None]:
        """Each module's health (None until it has been polled or has failed to connect)."""
        running = self._modules
        return {
            m.device_id: running[m.device_id].health if m.device_id in running else None
            for m in self.modules
        }

    def firmware(self) -> dict[str, FirmwareVersion | None]:
        """Each module's firmware version, once it has answered."""
        return {module.device_id: module.firmware for module in self.modules}

    # ------------------------------------------------------------------ the device contract

    async def query(self) -> DeviceStatus:
        """Online when at least one module answers; the detail lists each module's health."""
        health = self.health()
        online = any(h is Health.ONLINE for h in health.values())
        detail = ", ".join(f"{d} {h.value if h else 'unknown'}" for d, h in health.items())
        return DeviceStatus(online, detail=detail)

    def describe(self) -> dict[str, Any]:
        """The modules, their zones and firmware."""
        return {
            "model": "NXP PN532",
            "approved": True,
            "modules": [
                {
                    "device": module.device_id,
                    "port": module.port,
                    "zone": str(module.zone),
                    "firmware": str(module.firmware or "") or None,
                }
                for module in self.modules
            ],
        }
