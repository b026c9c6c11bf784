"""Following the table over the console socket: ``watch`` streams the table's view and its changes.

A console on the table PC (the dealer's station, docs/station.md) sends one line
``{"command": "watch", "transaction": …, "auth": …}`` and reads, for as long as it keeps the
connection, JSON lines:

* the answer (``{"transaction", "status": "ok", "command": "watch", …}``, or an error and the end);
* ``{"watch": "view", "view": {…}}``: the whole view (:func:`view_of`), first and after a resync;
* ``{"watch": "change", "events": [envelope…], "view": {merge patch}}``: what changed since the
  line before: the events journaled (as the public stream carries them) and the view's change as
  a JSON merge patch (RFC 7386, :mod:`controller.shell.merge_patch`). Several commits that come
  while the reader is busy go out as one line; a commit that changed nothing in the view but its
  ``seq`` (and whose events the reader does not want) sends nothing: the view's ``seq`` is the
  event it last changed at;
* ``{"watch": "badge", "uid", "card", "ts"}``: a tag read on the station's badge zone
  (``[station] badge_zone``); ``card`` is true when the tag is a playing card of a deck the table
  knows (never a dealer's badge). Those reads never reach the core.

Nothing here waits for the reader: the table hands each watcher its events and wakes it
(:meth:`Watchers.events`), and the watcher's own task writes. A watcher that falls more than
``limit`` messages behind loses them and gets the whole view again (``"resync": true`` and how
many messages it ``dropped``): drop and resync, never a queue that grows. A reader whose socket
takes nothing for ``stall`` seconds is disconnected. The request must be signed by a key with
the dealer, floor or surveillance role (or be unsigned on a table that takes unsigned requests);
at most :data:`MAX_WATCHERS` follow the table at once.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from controller.authority import Role
from controller.shell.gate import (
    Gate,
    Parsed,
    Principal,
    RefusedError,
    auth_of,
    parse_body,
    transaction_of,
)
from controller.shell.merge_patch import diff

WATCH = "watch"
#: Who may follow the table: the consoles that run it and surveillance.
WATCH_ROLES = frozenset({Role.DEALER, Role.FLOOR, Role.SURVEILLANCE})
#: Messages a watcher may fall behind before it is resynced.
LIMIT = 256
#: Seconds a reader's socket may take nothing before the watcher is dropped.
STALL = 30.0
#: Watchers at once (a station, a spare, surveillance's tools): each costs a task and its queue.
MAX_WATCHERS = 16


def line(body: Mapping[str, Any]) -> bytes:
    """One JSON line as the console socket writes it."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def authorize(gate: Gate, payload: bytes, now: datetime) -> tuple[str, Principal, bool]:
    """The transaction, who asks and whether they want the events, of a watch request
    (RefusedError: why it is refused)."""
    body = parse_body(payload, gate.policy.limits)
    transaction = transaction_of(body)
    request = gate.authenticate(Parsed(WATCH, body, transaction, auth_of(body, transaction)), now)
    extra = sorted(set(request.fields) - {"events"})
    if extra:
        raise RefusedError(f"watch takes only events, not {', '.join(extra)}", transaction)
    events = request.fields.get("events", True)
    if not isinstance(events, bool):
        raise RefusedError("events: true or false", transaction)
    gate.check_fresh(request, now)
    if not request.principal.roles & WATCH_ROLES:
        held = ", ".join(sorted(request.principal.roles)) or "no role"
        raise RefusedError(f"{request.principal.person} ({held}) may not watch", transaction)
    return transaction, request.principal, events


class Watcher:
    """One reader of the stream: what waits for it, and the view it was sent last."""

    def __init__(self, hub: Watchers, *, events: bool, limit: int) -> None:
        self.hub = hub
        self.wants_events = events
        self.limit = limit
        self.pending: deque[dict[str, Any]] = deque()
        self.dropped = 0
        self.sent: dict[str, Any] | None = None  # None: the whole view goes next
        self.closed = False
        self.wake = asyncio.Event()
        self.wake.set()  # the view goes first

    def add(self, message: dict[str, Any]) -> None:
        """Queue a message; past the limit, drop everything queued and resync."""
        if len(self.pending) >= self.limit:
            self.dropped += len(self.pending) + 1
            self.pending.clear()
            self.sent = None
        else:
            self.pending.append(message)
        self.wake.set()

    async def lines(self) -> list[bytes] | None:
        """The lines to write next (waits until there are some; None: the table stops)."""
        while True:
            await self.wake.wait()
            self.wake.clear()
            if self.closed:
                return None
            out = self._take()
            if out:
                return out

    def _take(self) -> list[bytes]:
        view = self.hub.view
        if self.sent is None:
            body: dict[str, Any] = {"watch": "view", "view": view}
            if self.dropped:
                body.update(resync=True, dropped=self.dropped)
                self.dropped = 0
            self.pending.clear()  # what they told is in the view now
            self.sent = view
            return [line(body)]
        out: list[bytes] = []
        events: list[dict[str, Any]] = []
        for message in self.pending:
            if message.get("watch") == "badge":
                out.append(line(message))
            else:
                events.append(message)
        self.pending.clear()
        patch = diff(self.sent, view)
        # a commit that changed nothing but the view's seq (a group dispensed, say) is not
        # worth a line: its seq goes with the next change
        if set(patch) - {"seq"} or events:
            out.append(line({"watch": "change", "events": events, "view": patch}))
            self.sent = view
        return out


class Watchers:
    """Everyone following the table, and the view they follow (built when someone reads it)."""

    def __init__(self, view: Callable[[], dict[str, Any]], *, limit: int = LIMIT) -> None:
        self._build = view
        self._view: dict[str, Any] | None = None
        self.limit = limit
        self.watchers: set[Watcher] = set()

    @property
    def view(self) -> dict[str, Any]:
        """The view now (built once per change, and only when read)."""
        if self._view is None:
            self._view = self._build()
        return self._view

    def follow(self, *, events: bool = True) -> Watcher:
        """A new watcher; the whole view is its first line (RefusedError: too many watch)."""
        if len(self.watchers) >= MAX_WATCHERS:
            raise RefusedError(f"{MAX_WATCHERS} consoles watch the table already")
        watcher = Watcher(self, events=events, limit=self.limit)
        self.watchers.add(watcher)
        return watcher

    def leave(self, watcher: Watcher) -> None:
        """The watcher's reader went away."""
        self.watchers.discard(watcher)

    def close(self) -> None:
        """The table stops: every stream ends (its connection is closed)."""
        for watcher in self.watchers:
            watcher.closed = True
            watcher.wake.set()

    def touch(self) -> None:
        """The view changed (the table, a device, the links): wake every watcher."""
        self._view = None
        for watcher in self.watchers:
            watcher.wake.set()

    def events(self, envelopes: Callable[[], Sequence[dict[str, Any]]]) -> None:
        """Events were journaled; ``envelopes`` makes them (only if a watcher wants them)."""
        self._view = None
        made: Sequence[dict[str, Any]] | None = None
        for watcher in self.watchers:
            if watcher.wants_events:
                if made is None:
                    made = envelopes()
                for envelope in made:
                    watcher.add(envelope)
            watcher.wake.set()

    def badge(self, uid: str, *, card: bool, ts: str) -> None:
        """A tag on the badge zone."""
        message = {"watch": "badge", "uid": uid, "card": card, "ts": ts}
        for watcher in self.watchers:
            watcher.add(message)


async def stream(
    watcher: Watcher,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    stall: float = STALL,
) -> None:
    """Write ``watcher``'s lines until the reader closes the connection or stops reading."""
    gone = asyncio.ensure_future(_until_closed(reader))
    try:
        while not gone.done():
            lines = asyncio.ensure_future(watcher.lines())
            await asyncio.wait({lines, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not lines.done():
                lines.cancel()
                break
            out = lines.result()
            if out is None:
                break
            writer.writelines(out)
            async with asyncio.timeout(stall):
                await writer.drain()
    except (TimeoutError, ConnectionError):
        pass  # a reader that takes nothing, or went away: dropped
    finally:
        gone.cancel()
        watcher.hub.leave(watcher)


async def _until_closed(reader: asyncio.StreamReader) -> None:
    """Read (and ignore) what the watching side sends until it closes the connection."""
    try:
        while await reader.read(4096):
            pass
    except (ConnectionError, ValueError):
        pass
