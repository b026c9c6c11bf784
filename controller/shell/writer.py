"""The journal on its own thread: the event loop never waits on an fsync.

SQLite with ``synchronous=FULL`` blocks for the length of an fsync on every commit (milliseconds
on an SSD, tens of milliseconds on an SD card). :class:`JournalWriter` owns the one connection and
runs every call on one dedicated thread, in the order the calls were made, so the journal sees
exactly the sequence of transactions the shell issued.

A call that fails for want of disk space raises :class:`~controller.shell.space.JournalFullError`
(the transaction was rolled back: nothing was written) and marks the journal full
(:class:`~controller.shell.space.JournalSpace`), whichever call it was.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

import structlog

from controller.shell.journal import Journal
from controller.shell.space import JournalFullError, JournalSpace, is_full

P = ParamSpec("P")
T = TypeVar("T")

log = structlog.get_logger("tablectl.journal")


class JournalWriter:
    """Runs a :class:`Journal`'s methods on one thread, awaitable from the loop."""

    def __init__(self, journal: Journal, space: JournalSpace | None = None) -> None:
        self.journal = journal
        self.space = space or JournalSpace(journal.path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")

    async def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn(*args, **kwargs)`` on the journal thread and wait for it."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._executor, functools.partial(fn, *args, **kwargs)
            )
        except (sqlite3.Error, OSError) as exc:
            if not is_full(exc, self.journal.path.parent):
                raise
            self.space.mark_full(exc)
            raise JournalFullError(str(exc)) from exc

    async def close(self, *, checkpoint: bool = True) -> None:
        """Checkpoint the WAL (on a clean shutdown), close the database and stop the thread.

        On a full disk the checkpoint is skipped: the WAL stays, and the next start reads it.
        """
        if checkpoint:
            try:
                await self.call(self.journal.checkpoint)
            except JournalFullError:
                log.warning("journal.checkpoint_skipped", reason="the disk is full")
        await self.call(self.journal.close)
        self._executor.shutdown(wait=True)
