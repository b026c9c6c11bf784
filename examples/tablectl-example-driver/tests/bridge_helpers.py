"""Helpers of the tests: a sink that can be waited on, a driver pointed at the simulator."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from controller.table.inputs import DeviceInput

from tablectl_example_driver.driver import TagBridge
from tablectl_example_driver.simulator import BridgeSimulator

ANTENNAS = {"A0": "seat:1", "A1": "board"}


class Sink:
    """Collects inputs; tests wait on a condition of what arrived, never on time."""

    def __init__(self) -> None:
        self.items: list[DeviceInput] = []
        self._changed = asyncio.Condition()

    async def __call__(self, item: DeviceInput) -> None:
        async with self._changed:
            self.items.append(item)
            self._changed.notify_all()

    async def wait_for(
        self, predicate: Callable[[list[DeviceInput]], bool], timeout: float = 10.0
    ) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: predicate(self.items))

    async def wait_count(self, count: int, timeout: float = 10.0) -> list[DeviceInput]:
        """Until ``count`` inputs arrived; those."""
        await self.wait_for(lambda items: len(items) >= count, timeout)
        return self.items[:count]


def make_driver(sim: BridgeSimulator, **options: Any) -> TagBridge:
    """The driver, configured as a table config would, for the simulator."""
    return TagBridge.from_options(
        "rfid", {"host": "127.0.0.1", "port": sim.port, "antennas": ANTENNAS, **options}
    )
