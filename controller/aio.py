"""Generic asyncio helpers: the host's clock, one backoff, one reconnect loop, stopping tasks.

Neutral ground: the drivers, the shell, the pit and the simulators all use these, and they know
nothing of any of them (the layering test keeps it so; the core, which never waits and never
reads a clock, does not import this module).

:func:`retry_forever` runs an *attempt* (one connection: to a device, to the broker) again and
again, for ever: when the attempt ends, a callback says how long to wait (usually the next delay
of a :class:`Backoff`), and the loop waits and starts the next. The MQTT link of the daemon and
of the pit, every device of the daemon (:class:`drivers.supervisor.Supervisor`) and each PN532
module run in it.

An attempt ends by raising one of the ``expected`` errors. Any other exception is a bug, and the
loop contains it: it is logged with its traceback and the attempt is treated as failed, so a bug
in one driver leaves the table running with that device reconnecting (``docs/drivers.md``,
"Errors to raise"). Only what the caller calls ``fatal`` ends the loop.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import NoReturn

import structlog

log = structlog.get_logger("tablectl.retry")


def utc_now() -> datetime:
    """The host's receive time, aware UTC."""
    return datetime.now(UTC)


def next_tick(now: float, period: float) -> float:
    """The time of the next tick of ``period``, some ``period`` after ``now`` (half to one and a
    half of it): a multiple of ``period`` on the event loop's clock.

    A process's periodic timers keep to one grid this way, so that those due at the same time
    fire in one wake of the loop: each wake costs some 300 µs of CPU on a small machine
    (benchmarks/loop_wake.py), and a pit's reads of the broker, its scans, its checks of the
    other members and its web server's second each woke it on their own, milliseconds apart.
    """
    return math.ceil((now + period / 2) / period) * period


async def sleep_to_tick(period: float) -> None:
    """Sleep until the next tick of ``period`` (:func:`next_tick`)."""
    loop = asyncio.get_running_loop()
    now = loop.time()
    await asyncio.sleep(next_tick(now, period) - now)


class Backoff:
    """Exponential backoff with full jitter, starting over after a connection that held.

    The n-th delay in a row is drawn from [0, min(cap, base * 2**n)]: full jitter spreads the
    reconnections of many clients (tables to a broker, modules to their ports) instead of
    letting them retry in step. An attempt that lasted ``stable_after`` seconds or more was a
    connection that held: the next delay starts from the first again.
    """

    def __init__(
        self, base: float, cap: float, stable_after: float = 10.0, rng: random.Random | None = None
    ) -> None:
        self.base, self.cap, self.stable_after = base, cap, stable_after
        #: Delays drawn since the last connection that held (the n of the next delay, less one).
        self.attempt = 0
        self._rng = rng or random.Random()

    def ceiling(self, attempt: int) -> float:
        """The largest delay of attempt ``attempt`` (1 = the first retry)."""
        return min(self.cap, self.base * 2.0 ** min(attempt, 30))

    def next(self, lasted: float = 0.0) -> float:
        """The delay after an attempt that lasted ``lasted`` seconds."""
        if lasted >= self.stable_after:
            self.attempt = 0
        self.attempt += 1
        return self._rng.uniform(0.0, self.ceiling(self.attempt))


#: Ends an attempt: takes what ended it (None: it returned) and how long it lasted, and says how
#: many seconds to wait before the next.
AttemptEnded = Callable[[Exception | None, float], Awaitable[float]]


def _nothing(error: Exception) -> bool:
    return False


async def retry_forever(
    attempt: Callable[[], Awaitable[object]],
    ended: AttemptEnded,
    *,
    expected: tuple[type[Exception], ...],
    fatal: Callable[[Exception], bool] = _nothing,
    name: str = "",
) -> NoReturn:
    """Run ``attempt`` again and again until cancelled, waiting what ``ended`` says between.

    An error ``fatal`` picks is raised instead, and ends the loop.
    """
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        error: Exception | None = None
        try:
            await attempt()
        except Exception as exc:
            # The one place that catches what nobody expected: a bug must not end the
            # supervision of every other device (see the module docstring).
            if fatal(exc):
                raise
            if not isinstance(exc, expected):
                log.exception("supervision.unexpected_error", name=name)
            error = exc
        await asyncio.sleep(await ended(error, loop.time() - started))


async def cancel_and_wait(
    tasks: Iterable[asyncio.Task[object]], *, again_after: float = 0.2, attempts: int = 50
) -> list[asyncio.Task[object]]:
    """Cancel ``tasks`` and wait until they are done, cancelling again every ``again_after``
    seconds while one is still running; the tasks still running after ``attempts`` tries.

    Once is not always enough: on Python 3.11 ``asyncio.wait_for`` returns the awaited result
    and drops the ``CancelledError`` when the operation completes in the same moment the
    cancellation lands, the more likely the busier the machine. A task that lost its
    cancellation runs on, and whatever waits for it to end waits for ever.
    """
    pending = [task for task in tasks if not task.done()]
    for _ in range(attempts):
        if not pending:
            break
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=again_after)
        pending = [task for task in pending if not task.done()]
    return pending


async def stop_tasks(*tasks: asyncio.Task[object]) -> None:
    """Cancel ``tasks``, wait until every one has ended, and raise the first error one of them
    ended with, if any.

    What ``cancel(); await`` with ``CancelledError`` suppressed did, without its two faults: a
    task that lost its cancellation is cancelled again (:func:`cancel_and_wait`), and a
    cancellation of the caller landing meanwhile is not suppressed with the tasks'.
    """
    await cancel_and_wait(tasks)
    for task in tasks:
        if task.done() and not task.cancelled() and (error := task.exception()) is not None:
            raise error


async def until_first_failure(tasks: list[asyncio.Task[None]]) -> None:
    """Wait for ``tasks`` until one fails, cancel the others, and raise that failure as itself.

    Not a TaskGroup: a connection's tasks end on a lost connection, and the reconnect loop must
    see that error (an ``MqttError``), not an exception group around it.
    """
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        await cancel_and_wait(tasks)
    for task in done:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
