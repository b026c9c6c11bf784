"""Retention in the daemon: its rounds as one of the daemon's supervised tasks, each in a thread
of its own whose journal writes run on the journal's writer thread (controller/shell/retention.py
runs a round).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

import structlog

from controller.shell.retention import Retention, StoppedError
from controller.shell.retention_policy import RoundReport
from controller.shell.space import JournalFullError

log = structlog.get_logger("tablectl.retention")

P = ParamSpec("P")
T = TypeVar("T")

#: Seconds a stop waits for the retention step in flight (its journal writes are done by then:
#: after the stop is asked, the round makes none).
STOP_WAIT = 5.0


class RetentionTask:
    """Retention as one of the daemon's supervised tasks: a round every ``interval`` seconds
    and whenever :attr:`wake` is set (the disk ran low), in a thread whose journal writes run
    on the journal's writer thread."""

    def __init__(
        self,
        retention: Retention,
        run_on_writer: Callable[..., Any],
        on_report: Callable[[RoundReport], Any],
    ) -> None:
        self.retention = retention
        self.run_on_writer = run_on_writer
        self.on_report = on_report
        self.wake = asyncio.Event()

    async def run(self) -> None:
        """Rounds until cancelled (a round in flight stops at its next step)."""
        loop = asyncio.get_running_loop()

        def write(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
            future = asyncio.run_coroutine_threadsafe(self.run_on_writer(fn, *args, **kwargs), loop)
            result: T = future.result()
            return result

        self.retention.write = write
        while True:
            report = await self._round(lambda: self.retention.run_once(datetime.now(UTC)))
            if report is not None:
                await self.on_report(report)
            self.wake.clear()
            try:
                async with asyncio.timeout(self.retention.config.interval):
                    await self.wake.wait()
            except TimeoutError:
                pass

    async def _round(self, body: Callable[[], RoundReport]) -> RoundReport | None:
        round_ = asyncio.ensure_future(asyncio.to_thread(body))
        try:
            return await asyncio.shield(round_)
        except asyncio.CancelledError:
            # The thread's next step sees the flag and touches the journal no more; its step in
            # flight (a segment being written, a copy to a slow archive) is waited for a while.
            self.retention.stopping.set()
            deadline = time.monotonic() + STOP_WAIT
            while not round_.done() and time.monotonic() < deadline:
                try:
                    await asyncio.wait({round_}, timeout=deadline - time.monotonic())
                except asyncio.CancelledError:
                    continue
            if round_.done() and not round_.cancelled():
                round_.exception()  # retrieved: it is the stop's, not a failure
            raise
        except (StoppedError, JournalFullError):
            return None  # stopping; or the disk is full: the disk watch has it
        except Exception:  # a round that fails is logged; the next one tries again
            log.exception("retention.round_failed")
            return None
