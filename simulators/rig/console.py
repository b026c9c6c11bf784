"""The rig's dealer console: requests over MQTT, or over the daemon's local console socket.

Both send a command with a ``transaction`` and wait for its response; a request that gets no
answer in time is sent again with the same transaction (the table runs it once), and so is one
the table could not take while it was starting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from controller.shell.client import DealerClient


class ConsoleError(RuntimeError):
    """No answer from the table."""


class Console(Protocol):
    """A dealer console."""

    async def send(self, command: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Send one request until it is answered; return the response."""

    async def close(self) -> None:
        """Let go of the connection."""


async def _until_answered(
    attempt: Any, command: str, transaction: str, timeout: float
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        try:
            body: dict[str, Any] = await attempt()
        except TimeoutError:
            continue
        except OSError:  # the console socket is not there yet, or went away with the daemon
            await asyncio.sleep(0.05)
            continue
        if body.get("transaction") == transaction:
            return body
        await asyncio.sleep(0.05)  # the table was starting: not recorded, ask again
    raise ConsoleError(f"no answer to {command} in {timeout} s")


Sign = Callable[[str, dict[str, Any]], dict[str, Any]]


class MqttConsole:
    """Requests on ``{prefix}/{table}/request/{command}``, over the rig's MQTT client."""

    def __init__(
        self, dealer: DealerClient, sign: Sign, *, retry: float = 2.0, timeout: float = 20.0
    ):
        self.dealer = dealer
        self.sign = sign
        self.retry = retry
        self.timeout = timeout

    async def send(self, command: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Send until answered, the same transaction every time (signed anew each time)."""
        transaction = uuid.uuid4().hex

        async def attempt() -> dict[str, Any]:
            return await self.dealer.send(
                command, fields, transaction=transaction, timeout=self.retry, sign=self.sign
            )

        return await _until_answered(attempt, command, transaction, self.timeout)

    async def close(self) -> None:
        """The MQTT client belongs to the rig."""


class SocketConsole:
    """Requests as JSON lines on the daemon's console socket (``[daemon] console``)."""

    def __init__(self, path: Path, sign: Sign, *, timeout: float = 20.0) -> None:
        self.path = path
        self.sign = sign
        self.timeout = timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()

    async def _exchange(self, line: bytes) -> dict[str, Any]:
        async with self._lock:
            if self._writer is None or self._writer.is_closing():
                self._reader, self._writer = await asyncio.open_unix_connection(str(self.path))
            assert self._reader is not None
            try:
                self._writer.write(line)
                await self._writer.drain()
                async with asyncio.timeout(5.0):
                    reply = await self._reader.readline()
            except (OSError, TimeoutError):
                await self.close()
                raise
            if not reply:
                await self.close()
                raise ConnectionError("the table closed the console connection")
            body: dict[str, Any] = json.loads(reply)
            return body

    async def send(self, command: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Send until answered, the same transaction every time."""
        transaction = uuid.uuid4().hex

        async def attempt() -> dict[str, Any]:
            body = self.sign(command, {"transaction": transaction, **fields})
            line = json.dumps({"command": command, **body}).encode()
            return await self._exchange(line + b"\n")

        return await _until_answered(attempt, command, transaction, self.timeout)

    async def close(self) -> None:
        """Close the connection (a new one is made for the next request)."""
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
