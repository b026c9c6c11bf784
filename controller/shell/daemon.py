"""``tablectl run``: the daemon, wiring devices, core, journal and broker together.

Start-up, in order: open the journal and replay it through the core (the exact state before the
last stop, and the device commands still outstanding) and check its integrity (the chain from
the last verified head, the replay against the journal: :mod:`controller.shell.integrity`); start
the broker link; if the journal is in doubt, hold: no device, no input, only maintenance's
``journal_accept``; then start the devices, ask every device where it is before anything is
resent, accept dealer requests and tell systemd ``READY=1``. A full journal disk does not stop
the start but degrades the table until there is room (:mod:`controller.shell.space`). Both may
apply at once: the full disk is named first, since nothing can be journaled, not even
maintenance's decision.

Those who follow the table on the console socket (a dealer's station) hear of every change
(``daemon_watch.py``, :mod:`controller.shell.watch`).

Everything runs in one TaskGroup: the broker link, one restart loop per device, the device
command sender, the watch of the journal's disk (:mod:`controller.shell.space`: a full disk makes
the table degraded, not dead), the journal's verification every minute
(:mod:`controller.shell.integrity`), the journal's retention (:mod:`controller.shell.retention`:
closed hands into archive segments, pruning within the budget), the metrics when enabled, and
the watchdog. A bug in any of
them ends the daemon (systemd restarts it; the journal makes that safe). A device that fails is
restarted after a full-jitter backoff and its health reported as an input, so the pit sees
``device.status`` events.

SIGTERM (or SIGINT) shuts down in order, each step bounded: stop the inputs and every other
source of journal writes (devices, requests, the clock, the disk watch, the integrity checks),
let the input being committed finish, publish the retained ``offline`` status, close the ports,
checkpoint the journal.

This module wires the daemon and runs its life, start to stop; :class:`Daemon` is made of it and
two parts: the inputs it gives the core itself (``daemon_inputs.py``: the requests, the shed
report, the clock) and what it reports (``daemon_status.py``: the retained snapshots, the
alarms, ``STATUS=``, the watchdog's check). Its journal is opened and its settings read from the
config in ``daemon_setup.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from datetime import UTC, datetime
from typing import Any

import structlog

from controller.aio import cancel_and_wait
from controller.config import TableConfig
from controller.shell import logging as shell_logging
from controller.shell.chain import UNREADABLE, damaged, unreadable
from controller.shell.commands import CommandHandler
from controller.shell.console import serve_console
from controller.shell.daemon_inputs import ANY_CHANGE, DaemonInputs
from controller.shell.daemon_setup import (
    open_journal,
    open_when_room,
    policy_of,
    rates_of,
    retention_config,
    space_config,
)
from controller.shell.daemon_status import STUCK_COMMIT, DaemonStatus
from controller.shell.daemon_watch import DaemonWatch
from controller.shell.gate import Gate
from controller.shell.intake import Intake
from controller.shell.integrity import Integrity
from controller.shell.journal import Journal
from controller.shell.metrics import Metrics
from controller.shell.mqtt import MqttLink
from controller.shell.notify import feed_watchdog, notify, watchdog_interval
from controller.shell.replay import Replayer
from controller.shell.retention import Retention
from controller.shell.retention_task import RetentionTask
from controller.shell.space import JournalFullError, JournalSpace, last_recovered
from controller.shell.supervisor import Devices
from controller.shell.table import RecoveryReport, TableRunner, journal_table
from controller.shell.topics import Topics
from controller.shell.writer import JournalWriter
from controller.table.event_types import JournalDisk
from controller.table.inputs import ControllerRestarted
from drivers.contract import Device, DeviceContext
from drivers.errors import DeviceError
from drivers.registry import build_device

__all__ = [
    "HOLD_EXTEND",
    "HOLD_PING",
    "STUCK_COMMIT",
    "Daemon",
    "open_journal",
    "policy_of",
    "rates_of",
    "retention_config",
    "run_daemon",
    "space_config",
]

log = structlog.get_logger("tablectl.daemon")

HOLD_PING = 10.0  # seconds between two start-timeout extensions while held
HOLD_EXTEND = 30.0  # how far each one pushes systemd's start timeout


class Daemon(DaemonStatus, DaemonInputs, DaemonWatch):
    """One table controller process: its wiring and its life here, the rest in the parts it is
    made of (the module docstring lists them)."""

    def __init__(self, config: TableConfig, journal: Journal | None = None) -> None:
        self.config = config
        table = config.table
        self.topics = Topics(config.broker.prefix, table.id)
        if journal is None:
            journal = open_journal(config)
        if journal.genesis != table.genesis():
            log.warning(
                "journal.genesis_differs",
                detail="the table section changed since the journal began; the journal decides",
            )
        manifest = table.manifest()
        self.space = JournalSpace(journal.path, space_config(config))
        self.writer = JournalWriter(journal, self.space)
        self.runner = TableRunner(
            self.writer,
            journal_table(journal, manifest),
            table.shuffler,
            host_paced=table.dispense == "host",
        )
        context = DeviceContext(table.id, manifest)
        devices: dict[str, Device] = {
            device_id: build_device(device_id, section.driver, section.options, context)
            for device_id, section in config.devices.items()
            if section.enabled
        }
        self.simulated = any(d.describe().get("simulated") for d in devices.values())
        security = config.security
        self.link = MqttLink(
            config.broker,
            self.topics,
            self.writer,
            client_id=config.client_id,
            simulated=self.simulated,
            historical_after=config.daemon.historical_after,
            require_signed=security.require_signed,
        )
        self.gate = Gate(table.id, policy_of(security), security.load_keyring())
        self.intake = Intake(self.gate, rates_of(security))
        self.integrity = Integrity(self.runner, table.id, self._alarms_changed)
        replayer = Replayer(
            self.writer,
            self.topics,
            lambda message: self.link.send(message.topic, message.payload, message.properties),
        )
        self.commands = CommandHandler(self.runner, self.gate, self.integrity, replayer)
        self.ready = asyncio.Event()
        self.stop_requested = asyncio.Event()
        self.devices = Devices(
            devices,
            self.runner,
            config.daemon,
            self._device_changed,
        )
        self.retention = Retention(
            journal,
            retention_config(config),
            may_archive=lambda: not self.integrity.alarms,  # not while the chain is in doubt
            pressed=lambda: self.space.full or self.space.low,
        )
        self.retention_task = RetentionTask(self.retention, self.writer.call, self._retained)
        self.metrics = Metrics(
            self.space, devices, integrity=self.integrity, retention=self.retention
        )
        self._counted_seq = self.runner.last_seq
        self._tick_wake = asyncio.Event()
        self._tick_due = ANY_CHANGE
        self._tasks: list[asyncio.Task[None]] = []
        self._device_tasks: list[asyncio.Task[None]] = []
        self._status = ""
        self.started = time.monotonic()
        self.console: asyncio.Server | None = None
        self._watch_setup()
        self.commands.on_stored = self._watch_stored

    # ------------------------------------------------------------------ main

    async def run(self) -> int:
        """Run until SIGTERM/SIGINT; return the exit status."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop_requested.set)
        shell_logging.CONTEXT.table = self.config.table.id
        report = self.prepare()
        log.info(
            "journal.recovered",
            inputs=report.inputs,
            events=report.events,
            diverged=len(report.diverged),
            accepted=report.accepted,
            from_snapshot_after=report.snapshot,
            snapshot_format=report.snapshot_format or None,
            snapshots_unreadable=report.unreadable or None,
            outstanding=self.runner.planner.summary(),
            epoch=self.writer.journal.epoch,
        )
        self.link.on_head = self.integrity.check_head
        # An event journaled during a broker outage is historical; until the first connection
        # is up (its birth published, the requests subscribed) there is no outage yet, only
        # start-up, and the age of the event decides.
        self.runner.connected = lambda: self.link.connected.is_set() or not self.link.ever_connected
        self.runner.listeners.append(self._changed)
        self.link.on_request = self._offer
        self._preload_nonces()
        if not self.config.security.require_signed:
            log.warning(
                "security.unsigned_requests_accepted",
                roles=sorted(self.config.security.unsigned_roles),
                detail="[security] require_signed = false: anyone on the broker may give these "
                "roles' commands; the birth message says so",
            )
        self.link.on_change = self._status_changed
        self.space.on_change = self._alarms_changed
        self.space.measure()
        self._alarms_changed()
        journal = self.writer.journal
        recorded = await self.writer.call(journal.event_bodies, JournalDisk.TYPE)
        await self.space.resume(self._record_event, last_recovered(recorded))
        self._changed()
        for device_id, device in self.devices.devices.items():
            self.devices.set_device(device_id, device, health=None)
        try:
            async with asyncio.TaskGroup() as group:
                if self.config.broker.enabled:
                    self._spawn(group, self.link.run(), "mqtt")
                else:
                    log.warning("mqtt.disabled", detail="no broker: events stay in the journal")
                self._spawn(group, self._serve_requests(), "requests")
                self._spawn(group, self._report_shed(), "shed")
                self._spawn(group, self.space.watch(self._record_event), "disk")
                metrics = self.config.metrics
                if metrics.enabled and self.metrics.serve(metrics.host, metrics.port):
                    self._spawn(group, self.metrics.refresh(self.writer), "metrics")
                if self.config.daemon.console is not None:
                    self.console = await serve_console(
                        self.config.daemon.console,
                        self._request,
                        lambda: self.link.accept_requests,
                        watchers=self.watchers,
                        gate=self.gate,
                    )
                if not self.integrity.held or await self._held(group):
                    await self._start_table(group, restarted=report.inputs > 0)
                    await self.stop_requested.wait()
                await self.shutdown()
                await _cancel_all(self._tasks)
        finally:
            self.metrics.close()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        await self.writer.close(checkpoint=True)
        log.info("daemon.stopped")
        return 0

    def prepare(self) -> RecoveryReport:
        """Replay the journal and check its integrity (before the loop serves anything);
        :class:`JournalDamagedError` when SQLite finds the file damaged meanwhile."""
        try:
            report = self.runner.recover()
            self.integrity.at_start(report)
        except UNREADABLE as exc:
            if not unreadable(exc):
                raise
            raise damaged(self.writer.journal.path, exc) from None
        return report

    async def _start_table(self, group: asyncio.TaskGroup, *, restarted: bool) -> None:
        """Devices, dispatches, the clock and the watchdog, then READY=1 (the journal holds)."""
        for device_id in self.devices.devices:
            supervised = self.devices.supervise(device_id)
            self._device_tasks.append(self._spawn(group, supervised, f"device:{device_id}"))
        await self.devices.query_all()
        if restarted:
            try:
                await self._restarted()
            except JournalFullError:  # journaled once there is room; READY meanwhile
                self._spawn(group, self._restarted(wait=True), "restarted")
        self._spawn(group, self.devices.dispatch_loop(), "dispatch")
        self._spawn(group, self._ticker(), "ticker")
        self._spawn(group, self.integrity.watch(), "integrity")
        self._spawn(group, self.retention_task.run(), "retention")
        interval = watchdog_interval()
        if interval is not None:
            self._spawn(group, feed_watchdog(self.healthy, interval), "watchdog")
        self.link.accept_requests = True
        self.ready.set()
        self._status = self.status_line()
        notify("READY=1", f"STATUS={self._status}")
        log.info("daemon.ready", seconds=round(time.monotonic() - self.started, 3))

    async def _held(self, group: asyncio.TaskGroup) -> bool:
        """The integrity alarm holds the table: announce it, take maintenance's request only,
        and keep systemd's start timeout from running out meanwhile (no READY=1: the table is
        not ready). True once maintenance decided; False when told to stop first.

        The alarm is journaled by a task of its own: on a full disk it waits for room, and the
        hold (the status topic, ``STATUS=``, the start timeout) must not wait with it.
        """
        self._spawn(group, self.integrity.announce_when_room(), "announce")
        self.link.accept_requests = True  # the handler refuses all but journal_accept
        log.critical("daemon.held", alarm=self.integrity.alarm_line)
        decided = asyncio.ensure_future(self.integrity.decided.wait())
        stop = asyncio.ensure_future(self.stop_requested.wait())
        try:
            while not decided.done() and not stop.done():
                notify(
                    f"EXTEND_TIMEOUT_USEC={int(HOLD_EXTEND * 1e6)}", f"STATUS={self.status_line()}"
                )
                await asyncio.wait(
                    {decided, stop}, timeout=HOLD_PING, return_when=asyncio.FIRST_COMPLETED
                )
        finally:
            for waiter in (decided, stop):
                waiter.cancel()
        if not self.integrity.decided.is_set():
            return False
        log.warning("daemon.held_released")
        self.link.accept_requests = False  # until READY, as at every start
        return True

    async def _restarted(self, *, wait: bool = False) -> None:
        """Tell the core the controller came back (CTRL-POWER), once the devices were asked.

        With ``wait``, after the journal has room again (the start found the disk full).
        """
        item = ControllerRestarted(datetime.now(UTC), "controller")
        if self.runner.accepts(item):
            if wait:
                await self.runner.submit_when_writable(item)
            else:
                await self.runner.submit(item)

    def _spawn(self, group: asyncio.TaskGroup, coro: Any, name: str) -> asyncio.Task[None]:
        task: asyncio.Task[None] = group.create_task(coro, name=name)
        self._tasks.append(task)
        return task

    async def shutdown(self) -> None:
        """Stop in order: inputs, the commit in flight, offline status, ports (bounded steps)."""
        step = self.config.daemon.shutdown_step
        notify("STOPPING=1", "STATUS=stopping")
        log.info("daemon.stopping")
        self.link.accept_requests = False
        if self.console is not None:
            self.console.close()
        self.watchers.close()
        # Every source of inputs and journal writes stops first: a tick, a held restart, the
        # disk watch's retry or the integrity checks' alarms and notes must not reach a runner
        # that no longer takes inputs, nor a journal about to close.
        writers = (
            "dispatch",
            "ticker",
            "restarted",
            "disk",
            "shed",
            "integrity",
            "announce",
            "retention",
        )
        await _cancel_all(
            [*self._device_tasks, *(t for t in self._tasks if t.get_name() in writers)]
        )
        async with asyncio.timeout(step * 2):
            await self.runner.stop()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(step):
                while self.link.connected.is_set() and not await self.link.drained():
                    self.link.wake.set()
                    await asyncio.sleep(0.02)
        sent = await self.link.goodbye(step)
        log.info("mqtt.offline_published" if sent else "mqtt.offline_not_published")
        for device in self.devices.devices.values():
            # close() raises only the device error tree (docs/drivers.md, "Errors to raise").
            with contextlib.suppress(DeviceError, TimeoutError):
                async with asyncio.timeout(step):
                    await device.close()


async def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait until they are done (a task that lost its cancellation would
    keep the daemon from exiting: controller/aio.py, cancel_and_wait)."""
    stuck = await cancel_and_wait(tasks)
    if stuck:
        log.error("daemon.tasks_not_cancelled", tasks=[t.get_name() for t in stuck])


async def run_daemon(config: TableConfig) -> int:
    """Run the daemon of ``config`` until it is told to stop.

    A journal that cannot even be opened for want of space (SQLite needs a few pages beside the
    database) is opened again every ``[journal] disk_poll`` seconds: the daemon waits, saying so
    in ``STATUS=`` and extending systemd's start timeout, instead of failing into a restart loop.
    """
    journal = await open_when_room(config)
    daemon = Daemon(config, journal)
    return await daemon.run()
