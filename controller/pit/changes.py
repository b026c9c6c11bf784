"""Live across processes: a commit by any pit process wakes the live pages of every process.

Several pit processes share one store (docs/pit.md, "Several pits behind a clustered broker"); a
live page must not show a change only when the process serving it happened to ingest it. So:

* **Announced in the commit.** A transaction that changes what a live page shows names the
  tables it concerned (:meth:`controller.pit.db.Db.changed`), and the :class:`Announcer` of the
  process writes that into the same transaction, just before its commit: PostgreSQL
  ``pg_notify`` on :data:`CHANNEL` (delivered to the listeners when the transaction commits, and
  never when it rolls back), SQLite a row of ``live_changes``. The payload is small and bounded
  (:func:`encode`: the process's origin and the tables, or "everything" past
  :data:`MAX_PAYLOAD` bytes).
* **Heard by every process.** :class:`ChangeFeed`, one per process with a console: on
  PostgreSQL a dedicated connection that ``LISTEN``\\ s, made again by the project's one reconnect
  loop (:func:`controller.aio.retry_forever` with a :class:`~controller.aio.Backoff`); on SQLite
  (one host) a poll every :data:`POLL` seconds, ``PRAGMA data_version`` first (whether another
  connection committed anything: no read of the database) and then the rows of
  ``live_changes`` after the last one read. Each (re)connection wakes every page once: what was
  announced while nobody listened is lost.
* **Coalesced.** What arrives together wakes the pages once, and the pages are woken at most
  every :data:`COALESCE` seconds (then with everything that arrived meanwhile); a process skips
  its own announcements (its commits woke its pages already).
* **Read at leisure while nobody follows.** A read wakes the event loop (some 300 µs of CPU on a
  small machine, benchmarks/loop_wake.py), and on a floor every commit of every pit process is
  an announcement. While no live stream follows the board the announcements are read every
  :data:`IDLE_READ` seconds, all together; the first stream to open makes the feed read at
  once, and a page about to be computed reads what is waiting first
  (:meth:`controller.pit.live.LiveBoard.caught_up`), so no page is shown from a board that has
  not heard what was announced before it was asked for.
* **A safety net.** Every ``[web] live_reread`` seconds every page is woken anyway, so a change
  whose announcement was lost (a listener cut and not yet back, a process killed between its
  commit and its announcement) is shown within that time.

Whatever a payload holds, it never breaks the listener: one that is not what :func:`encode`
writes (another client's ``NOTIFY`` on the channel, a payload of another version) wakes every
page, as if it named every table.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import structlog

from controller.aio import Backoff, cancel_and_wait, next_tick, retry_forever
from controller.pit.db import Db, StoreError, dialect_of, postgresql_conninfo
from controller.pit.health import PitHealth, describe

log = structlog.get_logger("tablectl.pit.changes")

#: The PostgreSQL channel every pit process of a store announces its commits on.
CHANNEL = "tablectl_pit_changes"
#: The listening connection's ``application_name`` (``pg_stat_activity`` names it so).
APPLICATION = "tablectl-pit-changes"
#: The longest payload written: beyond it, "everything changed" (PostgreSQL takes < 8000 bytes).
MAX_PAYLOAD = 2000
#: Seconds between two reads of SQLite's change counter: a page of another process shows a
#: change within this (and the coalescing); a poll is a wake of the loop, some 300 µs of CPU on
#: a small machine (benchmarks/loop_wake.py), so not more often than the pages need.
POLL = 0.2
#: Seconds between two wakes of the pages by other processes' changes, at least.
COALESCE = 0.05
#: Seconds between two reads of the announcements while no live stream follows the board.
IDLE_READ = 1.0
#: ``live_changes`` rows kept (SQLite): a process further behind wakes every page once.
KEPT = 2000
#: ``live_changes`` rows read at most per poll: more wakes every page at once.
READ = 500


def new_origin() -> str:
    """A process's name in its announcements (random: two processes never share it)."""
    return secrets.token_hex(6)


def encode(origin: str, tables: frozenset[str] | None) -> str:
    """The payload announcing ``tables`` (None: anything may have changed) from ``origin``:
    at most :data:`MAX_PAYLOAD` bytes, ASCII."""
    if tables is not None:
        text = json.dumps({"o": origin, "t": sorted(tables)}, separators=(",", ":"))
        if len(text) <= MAX_PAYLOAD:
            return text
    return json.dumps({"o": origin, "t": None}, separators=(",", ":"))


@dataclass(frozen=True)
class Change:
    """What an announcement says: from which process (None: unknown), and which tables
    changed (None: anything may have)."""

    origin: str | None
    tables: frozenset[str] | None
    malformed: bool = False


EVERYTHING = Change(None, None, malformed=True)


def decode(payload: object) -> Change:
    """What a payload announces; one that is not :func:`encode`'s (not text, too long, not
    JSON, another shape) announces that anything may have changed. Never raises."""
    if not isinstance(payload, str) or len(payload) > MAX_PAYLOAD:
        return EVERYTHING
    try:
        body = json.loads(payload)
    except (ValueError, RecursionError):
        return EVERYTHING
    if not isinstance(body, dict):
        return EVERYTHING
    origin = body.get("o")
    origin = origin if isinstance(origin, str) else None
    tables = body.get("t")
    if tables is None and "t" in body:
        return Change(origin, None)
    if isinstance(tables, list) and all(isinstance(t, str) for t in tables):
        return Change(origin, frozenset(tables))
    return Change(origin, None, malformed=True)


class Board(Protocol):
    """What the feed wakes (:class:`controller.pit.live.LiveBoard`)."""

    #: the live streams that follow the board, and an event set while there is one
    followers: int
    followed: asyncio.Event
    #: set by the feed: what a page about to be computed awaits first
    catch_up: Callable[[], Awaitable[None]] | None

    def elsewhere(self, tables: Iterable[str] | None) -> None:
        """Another process committed a change of ``tables`` (None: of anything)."""


class Announcer:
    """Writes a process's announcements into the transaction that made the change (set as
    :attr:`controller.pit.db.Db.announcer` on each of the process's store connections)."""

    def __init__(self, origin: str | None = None) -> None:
        self.origin = origin or new_origin()

    def __call__(self, db: Db, tables: frozenset[str] | None) -> None:
        payload = encode(self.origin, tables)
        if db.dialect == "postgresql":
            # in the transaction: delivered when it commits, never when it rolls back; the same
            # payload twice in one transaction is delivered once
            db.execute("SELECT pg_notify(?, ?)", (CHANNEL, payload))
            return
        cursor = db.execute("INSERT INTO live_changes (payload) VALUES (?)", (payload,))
        row_id = int(cursor.lastrowid or 0)
        if row_id % 256 == 0:  # now and then, the rows no poller needs any more
            db.execute("DELETE FROM live_changes WHERE id <= ?", (row_id - KEPT,))


class ChangeFeed:
    """Wakes ``board``'s pages at every change another process of the store announces, and
    every ``reread`` seconds whatever was announced."""

    def __init__(
        self,
        url: str,
        board: Board,
        *,
        origin: str | None = None,
        reread: float = 10.0,
        poll: float = POLL,
        coalesce: float = COALESCE,
        idle: float = IDLE_READ,
        backoff: Backoff | None = None,
        health: PitHealth | None = None,
    ) -> None:
        self.url = url
        #: told when the listening connection is made and lost (/healthz and the banner say it)
        self.health = health
        self.board = board
        self.origin = origin
        self.reread = reread
        self.poll = poll
        self.coalesce = coalesce
        self.idle = idle
        self.backoff = backoff or Backoff(0.1, 5.0)
        self.listening = False
        #: What the feed has done: connections made, reads of the announcements, announcements
        #: taken (of other processes), malformed ones, the process's own skipped, wakes of the
        #: pages.
        self.connections = 0
        self.reads = 0
        self.heard = 0
        self.malformed = 0
        self.own = 0
        self.wakes = 0
        #: Called at each wake with what woke the pages (tests and benchmarks time it).
        self.on_wake: Callable[[frozenset[str] | None], None] | None = None
        self._pending: set[str] = set()
        self._everything = False
        self._due: asyncio.TimerHandle | None = None
        self._woken_at = float("-inf")
        #: reads what the connection holds now (None: no connection)
        self._read_now: Callable[[], Awaitable[None]] | None = None
        board.catch_up = self.catch_up

    @property
    def dialect(self) -> str:
        """The store's database."""
        return dialect_of(self.url)

    async def run(self) -> NoReturn:
        """Listen (or poll) and re-read, until cancelled."""
        listen = self._listen_postgresql if self.dialect == "postgresql" else self._poll_sqlite
        tasks = [
            asyncio.create_task(self._listen(listen), name="pit:changes"),
            asyncio.create_task(self._reread(), name="pit:reread"),
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            await cancel_and_wait(tasks)
            if self._due is not None:
                self._due.cancel()
        raise AssertionError("unreachable")  # pragma: no cover - both loops run for ever

    # ------------------------------------------------------------------ waking

    def take(self, change: Change) -> None:
        """An announcement heard: its tables' pages woken (soon: coalesced)."""
        if change.malformed:
            self.malformed += 1
        if self.origin is not None and change.origin == self.origin:
            self.own += 1
            return
        self.heard += 1
        self._wake(change.tables)

    def wake_everything(self) -> None:
        """Every page woken (soon: coalesced), whatever was announced."""
        self._wake(None)

    def _wake(self, tables: Iterable[str] | None) -> None:
        if tables is None:
            self._everything = True
        else:
            self._pending.update(tables)
        if self._due is not None:
            return
        loop = asyncio.get_running_loop()
        # what arrives in the same read wakes the pages once; then at most every ``coalesce``
        delay = max(0.0, self._woken_at + self.coalesce - loop.time())
        self._due = loop.call_later(delay, self._flush)

    async def catch_up(self) -> None:
        """Read what was announced and not read yet, and wake the pages with it at once (a
        page is about to be computed). Nothing when there is no connection: the pages are told
        everything when there is one again."""
        read = self._read_now
        if read is None:
            return
        try:
            await read()
        except Exception as exc:  # the listener finds the connection lost by itself
            log.debug("pit.changes.catch_up_failed", error=str(exc)[:300])
            return
        if self._due is not None:
            self._due.cancel()
            self._flush()

    async def _pause(self, pace: float) -> None:
        """Wait before the next read: ``pace`` seconds (no wait on PostgreSQL: the next read
        is the next announcement's) while a live stream follows the board, until the next
        tick of :attr:`idle` while none does (over as soon as one opens)."""
        if self.board.followers:
            if pace > 0:
                await asyncio.sleep(pace)
            return
        with contextlib.suppress(TimeoutError):
            now = asyncio.get_running_loop().time()
            async with asyncio.timeout_at(next_tick(now, self.idle)):
                await self.board.followed.wait()

    def _flush(self) -> None:
        self._due = None
        tables = None if self._everything else frozenset(self._pending)
        self._everything = False
        self._pending = set()
        if tables is not None and not tables:
            return
        self._woken_at = asyncio.get_running_loop().time()
        self.wakes += 1
        self.board.elsewhere(tables)
        if self.on_wake is not None:
            self.on_wake(tables)

    async def _reread(self) -> NoReturn:
        while True:
            await asyncio.sleep(self.reread)
            self.wake_everything()

    # ------------------------------------------------------------------ listening

    async def _listen(self, attempt: Callable[[], Any]) -> NoReturn:
        async def ended(error: Exception | None, lasted: float) -> float:
            self.listening = False
            if self.health is not None:
                self.health.down("changes", describe(error) if error else "the listener ended")
            delay = self.backoff.next(lasted)
            log.warning(
                "pit.changes.lost",
                dialect=self.dialect,
                error=str(error)[:300] if error else "ended",
                retry_in=round(delay, 2),
            )
            return delay

        expected: tuple[type[Exception], ...] = (OSError, StoreError, TimeoutError)
        try:
            import psycopg  # noqa: PLC0415 (a SQLite-only install has none)

            expected = (*expected, psycopg.Error)
        except ImportError:  # pragma: no cover
            pass
        import sqlite3  # noqa: PLC0415

        await retry_forever(attempt, ended, expected=(*expected, sqlite3.Error), name="pit changes")

    def _connected(self) -> None:
        self.connections += 1
        self.listening = True
        if self.health is not None:
            self.health.up("changes")
        log.info("pit.changes.listening", dialect=self.dialect, connections=self.connections)
        # whatever was announced before (or while the connection was away) was not heard
        self.wake_everything()

    async def _listen_postgresql(self) -> None:
        """One connection: LISTEN, then each notification as it comes, until it is lost.

        Waited for as libpq's documentation says ("Asynchronous Notification",
        https://www.postgresql.org/docs/current/libpq-notify.html: wait until the socket is
        readable, ``PQconsumeInput``, then ``PQnotifies`` until none is left), through psycopg's
        public libpq wrapper (``AsyncConnection.pgconn``,
        https://www.psycopg.org/psycopg3/docs/api/pq.html). psycopg's own ``notifies()`` wakes
        the loop every 0.1 s to look: ten wakes a second, which were most of what an idle pit
        cost. A connection in autocommit mode (a LISTEN inside a transaction takes effect only at
        its commit), used for nothing else. A connection cut without a word (no RST) is found by
        the TCP keepalives every store connection has (:data:`controller.pit.db.TCP_SETTINGS`):
        its socket then reports the error, and ``PQconsumeInput`` fails.
        """
        import psycopg  # noqa: PLC0415

        conn = await psycopg.AsyncConnection.connect(
            postgresql_conninfo(self.url), autocommit=True, application_name=APPLICATION
        )
        async with conn:
            await conn.execute(f"LISTEN {CHANNEL}")
            pgconn, encoding = conn.pgconn, conn.info.encoding
            loop = asyncio.get_running_loop()
            readable = asyncio.Event()
            fd = pgconn.socket

            def received() -> None:
                """Each notification libpq has read (with the LISTEN's answer, say)."""
                while (notify := pgconn.notifies()) is not None:
                    try:
                        payload = notify.extra.decode(encoding)
                    except UnicodeDecodeError:
                        # not in the connection's encoding: what came with it is lost
                        self.take(EVERYTHING)
                        continue
                    self.take(decode(payload))

            def read() -> None:
                self.reads += 1
                pgconn.consume_input()  # psycopg.OperationalError: the connection is lost
                received()

            async def read_now() -> None:
                read()

            loop.add_reader(fd, readable.set)
            self._read_now = read_now
            try:
                self._connected()
                received()
                while True:
                    await readable.wait()
                    # not watched while paused: a socket with data waiting would wake the loop
                    # at every turn
                    loop.remove_reader(fd)
                    read()
                    await self._pause(0.0)
                    readable.clear()
                    loop.add_reader(fd, readable.set)
            finally:
                self._read_now = None
                loop.remove_reader(fd)

    async def _poll_sqlite(self) -> None:
        """One connection to the SQLite file: read what the others committed every ``poll``
        seconds, until it fails."""
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pit-changes")
        db: Db | None = None
        try:
            db = await loop.run_in_executor(executor, Db, self.url)
            reader = _ChangeReader(db)
            await loop.run_in_executor(executor, reader.start)
            reading = asyncio.Lock()  # the poll and a page's catch-up read in turn

            async def read_now() -> None:
                async with reading:
                    self.reads += 1
                    for change in await loop.run_in_executor(executor, reader.read):
                        self.take(change)

            self._read_now = read_now
            self._connected()
            while True:
                await self._pause(self.poll)
                await read_now()
        finally:
            self._read_now = None
            if db is not None:
                with contextlib.suppress(Exception):
                    await loop.run_in_executor(executor, db.close)
            executor.shutdown(wait=False)


class _ChangeReader:
    """SQLite: the announcements committed since the last read (on the feed's thread)."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self.version: object = None
        self.last = 0

    def start(self) -> None:
        self.version = self._data_version()
        self.last = self._newest()

    def _data_version(self) -> object:
        row = self.db.one("PRAGMA data_version")
        return row[0] if row else None

    def _newest(self) -> int:
        row = self.db.one("SELECT max(id) FROM live_changes")
        return int(row[0]) if row and row[0] is not None else 0

    def read(self) -> list[Change]:
        # data_version moves when another connection commits: nothing to read otherwise
        version = self._data_version()
        if version == self.version:
            return []
        self.version = version
        rows = self.db.all(
            "SELECT id, payload FROM live_changes WHERE id > ? ORDER BY id LIMIT ?",
            (self.last, READ),
        )
        if not rows:
            newest = self._newest()
            if newest < self.last:  # the rows were emptied (a store put back): start over
                self.last = newest
                return [Change(None, None)]
            return []
        # ids follow one another (one writer at a time, the newest never deleted): a gap is
        # rows pruned before they were read
        missed = int(rows[0][0]) != self.last + 1
        self.last = int(rows[-1][0])
        if missed or len(rows) == READ:
            # more than one read takes, or rows pruned unread: every page, once
            self.last = max(self.last, self._newest())
            return [Change(None, None)]
        return [decode(payload) for _, payload in rows]
