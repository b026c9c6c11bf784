"""The store on its own thread: the event loop never waits on a commit.

A :class:`StoreWorker` owns one :class:`~controller.pit.store.Store` (one connection) and runs
every call on one dedicated thread, in the order the calls were made. The ingest's commits, the
gap scans and the API's reads each have their own worker, so a long read never holds a commit.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Concatenate, ParamSpec, TypeVar

from controller.pit.store import Store

P = ParamSpec("P")
T = TypeVar("T")


class StoreWorker:
    """Runs functions of a :class:`Store` on one thread, awaitable from the loop."""

    def __init__(self, url: str, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{name}")
        self._url = url
        self._store: Store | None = None

    async def open(self) -> Store:
        """Connect (on the worker's thread)."""
        loop = asyncio.get_running_loop()
        self._store = await loop.run_in_executor(self._executor, Store, self._url)
        return self._store

    async def call(
        self, fn: Callable[Concatenate[Store, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(store, *args, **kwargs)`` on the worker's thread and wait for it."""
        store = self._store
        if store is None:
            raise RuntimeError("the store worker is not open")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, functools.partial(fn, store, *args, **kwargs)
        )

    async def close(self) -> None:
        """Close the connection and stop the thread."""
        if self._store is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._store.close)
            self._store = None
        self._executor.shutdown(wait=True)
