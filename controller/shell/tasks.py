"""Stopping asyncio tasks for good.

On Python 3.11 a task can lose its cancellation: ``asyncio.wait_for`` returns the awaited
result and drops the ``CancelledError`` when the operation completes in the same moment the
cancellation lands (aiomqtt waits that way). The busier the machine, the wider that moment. A
task that lost its cancellation runs on, and whatever waits for it to end waits for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable


async def cancel_and_wait(
    tasks: Iterable[asyncio.Task[object]], *, again_after: float = 0.2, attempts: int = 50
) -> list[asyncio.Task[object]]:
    """Cancel ``tasks`` and wait until they are done, cancelling again every ``again_after``
    seconds while one is still running; the tasks still running after ``attempts`` tries."""
    pending = [task for task in tasks if not task.done()]
    for _ in range(attempts):
        if not pending:
            break
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=again_after)
        pending = [task for task in pending if not task.done()]
    return pending
