"""The journal on its own thread: the event loop never waits on an fsync.

SQLite with ``synchronous=FULL`` blocks for the length of an fsync on every commit (milliseconds
on an SSD, tens of milliseconds on an SD card). :class:`JournalWriter` owns the one connection and
runs every call on one dedicated thread, in the order the calls were made, so the journal sees
exactly the sequence of transactions the shell issued.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from controller.shell.journal import Journal

P = ParamSpec("P")
T = TypeVar("T")


class JournalWriter:
    """Runs a :class:`Journal`'s methods on one thread, awaitable from the loop."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")

    async def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn(*args, **kwargs)`` on the journal thread and wait for it."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def close(self, *, checkpoint: bool = True) -> None:
        """Checkpoint the WAL (on a clean shutdown), close the database and stop the thread."""
        if checkpoint:
            await self.call(self.journal.checkpoint)
        await self.call(self.journal.close)
        self._executor.shutdown(wait=True)
