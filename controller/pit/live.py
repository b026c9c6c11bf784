"""What the console's live pages wait on: a counter that moves whenever the pit learns something.

The ingest touches the board after each commit (events, births and deaths, retained states) and
for each device message; each live page's stream (Server-Sent Events) waits for the counter to
move, reads the store again and sends what changed. Device health is kept here, in memory, as the
tables retain it on ``{prefix}/{table}/devices/{device}``: the broker gives it back on every
(re)connect, so it needs no storing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any


class LiveBoard:
    """A change counter to wait on, and each table's device health."""

    def __init__(self) -> None:
        self.version = 0
        self.closed = False
        self.devices: dict[str, dict[str, dict[str, Any]]] = {}  # table → device → health
        self._moved = asyncio.Event()

    def touch(self, *_: object) -> None:
        """Something changed: wake every page waiting."""
        self.version += 1
        self._moved.set()
        self._moved = asyncio.Event()

    def device(self, table: str, device: str, body: Mapping[str, Any] | None) -> None:
        """A device's retained health (None: its retained message was cleared)."""
        devices = self.devices.setdefault(table, {})
        if body is None:
            devices.pop(device, None)
        else:
            devices[device] = dict(body)
        self.touch()

    def close(self) -> None:
        """The process stops: every live page's stream ends."""
        self.closed = True
        self.touch()

    async def wait(self, seen: int, timeout: float) -> int:
        """The counter once it differs from ``seen`` (or after ``timeout`` seconds)."""
        if self.version != seen or self.closed:
            return self.version
        moved = self._moved
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await moved.wait()
        return self.version
