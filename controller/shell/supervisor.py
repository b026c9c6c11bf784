"""The table's devices: a restart loop per device, their health, and the commands they get.

Each configured device runs through its :class:`~controller.shell.devices.DeviceSource` in a
loop of its own: when the source fails (``DeviceError``) the loop reports the device
``reconnecting`` (``failed`` after ``FAIL_AFTER`` attempts in a row), waits a full-jitter
backoff and starts it again, and reports it ``online`` with its first input. Only changes of
health go to the core, which turns them into ``device.status`` events.

The device commands the table needs (shuffle, dispense, reveal; see
:mod:`controller.shell.dispatch`) go out from one loop: only to a device that has been asked
where it is since it (re)started, never twice once a device took or refused one as done, and
again after ``dispatch_retry`` seconds when a device could not take it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from controller.config import DaemonSection
from controller.shell import logging as shell_logging
from controller.shell.devices import AlreadyDoneError, DeviceError, DeviceSource, DeviceStatus
from controller.shell.dispatch import Dispatch
from controller.shell.mqtt import Backoff
from controller.shell.table import ShutdownError, TableRunner
from controller.table.inputs import DeviceHealthChanged, DeviceInput, Health

log = structlog.get_logger("tablectl.devices")

FAIL_AFTER = 10
STABLE_AFTER = 60.0

Publish = Callable[[str, dict[str, Any]], None]


class Devices:
    """Every configured device of the table, supervised."""

    def __init__(
        self,
        sources: dict[str, DeviceSource],
        runner: TableRunner,
        config: DaemonSection,
        publish: Publish,
    ) -> None:
        self.sources = sources
        self.runner = runner
        self.config = config
        self._publish = publish
        self.health: dict[str, dict[str, Any]] = {}
        self.wake = asyncio.Event()
        self._sent: set[int] = set()
        self._queried: set[str] = set()

    async def sink(self, item: DeviceInput) -> None:
        try:
            await self.runner.submit(item)
        except ShutdownError:
            await asyncio.Event().wait()  # stopping: the task is about to be cancelled
        if isinstance(item, DeviceHealthChanged):
            source = self.sources.get(item.device)
            self.set_device(item.device, source, item.health.value, item.approved, item.detail)

    async def supervise(self, source: DeviceSource) -> None:
        """Run one source for ever: restart it after a backoff when it fails.

        A failure is reported as the device's health (reconnecting, then failed after
        ``FAIL_AFTER`` attempts in a row), and the first input after a restart as ``online``
        unless the source says so itself. Only a change of health is reported.
        """
        shell_logging.bind_device(source.device_id)
        backoff = Backoff(self.config.device_restart_min, self.config.device_restart_max)
        down = False

        async def sink(item: DeviceInput) -> None:
            nonlocal down
            if down:
                down = False
                own = isinstance(item, DeviceHealthChanged) and item.device == source.device_id
                if not own:
                    await self.report(source.device_id, Health.ONLINE, "the device is back")
            await self.sink(item)

        while True:
            started = time.monotonic()
            try:
                await source.run(sink)
                error = "the device source ended"
            except DeviceError as exc:
                error = str(exc)
            down = True
            self._queried.discard(source.device_id)
            if time.monotonic() - started > STABLE_AFTER:
                backoff.reset()
            delay = backoff.next()
            health = Health.FAILED if backoff.attempt >= FAIL_AFTER else Health.RECONNECTING
            log.warning("device.down", error=error, attempt=backoff.attempt, retry_in=delay)
            await self.report(source.device_id, health, error)
            await asyncio.sleep(delay)

    async def report(self, device_id: str, health: Health, detail: str) -> None:
        """Report a device's health to the core when it changed."""
        if self.health.get(device_id, {}).get("health") == health.value:
            return
        await self.sink(DeviceHealthChanged(datetime.now(UTC), device_id, health, detail=detail))

    async def query_all(self) -> None:
        """Ask every device where it is; mark the outstanding commands it already carried out."""
        timeout = self.config.device_query_timeout

        async def query(device_id: str, source: DeviceSource) -> None:
            try:
                async with asyncio.timeout(timeout):
                    status = await source.query()
            except (TimeoutError, DeviceError) as exc:
                log.warning("device.query_failed", device=device_id, error=str(exc) or "timeout")
                return
            self._queried.add(device_id)
            for dispatch in self.runner.planner.outstanding.values():
                if dispatch.device == device_id and _carried_out(dispatch, status):
                    self._sent.add(dispatch.id)
            log.info(
                "device.queried",
                device=device_id,
                online=status.online,
                shuffle_id=status.shuffle_id,
                detail=status.detail,
            )

        await asyncio.gather(*(query(d, s) for d, s in self.sources.items()))

    async def dispatch_loop(self) -> None:
        """Send outstanding device commands; retry the ones a device could not take."""
        retry = self.config.dispatch_retry
        while True:
            self.wake.clear()
            if len(self._queried) < len(self.sources):
                await self.query_all()
            for dispatch in list(self.runner.planner.outstanding.values()):
                if dispatch.id in self._sent or dispatch.device not in self._queried:
                    continue
                await self._send(dispatch)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(retry):
                    await self.wake.wait()

    async def _send(self, dispatch: Dispatch) -> None:
        source = self.sources.get(dispatch.device)
        if source is None:
            return
        need = dispatch.need
        try:
            if need.kind == "shuffle":
                await source.shuffle(dispatch.id)
            elif need.kind == "dispense":
                assert need.shuffle_id is not None
                assert dispatch.group is not None
                await source.dispense(need.shuffle_id, dispatch.group, dispatch.request)
            else:
                assert need.shuffle_id is not None
                await source.reveal(need.shuffle_id)
        except AlreadyDoneError as exc:
            log.info("device.command_already_done", dispatch=dispatch.id, detail=str(exc))
        except DeviceError as exc:
            log.warning(
                "device.command_failed", dispatch=dispatch.id, kind=need.kind, error=str(exc)
            )
            if need.kind == "reveal":
                self.runner.planner.done(need)
            return
        self._sent.add(dispatch.id)
        log.info(
            "device.command_sent",
            dispatch=dispatch.id,
            kind=need.kind,
            shuffle_id=need.shuffle_id,
            group=dispatch.group,
        )

    def set_device(
        self,
        device_id: str,
        source: DeviceSource | None,
        health: str | None,
        approved: bool | None = None,
        detail: str = "",
    ) -> None:
        body: dict[str, Any] = {
            "device": device_id,
            "health": health,
            "approved": approved,
            "detail": detail,
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        if source is not None:
            body["identity"] = source.describe()
        self.health[device_id] = body
        self._publish(device_id, body)


def _carried_out(dispatch: Dispatch, status: DeviceStatus) -> bool:
    need = dispatch.need
    if need.kind == "dispense":
        return (
            status.groups is not None
            and status.shuffle_id == need.shuffle_id
            and dispatch.group in status.groups
        )
    if need.kind == "shuffle":
        return status.shuffle_id is not None and status.shuffle_id != need.shuffle_id
    return False
