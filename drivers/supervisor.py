"""The one reconnect loop of tablectl, its backoff, and the supervisor that runs a device with it.

:func:`retry_forever` runs an *attempt* (one connection: to a device, to the broker) again and
again, for ever: when the attempt ends, a callback says how long to wait (usually the next delay
of a :class:`Backoff`), and the loop waits and starts the next. The MQTT link
(``controller/shell/mqtt.py``), every device of the daemon and each PN532 module run in it.

An attempt ends by raising one of the ``expected`` errors (for a device, the
:class:`~drivers.errors.DeviceError` tree). Any other exception is a bug, and the loop contains
it: it is logged with its traceback and the attempt is treated as failed, so a bug in one driver
leaves the table running with that device reconnecting (``docs/drivers.md``, "Errors to raise").
Only what the caller calls ``fatal`` ends the loop: for the MQTT link every unexpected error (the
daemon stops and systemd restarts it), for a device a failure of its sink (the journal), which
is no fault of the device.

:class:`Supervisor` keeps one device running (:class:`~drivers.contract.Device`, or one module of
a PN532 reader) and reports its health as a
:class:`~controller.table.inputs.DeviceHealthChanged` input, only when it changes:

* ``online`` — reported by the device itself once it is usable, or, for a device that does not
  report its health, at its first input after a restart;
* ``stale`` — reported by the device (it stopped answering, its port still open);
* ``reconnecting`` — the connection ended (or the device rebooted); a new one is coming;
* ``failed`` — ``fail_after`` attempts in a row failed; retries go on at the backoff cap;
* ``rejected`` — the device is not approved; the table must not use it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NoReturn, Protocol

import structlog

from controller.table.inputs import DeviceHealthChanged, DeviceInput, Health
from drivers.errors import DeviceError, DeviceRejectedError, SessionRestartError

if TYPE_CHECKING:
    from drivers.contract import InputSink

log = structlog.get_logger("tablectl.supervisor")


def utc_now() -> datetime:
    """The host's receive time, aware UTC."""
    return datetime.now(UTC)


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
    expected: tuple[type[Exception], ...] = (DeviceError,),
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
    cancellation lands (aiomqtt waits that way), the more likely the busier the machine. A task
    that lost its cancellation runs on, and whatever waits for it to end waits for ever.
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


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """How a device is restarted: backoff, when it counts as failed, how long a reject waits."""

    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    #: Failed attempts in a row before the device is reported ``failed`` (None: never).
    fail_after: int | None = 10
    #: Seconds a connection must last to count as one that held (the backoff starts over).
    stable_after: float = 60.0
    rejected_retry: float = 30.0


class Supervised(Protocol):
    """What the supervisor needs of a device (every Device has it; so has a PN532 module)."""

    @property
    def device_id(self) -> str:
        """The id its inputs and health carry."""

    @property
    def kind(self) -> str:
        """``shuffler``, ``reader`` or ``""``: reported with its health."""

    @property
    def reports_health(self) -> bool:
        """Whether it reports itself ``online`` (else the supervisor does, at its first input)."""

    async def run(self, sink: InputSink) -> None:
        """One connection, until it ends (by raising a DeviceError)."""


class Supervisor:
    """Keeps one device running under :func:`retry_forever` and reports its health."""

    def __init__(
        self,
        device: Supervised,
        sink: InputSink,
        policy: RestartPolicy,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.device = device
        self.device_id = device.device_id
        self.policy = policy
        self.backoff = Backoff(policy.backoff_base, policy.backoff_cap, policy.stable_after, rng)
        self._sink = sink
        self.health: Health | None = None
        self.approved: bool | None = None
        self.detail = ""
        #: Connections started so far (each attempt is one).
        self.sessions = 0
        self._down = False
        self._sink_failure: BaseException | None = None
        self._changed = asyncio.Condition()

    async def run(self) -> NoReturn:
        """Supervise until cancelled."""
        await retry_forever(
            self._session, self._ended, fatal=self._sink_failed, name=self.device_id
        )

    async def report(self, health: Health, approved: bool | None = None, detail: str = "") -> None:
        """Record the device's health; report it to the sink when it changed."""
        kind = self.device.kind
        await self._record(
            DeviceHealthChanged(utc_now(), self.device_id, health, approved, detail, kind)
        )

    async def forward(self, item: DeviceInput) -> None:
        """The sink the device runs with: its inputs, its own health changes deduplicated."""
        if isinstance(item, DeviceHealthChanged) and item.device == self.device_id:
            self._down = False
            await self._record(item)
            return
        if self._down:
            self._down = False
            if not self.device.reports_health:
                await self.report(Health.ONLINE, detail="the device is back")
        await self._deliver(item)

    async def wait_for(self, *healths: Health, timeout: float | None = None) -> Health:
        """Wait until the health is one of ``healths``; return it."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: self.health in healths)
            assert self.health is not None
            return self.health

    async def _session(self) -> None:
        self.sessions += 1
        await self.device.run(self.forward)

    async def _deliver(self, item: DeviceInput) -> None:
        try:
            await self._sink(item)
        except BaseException as exc:
            self._sink_failure = exc  # not the device's fault: see _ended
            raise

    def _sink_failed(self, error: Exception) -> bool:
        # The sink (the journal) failed, not the device: stop loudly. The input was not
        # acknowledged, so the device still holds it for the next host.
        return error is self._sink_failure

    async def _ended(self, error: Exception | None, lasted: float) -> float:
        self._down = True
        if error is None:
            reason = "the connection ended"
        elif isinstance(error, DeviceError):
            reason = str(error)
        else:
            reason = f"internal error: {error!r}"
        if isinstance(error, SessionRestartError):
            # Not a failure: reconnect at once, but the device is not usable until the new
            # connection has identified, approved and configured it again.
            log.info("device.restart", device=self.device_id, reason=reason)
            await self.report(Health.RECONNECTING, detail=reason)
            return 0.0
        if isinstance(error, DeviceRejectedError):
            log.error("device.rejected", device=self.device_id, reason=reason)
            await self.report(Health.REJECTED, approved=False, detail=reason)
            return self.policy.rejected_retry
        delay = self.backoff.next(lasted)
        attempt = self.backoff.attempt
        failing = self.policy.fail_after is not None and attempt >= self.policy.fail_after
        log.warning(
            "device.down", device=self.device_id, error=reason, attempt=attempt, retry_in=delay
        )
        await self.report(Health.FAILED if failing else Health.RECONNECTING, detail=reason)
        return delay

    async def _record(self, item: DeviceHealthChanged) -> None:
        same = (item.health, item.approved) == (self.health, self.approved)
        if same and item.detail == self.detail:
            return
        self.health, self.approved, self.detail = item.health, item.approved, item.detail
        async with self._changed:
            self._changed.notify_all()
        if not same:
            log.info(
                "device.health", device=self.device_id, health=item.health.value, detail=item.detail
            )
            await self._deliver(item)
