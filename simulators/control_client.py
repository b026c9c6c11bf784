"""A client for a simulator's control channel (JSON lines over a Unix socket).

Tests, the demo and the scenario runner drive simulators through it::

    async with ControlClient(path) as sim:
        await sim.fault("crc", rate=0.01)
        await sim.send({"deck_check": "duplicate"})
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import TracebackType
from typing import Any


class ControlError(RuntimeError):
    """The simulator refused a command."""


class ControlClient:
    """One connection to a simulator's control socket."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> ControlClient:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the connection."""
        self._reader, self._writer = await asyncio.open_unix_connection(str(self.path))

    async def close(self) -> None:
        """Close the connection."""
        if self._writer is not None:
            self._writer.close()
            await self._writer.wait_closed()
            self._writer = self._reader = None

    async def send(self, command: dict[str, Any]) -> dict[str, Any]:
        """Send one command; return the reply, or raise :class:`ControlError` on a refusal."""
        if self._reader is None or self._writer is None:
            await self.connect()
        assert self._reader is not None
        assert self._writer is not None
        async with self._lock:
            writer = self._writer
            try:
                writer.write(json.dumps(command).encode() + b"\n")
                await writer.drain()
                line = await self._reader.readline()
            except BaseException:
                # Cancelled (or failed) between the command and its reply: the reply would be
                # read as the next command's. Drop the connection; the next command opens one.
                writer.close()
                self._writer = self._reader = None
                raise
        if not line:
            raise ControlError("the simulator closed the control connection")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise ControlError(str(reply.get("error", reply)))
        return reply

    async def fault(self, name: str, **options: Any) -> dict[str, Any]:
        """Inject a fault: ``fault("crc", rate=0.01)``, ``fault("unplug")``…"""
        return await self.send({"fault": name, **options})

    async def status(self) -> dict[str, Any]:
        """The simulator's state."""
        return await self.send({"status": True})
