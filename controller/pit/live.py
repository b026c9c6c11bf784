"""What the console's live pages wait on: counters that move whenever the pit learns something.

The ingest touches the board after each commit (events, births and deaths, retained states,
devices' health, refused messages: the tables they concern); each live page's stream
(Server-Sent Events, :mod:`controller.pit.console.streams`) waits for the counter it follows to
move: the floor map, the holds and the alarms follow the board's :attr:`LiveBoard.version`, a
table's page :meth:`LiveBoard.table_version`, which moves only for that table. What the pages
show is read from the store (device health too: :mod:`controller.pit.devices`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controller.pit.batches import Applied


@dataclass(frozen=True)
class StreamLimits:
    """How many live streams, and how often each is updated (``[web]``, docs/console.md)."""

    per_session: int = 4
    per_user: int = 8
    total: int = 200
    interval: float = 0.25  # seconds between two updates of one live page, at least
    write_timeout: float = 30.0  # seconds a stream may wait for its reader to take its data
    recheck: float = 15.0  # seconds between two checks that a stream's login still stands


class LiveBoard:
    """Change counters to wait on."""

    def __init__(self) -> None:
        self.version = 0
        self.closed = False
        self._tables: dict[str, int] = {}  # table → the version its last change made
        self._everything = 0  # the version of the last change of no table in particular
        self._waiters: set[asyncio.Event] = set()
        #: the live streams open on the board (:meth:`follow`), and an event set while there is
        #: one: the change feed hears other processes promptly only while someone follows
        self.followers = 0
        self.followed = asyncio.Event()
        #: set by the change feed: takes at once what other processes announced and the feed
        #: has not read yet (:meth:`caught_up`)
        self.catch_up: Callable[[], Awaitable[None]] | None = None

    def follow(self) -> None:
        """A live stream opened: it follows the board until :meth:`unfollow`."""
        self.followers += 1
        self.followed.set()

    def unfollow(self) -> None:
        """A live stream ended."""
        self.followers = max(0, self.followers - 1)
        if not self.followers:
            self.followed.clear()

    async def caught_up(self) -> None:
        """Before a page is computed from the board's versions: every change other processes
        announced is on the board (a change feed that reads at leisure while no stream follows
        reads now)."""
        if self.catch_up is not None:
            await self.catch_up()

    def touch(self, applied: Applied | None = None) -> None:
        """Something changed: wake every page waiting. ``applied`` (a committed batch) names
        the tables it concerned; without it, every table may have changed."""
        self._moved_now(None if applied is None else applied.touched)

    def elsewhere(self, tables: Iterable[str] | None) -> None:
        """Another pit process of the store committed a change of ``tables`` (None: anything
        may have changed), as its announcement or a periodic re-read says
        (:class:`controller.pit.changes.ChangeFeed`): wake every page waiting."""
        self._moved_now(tables)

    def _moved_now(self, tables: Iterable[str] | None) -> None:
        self.version += 1
        if tables is None:
            self._everything = self.version
        else:
            for table in tables:
                self._tables[table] = self.version
        for waiter in self._waiters:
            waiter.set()

    def table_version(self, table: str) -> int:
        """The version of the last change that concerned ``table``."""
        return max(self._everything, self._tables.get(table, 0))

    def close(self) -> None:
        """The process stops: every live page's stream ends."""
        self.closed = True
        self.touch()

    def watch(self, waiter: asyncio.Event) -> None:
        """Set ``waiter`` at every change from now on (until :meth:`unwatch`)."""
        self._waiters.add(waiter)

    def unwatch(self, waiter: asyncio.Event) -> None:
        """Stop setting ``waiter``."""
        self._waiters.discard(waiter)
