"""A supervisor per device: run sessions, reconnect with full-jitter backoff, report health.

A *session* is a coroutine that connects, identifies, and returns or raises when the connection
ends. The supervisor runs it in a loop. It knows nothing about a device's protocol; sessions tell
it how they are doing through :meth:`Supervisor.set_health`, and it reports every change of
health as a :class:`~controller.table.inputs.DeviceHealthChanged` input:

* ``online`` — the session is up (and the device approved);
* ``stale`` — the device stopped answering heartbeats but the port is still open;
* ``reconnecting`` — the connection ended (or the device rebooted); a new session is coming;
* ``failed`` — ``fail_after`` attempts in a row failed; retries go on at the backoff cap;
* ``rejected`` — the device is not approved; the table must not use it.

Only :class:`~drivers.errors.DeviceError` ends a session quietly: anything else is a bug and
propagates to the daemon's task group.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import structlog

from controller.table.inputs import DeviceHealthChanged, DeviceInput, Health
from drivers.errors import DeviceError, DeviceRejectedError

log = structlog.get_logger("tablectl.supervisor")

InputSink = Callable[[DeviceInput], Awaitable[None]]
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The host's receive time, aware UTC."""
    return datetime.now(UTC)


class SessionRestartError(DeviceError):
    """The session ended on purpose (the device rebooted); reconnect at once."""


class Backoff:
    """Exponential backoff with full jitter: a delay drawn from [0, min(cap, base * 2**n)]."""

    def __init__(self, base: float = 0.25, cap: float = 5.0, rng: random.Random | None = None):
        self.base = base
        self.cap = cap
        self._rng = rng or random.Random()

    def ceiling(self, attempt: int) -> float:
        """The largest delay of attempt ``attempt`` (1 = the first retry)."""
        return min(self.cap, self.base * 2.0 ** min(attempt, 30))

    def delay(self, attempt: int) -> float:
        """A delay for attempt ``attempt``."""
        return self._rng.uniform(0.0, self.ceiling(attempt))


Session = Callable[["Supervisor"], Awaitable[None]]


class Supervisor:
    """Keeps one device connected and reports its health."""

    def __init__(
        self,
        device_id: str,
        session: Session,
        sink: InputSink,
        *,
        backoff: Backoff | None = None,
        fail_after: int = 10,
        stable_after: float = 10.0,
        rejected_retry: float = 30.0,
        clock: Clock = utc_now,
    ) -> None:
        self.device_id = device_id
        self._session = session
        self._sink = sink
        self.backoff = backoff or Backoff()
        self.fail_after = fail_after
        self.stable_after = stable_after
        self.rejected_retry = rejected_retry
        self._clock = clock
        self.health: Health | None = None
        self.approved: bool | None = None
        self.detail = ""
        self.attempts = 0
        #: Sessions started so far (each connection attempt is one).
        self.sessions = 0
        self._online_since: float | None = None
        self._changed = asyncio.Condition()

    async def set_health(
        self, health: Health, approved: bool | None = None, detail: str = ""
    ) -> None:
        """Record the device's health; report it when it changed."""
        if health is Health.ONLINE:
            self._online_since = asyncio.get_running_loop().time()
        if (health, approved) == (self.health, self.approved) and detail == self.detail:
            return
        changed = health is not self.health or approved != self.approved
        self.health, self.approved, self.detail = health, approved, detail
        async with self._changed:
            self._changed.notify_all()
        if changed:
            log.info("device.health", device=self.device_id, health=health.value, detail=detail)
            await self._sink(
                DeviceHealthChanged(self._clock(), self.device_id, health, approved, detail)
            )

    async def wait_for(self, *healths: Health, timeout: float | None = None) -> Health:
        """Wait until the health is one of ``healths``; return it."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: self.health in healths)
            assert self.health is not None
            return self.health

    async def run(self) -> None:
        """Supervise until cancelled."""
        loop = asyncio.get_running_loop()
        failures = 0
        while True:
            self._online_since = None
            self.sessions += 1
            try:
                await self._session(self)
                error: DeviceError = DeviceError("the connection ended")
            except SessionRestartError as exc:
                # Not a failure: reconnect at once, but the device is not usable until the new
                # session has identified, approved and configured it again.
                log.info("device.restart", device=self.device_id, reason=str(exc))
                await self.set_health(Health.RECONNECTING, detail=str(exc))
                continue
            except DeviceRejectedError as exc:
                log.error("device.rejected", device=self.device_id, reason=str(exc))
                await self.set_health(Health.REJECTED, approved=False, detail=str(exc))
                await asyncio.sleep(self.rejected_retry)
                continue
            except DeviceError as exc:
                error = exc
            online = self._online_since
            if online is not None and loop.time() - online >= self.stable_after:
                failures = 0
            failures += 1
            self.attempts = failures
            health = Health.FAILED if failures >= self.fail_after else Health.RECONNECTING
            log.warning("device.down", device=self.device_id, error=str(error), attempt=failures)
            await self.set_health(health, detail=str(error))
            await asyncio.sleep(self.backoff.delay(failures))
