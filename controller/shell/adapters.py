"""Adapters from the shipped drivers to the daemon's device-source interface.

Each driver keeps its own shape (a sink callback and a supervisor, or an async context manager
with an event iterator); an adapter gives the daemon the one interface it drives. Driver modules
are imported when a config selects them, so a missing optional dependency only affects its own
driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.shell.devices import (
    READ,
    DeviceCommandError,
    DeviceSource,
    DeviceStatus,
    InputSink,
    SourceContext,
    pydantic_problems,
)
from controller.table.inputs import Health
from controller.table.plan import DispenseRequest


class Pn532Source:
    """PN532 modules (one per zone) as one source of tag movements and health changes."""

    capabilities = frozenset({READ})

    def __init__(self, device_id: str, options: Mapping[str, Any]) -> None:
        from drivers.rfid.pn532.driver import Pn532Reader  # noqa: PLC0415

        self.device_id = device_id
        self.reader = Pn532Reader.from_options(device_id, options)

    async def run(self, sink: InputSink) -> None:
        """Poll every module; hand every presence edge and health change to the sink."""
        async with self.reader:
            async for event in self.reader.events():
                await sink(event)

    async def query(self) -> DeviceStatus:
        """Online when at least one module answers; the detail lists each module's health."""
        health = self.reader.health()
        online = any(h is Health.ONLINE for h in health.values())
        detail = ", ".join(f"{d} {h.value if h else 'unknown'}" for d, h in health.items())
        return DeviceStatus(online, detail=detail)

    async def shuffle(self, ref: int) -> None:
        """A reader does not shuffle."""
        raise DeviceCommandError(f"{self.device_id} is a reader: it does not shuffle")

    async def dispense(self, shuffle_id: int, group: int, request: DispenseRequest) -> None:
        """A reader does not dispense."""
        raise DeviceCommandError(f"{self.device_id} is a reader: it does not dispense")

    async def reveal(self, shuffle_id: int) -> None:
        """A reader has no deck."""
        raise DeviceCommandError(f"{self.device_id} is a reader: it has no deck")

    def describe(self) -> dict[str, Any]:
        """The modules, their zones and firmware."""
        firmware = self.reader.firmware()
        return {
            "model": "NXP PN532",
            "approved": True,
            "modules": [
                {
                    "device": module.device,
                    "port": module.port,
                    "zone": str(module.zone),
                    "firmware": str(firmware.get(module.device) or "") or None,
                }
                for module in self.reader.modules
            ],
        }

    async def close(self) -> None:
        """Stop polling and close the ports."""
        await self.reader.stop()


class _Pn532Factory:
    def build(self, device_id: str, options: Mapping[str, Any], ctx: SourceContext) -> DeviceSource:
        return Pn532Source(device_id, options)

    def problems(self, options: Mapping[str, Any]) -> list[str]:
        from drivers.rfid.pn532.config import Pn532Config  # noqa: PLC0415

        return pydantic_problems(Pn532Config, options)


PN532_FACTORY = _Pn532Factory()
