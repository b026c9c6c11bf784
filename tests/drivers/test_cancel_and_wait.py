"""Tasks stopped for good (``cancel_and_wait`` and ``stop_tasks`` in controller/aio.py): one
that loses its cancellation is cancelled again until it ends; one that failed raises its error."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from controller.aio import cancel_and_wait, stop_tasks

pytestmark = pytest.mark.timeout(30)


async def swallows(times: list[int], cancelled: list[int]) -> None:
    """Keep running through the first ``times[0]`` cancellations, as a task whose cancellation
    an ``asyncio.wait_for`` dropped would."""
    while True:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(1)
            if len(cancelled) > times[0]:
                raise


async def test_a_task_that_loses_its_cancellations_is_cancelled_until_it_ends() -> None:
    cancelled: list[int] = []
    task = asyncio.create_task(swallows([3], cancelled))
    await asyncio.sleep(0)
    stuck = await cancel_and_wait([task], again_after=0.01)
    assert stuck == []
    assert task.cancelled()
    assert len(cancelled) == 4


async def test_a_task_that_never_ends_is_returned_after_the_attempts() -> None:
    cancelled: list[int] = []
    times = [1_000_000]
    task = asyncio.create_task(swallows(times, cancelled))
    await asyncio.sleep(0)
    stuck = await cancel_and_wait([task], again_after=0.01, attempts=5)
    assert stuck == [task]
    assert len(cancelled) == 5
    times[0] = 0
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_finished_tasks_are_left_alone() -> None:
    done = asyncio.create_task(asyncio.sleep(0))
    await done
    assert await cancel_and_wait([done]) == []
    assert not done.cancelled()


async def test_stop_tasks_raises_the_error_a_task_ended_with() -> None:
    async def fails() -> None:
        raise OSError("port gone")

    task = asyncio.create_task(fails())
    await asyncio.wait([task])
    with pytest.raises(OSError, match="port gone"):
        await stop_tasks(task)


async def test_stop_tasks_of_a_cancelled_task_raises_nothing() -> None:
    cancelled: list[int] = []
    task = asyncio.create_task(swallows([2], cancelled))
    await asyncio.sleep(0)
    await stop_tasks(task)
    assert task.cancelled()
    assert len(cancelled) == 3


async def test_stop_tasks_ends_every_task_before_raising_the_first_error() -> None:
    async def fails() -> None:
        raise ValueError("bad frame")

    failed = asyncio.create_task(fails())
    await asyncio.wait([failed])
    cancelled: list[int] = []
    running = asyncio.create_task(swallows([1], cancelled))
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="bad frame"):
        await stop_tasks(running, failed)
    assert running.cancelled()  # stopped too, although the other one failed
    assert len(cancelled) == 2
