"""The station's two connections to the daemon's console socket (``[daemon] console``).

* **Requests**: one connection, one request at a time: a JSON line signed with the station's key
  on behalf of the dealer logged in (``auth.on_behalf_of``, docs/security.md), and the one line of
  the answer. A request whose answer does not come (the connection broke, the daemon restarted)
  is sent again on a new connection, the same signed line with the same ``transaction``: the
  daemon's inbox runs it at most once. :meth:`DaemonLink.request` takes the person: there is no
  way to send without one.
* **Watch**: one connection that follows the table (controller/shell/watch.py, signed with the
  station's own key): the view first, then merge patches applied to it, and the badge reads.
  When it breaks, it is made again after a full-jitter backoff, and the view until then is marked
  stale (``connected`` false): the pages say the table is out of reach.

Never the broker: a table plays with the broker or the pit down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller import strict_json
from controller.aio import Backoff
from controller.shell.merge_patch import apply
from controller.signing import sign_request

log = structlog.get_logger("tablectl.station")

#: Bytes of the longest line read from the daemon (a whole view of ten seats is a few KiB).
MAX_LINE = 1024 * 1024


class LinkError(Exception):
    """The daemon could not be reached or did not answer."""


class DaemonLink:
    """The station's requests to the daemon, and its view of the table."""

    def __init__(
        self,
        path: Path,
        private: Ed25519PrivateKey,
        key_id: str,
        table: str,
        *,
        timeout: float = 10.0,
        on_change: Callable[[], None] = lambda: None,
        on_badge: Callable[[dict[str, Any]], None] = lambda _: None,
    ) -> None:
        self.path = path
        self.private = private
        self.key_id = key_id
        self.table = table
        self.timeout = timeout
        self.on_change = on_change
        self.on_badge = on_badge
        self.view: dict[str, Any] | None = None
        self.connected = False
        self.version = 0  # counts the changes of the view (and of ``connected``)
        self.problem: str | None = None  # why the watch is not connected
        self._lock = asyncio.Lock()
        self._requests: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._backoff = Backoff(0.1, 5.0)

    # ------------------------------------------------------------------ requests

    def signed(self, command: str, fields: dict[str, Any], person: str | None) -> bytes:
        """The request line: ``fields`` and a new transaction, signed for ``person``."""
        body = {"transaction": f"station-{uuid.uuid4().hex}", **fields}
        signed = sign_request(
            self.private, self.key_id, command, self.table, body, on_behalf_of=person
        )
        return json.dumps({"command": command, **signed}, separators=(",", ":")).encode() + b"\n"

    async def request(self, command: str, fields: dict[str, Any], person: str) -> dict[str, Any]:
        """Send ``command`` for ``person`` and return the daemon's answer (LinkError: none)."""
        line = self.signed(command, fields, person)
        async with self._lock:
            for attempt in range(2):
                try:
                    return await self._exchange(line)
                except (OSError, EOFError, TimeoutError, ValueError) as exc:
                    self._drop_requests()
                    if attempt:
                        raise LinkError(f"the table does not answer: {exc or 'timeout'}") from None
                    log.warning("station.request_again", command=command, error=str(exc))
        raise AssertionError("unreachable")

    async def _exchange(self, line: bytes) -> dict[str, Any]:
        if self._requests is None:
            self._requests = await asyncio.open_unix_connection(str(self.path), limit=MAX_LINE)
        reader, writer = self._requests
        writer.write(line)
        async with asyncio.timeout(self.timeout):
            await writer.drain()
            answer = await reader.readline()
        if not answer:
            raise EOFError("the connection closed")
        body = strict_json.loads(answer)
        if not isinstance(body, dict):
            raise ValueError("the answer is not a JSON object")
        return body

    def _drop_requests(self) -> None:
        if self._requests is not None:
            self._requests[1].close()
            self._requests = None

    # ------------------------------------------------------------------ watch

    async def follow(self) -> None:
        """Follow the table for ever: watch, and watch again after a break."""
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                await self._watch()
                self.problem = "the daemon closed the stream"
            except (OSError, EOFError, ValueError) as exc:
                self.problem = f"the table's console socket: {exc}"
            self._set_connected(False)
            delay = self._backoff.next(loop.time() - started)
            log.warning("station.watch_lost", problem=self.problem, retry_in=round(delay, 2))
            await asyncio.sleep(delay)

    async def _watch(self) -> None:
        reader, writer = await asyncio.open_unix_connection(str(self.path), limit=MAX_LINE)
        try:
            writer.write(self.signed("watch", {"events": False}, None))
            await writer.drain()
            answer = strict_json.loads(await reader.readline() or b"null")
            if not isinstance(answer, dict) or answer.get("status") != "ok":
                error = answer.get("error") if isinstance(answer, dict) else "no answer"
                raise ValueError(f"watch refused: {error}")
            while line := await reader.readline():
                self._take(strict_json.loads(line))
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _take(self, message: Any) -> None:
        if not isinstance(message, dict):
            raise ValueError("a watch line that is not a JSON object")
        kind = message.get("watch")
        if kind == "badge":
            self.on_badge(message)
            return
        if kind == "view":
            self.view = message.get("view")
            self.problem = None
            self._set_connected(True, changed=True)
        elif kind == "change" and self.view is not None:
            self.view = apply(self.view, message.get("view") or {})
            self.version += 1
            self.on_change()

    def _set_connected(self, connected: bool, *, changed: bool = False) -> None:
        if connected != self.connected or changed:
            self.connected = connected
            self.version += 1
            self.on_change()

    async def close(self) -> None:
        """Close the request connection."""
        async with self._lock:
            self._drop_requests()
