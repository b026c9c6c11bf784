"""The table's devices: each under the one supervision loop, their health, and their commands.

Each configured device (a :class:`~drivers.contract.Device`) runs under a
:class:`~drivers.supervisor.Supervisor` of its own: when its connection fails the device is
reported ``reconnecting`` (``failed`` after ten attempts in a row) and restarted after a
full-jitter backoff (the daemon's ``device_restart_min`` and ``device_restart_max``, unless the
driver's options say otherwise). Only changes of health go to the core, which turns them into
``device.status`` events.

The device commands the table needs (shuffle, dispense, reveal; see
:mod:`controller.shell.dispatch`) go out from one loop: only to a device that has been asked
where it is since its connection (re)started, never twice once a device took or refused one as
done, and again after ``dispatch_retry`` seconds when a device could not take it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from controller.config import DaemonSection
from controller.shell import logging as shell_logging
from controller.shell.dispatch import Dispatch
from controller.shell.table import ShutdownError, TableRunner
from controller.table.inputs import DeviceHealthChanged, DeviceInput, Health, Zone
from controller.table.watch import zones_in_play
from drivers.contract import Device, DeviceStatus
from drivers.errors import AlreadyDoneError, DeviceError
from drivers.supervisor import RestartPolicy

log = structlog.get_logger("tablectl.devices")

Publish = Callable[[str, dict[str, Any]], None]


class Devices:
    """Every configured device of the table, supervised."""

    def __init__(
        self,
        devices: dict[str, Device],
        runner: TableRunner,
        config: DaemonSection,
        publish: Publish,
    ) -> None:
        self.devices = devices
        self.runner = runner
        self.config = config
        self._publish = publish
        self.health: dict[str, dict[str, Any]] = {}
        #: Takes an input away from the core (True): the station's badge reads.
        self.divert: Callable[[DeviceInput], bool] = lambda _: False
        self.wake = asyncio.Event()
        self._had_outstanding = False
        self._expected: frozenset[Zone] | None = None
        self._sent: set[int] = set()
        self._attempted: set[int] = set()  # the commands this process tried to send
        #: device → the connection (its supervisor's count of them) it was last asked in.
        self._queried: dict[str, int] = {}
        policy = RestartPolicy(config.device_restart_min, config.device_restart_max)
        self.supervisors = {d: device.supervise(self.sink, policy) for d, device in devices.items()}

    async def sink(self, item: DeviceInput) -> None:
        """Where every device's inputs go: into the core, then a health onto its device topic.

        While the journal is full the input waits here: the driver acknowledges it only once
        this returns, so the device keeps it until there is room again.
        """
        if self.divert(item):
            return
        try:
            await self.runner.submit_when_writable(item)
        except ShutdownError:
            await asyncio.Event().wait()  # stopping: the task is about to be cancelled
        if isinstance(item, DeviceHealthChanged):
            device = self.devices.get(item.device)
            self.set_device(item.device, device, item.health.value, item.approved, item.detail)

    def table_changed(self) -> None:
        """The table changed: the dispatch loop looks at the outstanding commands again, if
        there are or were any or a device is still to be asked where it is (not for every
        event of a table that commands nothing); and every device hears which zones the hand
        can change now, when they changed (:meth:`~drivers.contract.Device.expect`)."""
        outstanding = bool(self.runner.planner.outstanding)
        if outstanding or self._had_outstanding or not all(self._asked(d) for d in self.devices):
            self.wake.set()
        self._had_outstanding = outstanding
        zones = zones_in_play(self.runner.state)
        if zones != self._expected:
            self._expected = zones
            for device in self.devices.values():
                device.expect(zones)

    async def supervise(self, device_id: str) -> None:
        """Run one device for ever (see :class:`~drivers.supervisor.Supervisor`)."""
        shell_logging.bind_device(device_id)
        await self.supervisors[device_id].run()

    async def report(self, device_id: str, health: Health, detail: str) -> None:
        """Report a device's health to the core when it changed."""
        await self.supervisors[device_id].report(health, detail=detail)

    def _asked(self, device_id: str) -> bool:
        """Whether the device was asked where it is since its connection (re)started."""
        return self._queried.get(device_id) == self.supervisors[device_id].sessions

    async def query_all(self) -> None:
        """Ask every device where it is; mark the outstanding commands it already carried out."""
        timeout = self.config.device_query_timeout

        async def query(device_id: str, device: Device) -> None:
            session = self.supervisors[device_id].sessions
            try:
                async with asyncio.timeout(timeout):
                    status = await device.query()
            except (TimeoutError, DeviceError) as exc:
                log.warning("device.query_failed", device=device_id, error=str(exc) or "timeout")
                return
            self._queried[device_id] = session
            known = self._known_decks()
            for dispatch in self.runner.planner.outstanding.values():
                if (
                    dispatch.device == device_id
                    and self._may_have_reached_a_device(dispatch)
                    and _carried_out(dispatch, status, known)
                ):
                    self._sent.add(dispatch.id)
            log.info(
                "device.queried",
                device=device_id,
                online=status.online,
                shuffle_id=status.shuffle_id,
                detail=status.detail,
            )

        # A device that says when it is usable is asked once it has said so: before that (every
        # start, every reconnect) the question can only fail, and would be logged as if the
        # device had let the table down. Its ONLINE report is an input, which wakes the
        # dispatch loop, which asks it then.
        ready = {
            d: device
            for d, device in self.devices.items()
            if not device.reports_health or self.supervisors[d].health is Health.ONLINE
        }
        await asyncio.gather(*(query(d, device) for d, device in ready.items()))

    def _known_decks(self) -> set[int]:
        """The decks the table has seen: the one it holds, those the hand and the last hand
        dealt from, those still to be revealed and those revealed lately. A shuffler still on
        one of them has not shuffled since (a hand's end forgets the table's deck, so the
        shuffle the next hand needs names none)."""
        state = self.runner.state
        planner = self.runner.planner
        known = {*planner.in_play, *planner.revealed, *(deck.shuffle_id for deck in state.audit)}
        for hand in (state.hand, state.last_hand):
            if hand is not None and hand.deal.shuffle_id is not None:
                known.add(hand.deal.shuffle_id)
        if state.deck.shuffle_id is not None:
            known.add(state.deck.shuffle_id)
        return known

    def _may_have_reached_a_device(self, dispatch: Dispatch) -> bool:
        """Whether the command was ever sent: by this process, or by the run that journaled it.

        One that never was cannot have been carried out, whatever the device says: a shuffle
        needed before the shuffler was first reached is sent, even though the device reports a
        deck the table has never seen (shuffled before this table knew it, or left from another
        table), which would otherwise pass for it and hold the hand for ever.
        """
        return dispatch.id in self._attempted or dispatch.id in self.runner.planner.inherited

    async def dispatch_loop(self) -> None:
        """Send outstanding device commands; retry the ones a device could not take."""
        retry = self.config.dispatch_retry
        space = self.runner.writer.space
        while True:
            self.wake.clear()
            # Degraded (the journal's disk is full): what a device did now could not be
            # journaled, so no command goes out until there is room again.
            await space.writable.wait()
            if not all(self._asked(d) for d in self.devices):
                await self.query_all()
            outstanding = list(self.runner.planner.outstanding.values())
            # a command no longer outstanding is never sent again: forget it (a table runs for
            # years, ten commands a hand)
            ids = {d.id for d in outstanding}
            self._sent.intersection_update(ids)
            self._attempted.intersection_update(ids)
            for dispatch in outstanding:
                if dispatch.id in self._sent or not self._asked(dispatch.device):
                    continue
                if space.full:
                    break
                await self._send(dispatch)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(retry):
                    await self.wake.wait()

    async def _send(self, dispatch: Dispatch) -> None:
        device = self.devices.get(dispatch.device)
        if device is None:
            return
        need = dispatch.need
        self._attempted.add(dispatch.id)  # from here on the device may have carried it out
        try:
            if need.kind == "shuffle":
                await device.shuffle(dispatch.id)
            elif need.kind == "dispense":
                assert need.shuffle_id is not None
                assert dispatch.group is not None
                await device.dispense(need.shuffle_id, dispatch.group, dispatch.request)
            else:
                assert need.shuffle_id is not None
                await device.reveal(need.shuffle_id)
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
        device: Device | None,
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
        if device is not None:
            body["identity"] = device.describe()
        self.health[device_id] = body
        self._publish(device_id, body)


def _carried_out(dispatch: Dispatch, status: DeviceStatus, known: set[int]) -> bool:
    """Whether the device already did ``dispatch``, by what it reports: a dispense whose group
    it lists, a shuffle of a deck the table has not seen (``known``: the decks it has)."""
    need = dispatch.need
    if need.kind == "dispense":
        return (
            status.groups is not None
            and status.shuffle_id == need.shuffle_id
            and dispatch.group in status.groups
        )
    if need.kind == "shuffle":
        return (
            status.shuffle_id is not None
            and status.shuffle_id != need.shuffle_id
            and status.shuffle_id not in known
        )
    return False
