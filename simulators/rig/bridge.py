"""From a thread to the event loop and back: the rig's coroutines for synchronous dealer logic.

The scenario runner and the automatic dealers are synchronous (they were written for the pure
core); the rig is asyncio. The dealer logic runs on a thread of its own (:func:`run_in_thread`)
and reaches the rig through a :class:`Bridge`, which runs a coroutine on the loop and waits for
its result. Closing the bridge cancels what is in flight, so a stopped rig never leaves the thread
waiting.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class StoppingError(RuntimeError):
    """The rig is stopping: the dealer's thread must unwind."""


class Bridge:
    """Runs the rig's coroutines on the event loop for code on another thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()
        self.closed = False

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
        """Run ``coro`` on the loop and wait for its result."""
        if self.closed:
            coro.close()
            raise StoppingError("the rig is stopping")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        with self._lock:
            self._pending.add(future)
        try:
            return future.result(timeout)
        except concurrent.futures.CancelledError:
            raise StoppingError("the rig is stopping") from None
        finally:
            with self._lock:
                self._pending.discard(future)

    def close(self) -> None:
        """Refuse new calls and cancel those in flight (the thread then unwinds)."""
        self.closed = True
        with self._lock:
            for future in self._pending:
                future.cancel()


async def run_in_thread(target: Callable[[], T], name: str) -> T:
    """Run blocking ``target`` on a daemon thread of its own; await its result."""
    loop = asyncio.get_running_loop()
    result: asyncio.Future[T] = loop.create_future()

    def main() -> None:
        try:
            value = target()
        except BaseException as exc:  # handed over to the awaiting coroutine
            loop.call_soon_threadsafe(_settle, result, None, exc)
        else:
            loop.call_soon_threadsafe(_settle, result, value, None)

    threading.Thread(target=main, name=name, daemon=True).start()
    return await result


def _settle(future: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(value)
