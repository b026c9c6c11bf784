"""The store on its own thread: the event loop never waits on a commit.

A :class:`StoreWorker` owns one :class:`~controller.pit.store.Store` (one connection) and runs
every call on one dedicated thread, in the order the calls were made. The ingest's commits, the
gap scans and the API's reads each have their own worker, so a long read never holds a commit.

A connection lost for good (PostgreSQL restarted, the network cut) is made again at the next
call, so the process comes back with its store without a restart. Each call tells the process's
:class:`~controller.pit.health.PitHealth` whether the store answered; a call the store does not
answer raises :class:`StoreLostError`, which the API answers with 503 naming the store and since
when. A worker given an announcer (:class:`controller.pit.changes.Announcer`) sets it on each
connection it makes, so what its transactions change is announced to every pit process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from controller.pit.db import Announcer, Dialect, StoreError, dialect_of, unavailable
from controller.pit.health import describe
from controller.pit.store import Store

if TYPE_CHECKING:
    from controller.pit.health import PitHealth

P = ParamSpec("P")
T = TypeVar("T")


class StoreLostError(StoreError):
    """The store did not answer a call (its cause is the database's own error)."""


class StoreWorker:
    """Runs functions of a :class:`Store` on one thread, awaitable from the loop."""

    def __init__(
        self,
        url: str,
        name: str,
        health: PitHealth | None = None,
        announcer: Announcer | None = None,
    ) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{name}")
        self._url = url
        self._store: Store | None = None
        self._open = False
        self.health = health
        self.announcer = announcer

    def _connect(self) -> Store:
        store = Store(self._url)
        store.db.announcer = self.announcer
        return store

    async def open(self) -> Store:
        """Connect (on the worker's thread)."""
        loop = asyncio.get_running_loop()
        self._store = await loop.run_in_executor(self._executor, self._connect)
        self._open = True
        return self._store

    @property
    def dialect(self) -> Dialect:
        """The store's database."""
        return dialect_of(self._url)

    def report_to(self, health: PitHealth) -> None:
        """Tell ``health`` whether the store answers each call, from now on."""
        self.health = health

    def _run(self, fn: Callable[[Store], T]) -> T:
        """On the worker's thread: ``fn`` on the connection, made again first when it was
        lost (a StoreError when it cannot be made)."""
        store = self._store
        if store is None or store.db.broken:
            if store is not None:
                with contextlib.suppress(Exception):
                    store.close()
                self._store = None
            store = self._store = self._connect()
        return fn(store)

    async def call(
        self, fn: Callable[Concatenate[Store, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(store, *args, **kwargs)`` on the worker's thread and wait for it
        (StoreLostError: the store did not answer)."""
        if not self._open:
            raise RuntimeError("the store worker is not open")
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(
                self._executor, self._run, lambda store: fn(store, *args, **kwargs)
            )
        except Exception as exc:
            if not unavailable(exc):
                raise
            if self.health is not None:
                self.health.down("store", describe(exc))
            if isinstance(exc, StoreLostError):
                raise
            raise StoreLostError(describe(exc)) from exc
        if self.health is not None:
            self.health.up("store")
        return result

    async def close(self) -> None:
        """Close the connection and stop the thread."""
        self._open = False

        def close() -> None:
            if self._store is not None:
                self._store.close()
                self._store = None

        await asyncio.get_running_loop().run_in_executor(self._executor, close)
        self._executor.shutdown(wait=True)
