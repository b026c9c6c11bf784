"""The supervisor that keeps one device running in the reconnect loop, and reports its health.

The loop itself, and its backoff, are :func:`controller.aio.retry_forever` and
:class:`controller.aio.Backoff`: the MQTT links of the daemon and the pit run in the same one.
For a device an attempt is one connection; it ends by raising an error of the
:class:`~drivers.errors.DeviceError` tree. Any other exception is a bug the loop contains (logged
with its traceback, the attempt counted as failed), so a bug in one driver leaves the table
running with that device reconnecting (``docs/drivers.md``, "Errors to raise"). Only a failure of
the device's sink (the journal), which is no fault of the device, ends the loop.

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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NoReturn, Protocol

import structlog

from controller.aio import Backoff, retry_forever, utc_now
from controller.table.inputs import DeviceHealthChanged, DeviceInput, Health
from drivers.errors import DeviceError, DeviceRejectedError, SessionRestartError

log = structlog.get_logger("tablectl.supervisor")

#: Takes one input of a device; returns once it is journaled (the daemon's sink; every device's
#: ``run`` is given one, through its supervisor).
InputSink = Callable[[DeviceInput], Awaitable[None]]


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
            self._session,
            self._ended,
            expected=(DeviceError,),
            fatal=self._sink_failed,
            name=self.device_id,
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
