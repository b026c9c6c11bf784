"""Waiting on a condition with a deadline: the one way the tests wait for something to happen.

A test never sleeps for a fixed time to let something happen; it polls what it waits for and
gives up after a bound generous enough for a loaded 2-core machine. The failure says what was
waited for and for how long.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def until(
    condition: Callable[[], object],
    timeout: float = 10.0,
    what: str = "",
    *,
    every: float = 0.005,
) -> None:
    """Poll ``condition`` every ``every`` seconds until it is true.

    Raises ``TimeoutError`` naming ``what`` (or the condition) after ``timeout`` seconds, so a
    caller that expects the condition may not come can suppress it.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError(f"waited {timeout:g} s for {what or condition}")
        await asyncio.sleep(every)


async def until_async(condition: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    """:func:`until` for a condition that must be awaited (an HTTP request)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await condition():
        if loop.time() > deadline:
            raise TimeoutError(f"waited {timeout:g} s for {what}")
        await asyncio.sleep(0.05)
