"""The console's live streams (Server-Sent Events): shared, paced, bounded.

A live page's stream must cost the pit little, whoever holds how many of them:

* **Shared**: what a page shows is computed once per change for everyone who watches it
  (:class:`LiveSource`: one per page, per kind of viewer, per table), never once per stream:
  the store is read once, each section rendered once, and each stream only compares what it
  sent with the current snapshot and sends the sections that changed. The sections hold no
  person's data: the forms' CSRF token is a mark each stream puts its session's token in.
* **Paced**: a page is computed again at most every ``[web] live_interval`` seconds for its
  streams; what changed meanwhile goes out together. A stream that is behind (its reader slow)
  gets the page as it is now, once, not every version it missed.
* **Bounded**: each login session holds at most ``streams_per_session`` streams and each user
  ``streams_per_user``: another one ends the oldest (it is told, ``gone``, and the browser stops
  reconnecting it). The process serves at most ``streams_total``: another is refused (429 with
  Retry-After). A stream whose reader does not read waits (the server's flow control stops it
  after a few tens of KiB), and one that cannot send for ``stream_write_timeout`` seconds is
  closed.
* **Honest**: each stream tells its page the pit's own health (:class:`Watch`: a ``health``
  event when it opens and at every change), so the page's indicator says live only while the
  pit is connected to its broker and its store answers; while the store is lost the stream
  keeps what it sent and catches up when it answers. A stream whose login no longer stands (the
  user removed, the session ended, the roles changed) is told so and ends.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from fastapi import HTTPException
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from controller.pit.health import PitHealth
from controller.pit.http import CONNECTION, Connection
from controller.pit.live import LiveBoard, StreamLimits
from controller.pit.worker import StoreLostError

log = structlog.get_logger("tablectl.pit.console")

#: Seconds a stream stays quiet before it sends a comment (proxies close silent connections).
KEEPALIVE = 15.0
#: Seconds a refused stream is told to wait before it tries again.
RETRY_AFTER = 10
#: Seconds an ended stream has to finish by itself before its connection is closed.
GRACE = 2.0
#: Where a section's forms carry the session's CSRF token (each stream puts its own there).
CSRF_MARK = f"csrf-{secrets.token_hex(12)}"
#: Sources kept at most (a table's page has its own; the least recently used are dropped).
SOURCES_KEPT = 2000

SectionSpec = tuple[str, dict[str, Any]]  # template, context
Sections = dict[str, SectionSpec]  # element id → what renders it
Render = Callable[[str, str, dict[str, Any]], str]  # target, template, context → HTML


@dataclass(frozen=True)
class Section:
    """A section of a page as rendered: the data it came from, its HTML and its event."""

    key: str
    html: str
    event: str


@dataclass(frozen=True)
class Snapshot:
    """A page's sections as of a version of what it follows."""

    version: int
    sections: dict[str, Section]


def _event(target: str, html: str) -> str:
    return f"event: replace\ndata: {json.dumps({'target': target, 'html': html})}\n\n"


def gone(reason: str) -> str:
    """The event that ends a stream for good (the browser does not reconnect it)."""
    return f"event: gone\ndata: {json.dumps(reason)}\n\n"


class LiveSource:
    """One page's sections for everyone who watches it, computed once per change and at most
    every ``interval`` seconds for the streams."""

    def __init__(
        self,
        compute: Callable[[], Awaitable[Sections]],
        version: Callable[[], int],
        render: Render,
        interval: float,
    ) -> None:
        self.compute = compute
        self.version = version
        self.render = render
        self.interval = interval
        self.snapshot: Snapshot | None = None
        self.computed_at = float("-inf")
        self.computes = 0
        self._lock = asyncio.Lock()

    async def get(self, at_least: int, *, paced: bool = False) -> Snapshot:
        """The sections as of version ``at_least`` or later (``paced``: for a stream, not
        sooner than ``interval`` after the last computation)."""
        loop = asyncio.get_running_loop()
        while True:
            snapshot = self.snapshot
            if snapshot is not None and snapshot.version >= at_least:
                return snapshot
            delay = self.computed_at + self.interval - loop.time()
            if not paced or delay <= 0:
                break
            await asyncio.sleep(delay)
        async with self._lock:
            snapshot = self.snapshot
            if snapshot is not None and snapshot.version >= at_least:
                return snapshot
            version = self.version()
            sections = await self.compute()
            before = snapshot.sections if snapshot is not None else {}
            rendered: dict[str, Section] = {}
            for target, (template, context) in sections.items():
                key = json.dumps(context, sort_keys=True, default=str)
                kept = before.get(target)
                if kept is not None and kept.key == key:
                    rendered[target] = kept
                    continue
                html = self.render(target, template, context)
                rendered[target] = Section(key, html, _event(target, html))
            self.snapshot = Snapshot(version, rendered)
            self.computed_at = loop.time()
            self.computes += 1
            return self.snapshot


class Sources:
    """The live sources of one app, by what they show (the least recently used dropped)."""

    def __init__(self) -> None:
        self._sources: OrderedDict[tuple[str, ...], LiveSource] = OrderedDict()

    def all(self) -> list[LiveSource]:
        """Every source kept."""
        return list(self._sources.values())

    def get(self, key: tuple[str, ...], make: Callable[[], LiveSource]) -> LiveSource:
        """The source of ``key`` (made by ``make`` the first time)."""
        found = self._sources.get(key)
        if found is None:
            found = self._sources[key] = make()
            if len(self._sources) > SOURCES_KEPT:
                self._sources.popitem(last=False)
        else:
            self._sources.move_to_end(key)
        return found


class TooManyStreamsError(HTTPException):
    """The process serves as many streams as it may (429)."""

    def __init__(self, total: int) -> None:
        super().__init__(
            status_code=429,
            detail=f"this pit serves {total} live streams already: try again later",
            headers={"Retry-After": str(RETRY_AFTER)},
        )


@dataclass(eq=False)
class LiveStream:
    """One stream being served: whose, and whether it was told to end."""

    session: str
    user: str
    ended: str | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    on_end: Callable[[], None] | None = None  # closes its connection while it is served
    closing: asyncio.TimerHandle | None = None
    sent: int = 0  # bytes handed to the server
    passes: int = 0  # updates sent
    version: int = -1  # of the snapshot it sent last
    blocked: bool = False  # in a send: waiting, when its reader does not take what was sent

    def end(self, reason: str) -> None:
        """Tell the stream to end; its connection is closed if it has not ended in time."""
        if self.ended is not None:
            return
        self.ended = reason
        self.wake.set()
        if self.on_end is not None:
            self.closing = asyncio.get_running_loop().call_later(GRACE, self.on_end)

    def finished(self) -> None:
        """The stream's response is over: nothing of it may close its connection now (the
        connection may serve another request)."""
        self.on_end = None
        if self.closing is not None:
            self.closing.cancel()
            self.closing = None


class StreamRegistry:
    """The streams this process serves, within the limits."""

    def __init__(self, limits: StreamLimits, board: LiveBoard | None = None) -> None:
        self.limits = limits
        #: told of every stream opened and closed (its change feed listens promptly while one is)
        self.board = board
        self.streams: dict[LiveStream, None] = {}  # in the order they opened
        self.ended = 0
        self.refused = 0

    def open(self, session: str, user: str) -> LiveStream:
        """A new stream for ``user`` in ``session``, ending their oldest beyond the limits;
        TooManyStreamsError when the process serves all it may."""
        limits = self.limits
        ending: list[LiveStream] = []
        mine = [s for s in self.streams if s.session == session]  # the oldest first
        ending += mine[: max(0, len(mine) + 1 - limits.per_session)]
        theirs = [s for s in self.streams if s.user == user and s not in ending]
        ending += theirs[: max(0, len(theirs) + 1 - limits.per_user)]
        if len(self.streams) - len(ending) + 1 > limits.total:
            self.refused += 1
            raise TooManyStreamsError(limits.total)
        for stream in ending:
            self.close(stream)
            self.ended += 1
            stream.end("live updates moved to a newer page of yours: reload to get them here")
        stream = LiveStream(session, user)
        self.streams[stream] = None
        if self.board is not None:
            self.board.follow()
        return stream

    def close(self, stream: LiveStream) -> None:
        """The stream is over (or no longer counted)."""
        if stream in self.streams:
            del self.streams[stream]
            if self.board is not None:
                self.board.unfollow()


@dataclass(frozen=True)
class Watch:
    """What a stream follows besides its page: the pit's health, told to the page at every
    change (``health_event`` writes the event), and whether its login still stands (checked
    every ``recheck`` seconds: a user removed, logged out or given other roles meanwhile)."""

    health: PitHealth
    health_event: Callable[[], str]
    still_logged_in: Callable[[], Awaitable[bool]] | None = None
    recheck: float = KEEPALIVE


#: What a stream whose login no longer stands is told before it ends.
LOGIN_ENDED = "your login has ended or changed: reload the page to log in again"


async def stream_events(
    stream: LiveStream,
    source: LiveSource,
    board: LiveBoard,
    follows: Callable[[], int],
    first: Snapshot,
    csrf: str | None,
    watch: Watch | None = None,
) -> AsyncGenerator[str, None]:
    """The events of one stream: the pit's health and the sections of ``first``, then those
    that changed each time what it ``follows`` moved (paced by ``source``) or the health
    changed, until it is ended.

    While the store is lost the page's sections cannot be computed: the stream keeps what it
    sent (the health event says since when it is stale) and computes them again once the store
    is back."""
    loop = asyncio.get_running_loop()
    health = watch.health if watch is not None else None
    told = -1  # the health version the page was told last
    checked = loop.time()  # when the login was last checked
    sent: dict[str, str] = {}
    snapshot: Snapshot | None = first
    seen = first.version
    stale = False  # the last computation failed: the store was lost
    out = ["retry: 1000\n\n"]

    def moved() -> bool:
        return follows() > seen or (health is not None and health.version != told)

    async def login_ended() -> bool:
        nonlocal checked
        if watch is None or watch.still_logged_in is None:
            return False
        if loop.time() - checked < watch.recheck:
            return False
        checked = loop.time()
        return not await watch.still_logged_in()

    while True:
        if health is not None and health.version != told:
            assert watch is not None
            told = health.version
            out.append(watch.health_event())
        if snapshot is not None:
            for target, section in snapshot.sections.items():
                if sent.get(target) == section.key:
                    continue
                sent[target] = section.key
                out.append(
                    section.event if csrf is None else section.event.replace(CSRF_MARK, csrf)
                )
            seen = stream.version = snapshot.version
        if out:
            yield "".join(out)
            out = []
        while not moved():
            if stream.ended is not None:
                yield gone(stream.ended)
                return
            if board.closed:
                return
            if await login_ended():
                yield gone(LOGIN_ENDED)
                return
            stream.wake.clear()
            board.watch(stream.wake)
            if health is not None:
                health.watch(stream.wake)
            wait = KEEPALIVE if watch is None else min(KEEPALIVE, watch.recheck)
            try:
                async with asyncio.timeout(wait):
                    await stream.wake.wait()
            except TimeoutError:
                yield ": still here\n\n"
            finally:
                board.unwatch(stream.wake)
                if health is not None:
                    health.unwatch(stream.wake)
        if stream.ended is not None:
            yield gone(stream.ended)
            return
        if board.closed:  # the process stops: its store is about to close
            return
        if await login_ended():
            yield gone(LOGIN_ENDED)
            return
        snapshot = None
        if follows() > seen or stale:
            wanted = follows()
            try:
                snapshot = await source.get(wanted, paced=True)
                stale = False
            except HTTPException as exc:
                yield gone(str(exc.detail))
                return
            except StoreLostError:
                # the worker told the health already: the next pass tells the page, and the
                # store's return (a health change) brings the sections up to date
                stale = True
                seen = wanted


class LiveResponse(Response):
    """A stream of Server-Sent Events, sent as the reader takes it.

    Each send waits while the connection's buffer is full (the server's flow control); one that
    waits longer than ``write_timeout`` closes the connection. The stream is taken off the
    registry when it ends, however it ends.
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncGenerator[str, None],
        stream: LiveStream,
        registry: StreamRegistry,
        write_timeout: float,
    ) -> None:
        # as a streaming response: no body, so no Content-Length
        self.status_code = 200
        self.background = None
        self.init_headers({"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
        self.events = events
        self.stream = stream
        self.registry = registry
        self.write_timeout = write_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        state: Mapping[str, Any] = scope.get("state") or {}
        connection: Connection | None = state.get(CONNECTION)
        body: asyncio.Task[None] | None = None

        def close() -> None:
            if connection is not None:
                connection.abort()
            elif body is not None:
                body.cancel()

        async def deliver(message: Message) -> None:
            stalled = loop.call_later(self.write_timeout, close)
            self.stream.blocked = True
            try:
                await send(message)
            finally:
                self.stream.blocked = False
                stalled.cancel()

        async def produce() -> None:
            await deliver(
                {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
            )
            async for chunk in self.events:
                data = chunk.encode()
                self.stream.sent += len(data)
                self.stream.passes += 1
                await deliver({"type": "http.response.body", "body": data, "more_body": True})
            await deliver({"type": "http.response.body", "body": b"", "more_body": False})

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        self.stream.on_end = close
        body = asyncio.ensure_future(produce())
        listener = asyncio.ensure_future(listen())
        started = time.monotonic()
        try:
            await asyncio.wait({body, listener}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.registry.close(self.stream)
            for task in (body, listener):
                task.cancel()
            for task in (body, listener):
                try:
                    await task
                except asyncio.CancelledError:
                    pass
                except Exception:
                    log.exception("pit.live.failed", lasted=round(time.monotonic() - started, 1))
            self.stream.finished()
            await self.events.aclose()
