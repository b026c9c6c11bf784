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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
import time
from datetime import UTC, datetime
from typing import Any

import structlog

from controller.aio import cancel_and_wait
from controller.config import SecuritySection, TableConfig
from controller.shell import logging as shell_logging
from controller.shell.chain import UNREADABLE, damaged, unreadable
from controller.shell.commands import CommandHandler, shed_event
from controller.shell.console import serve_console
from controller.shell.gate import Gate, Limits, Policy, bounded_text
from controller.shell.intake import Intake, Rates, Reply, Urgency
from controller.shell.integrity import Integrity
from controller.shell.journal import Journal
from controller.shell.metrics import Metrics
from controller.shell.mqtt import MqttLink
from controller.shell.notify import feed_watchdog, notify, watchdog_interval
from controller.shell.replay import Replayer
from controller.shell.retention import Retention, RetentionConfig, RoundReport
from controller.shell.retention_task import RetentionTask
from controller.shell.snapshot import snapshot
from controller.shell.space import (
    JournalFullError,
    JournalSpace,
    SpaceConfig,
    free_bytes,
    is_full,
    last_recovered,
)
from controller.shell.supervisor import Devices
from controller.shell.table import RecoveryReport, ShutdownError, TableRunner, journal_table
from controller.shell.topics import Topics
from controller.shell.writer import JournalWriter
from controller.table.engine import deadline
from controller.table.event_types import JournalDisk
from controller.table.events import TableEvent
from controller.table.inputs import (
    ControllerRestarted,
    Tick,
)
from drivers.contract import Device, DeviceContext
from drivers.errors import DeviceError
from drivers.registry import build_device

log = structlog.get_logger("tablectl.daemon")

STUCK_COMMIT = 10.0
_ANY_CHANGE = object()  # the ticker waits for no deadline: any change of state wakes it
HOLD_PING = 10.0  # seconds between two start-timeout extensions while held
HOLD_EXTEND = 30.0  # how far each one pushes systemd's start timeout


class Daemon:
    """One table controller process."""

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
        #: The deadline the ticker waits for: a change of state wakes it only when the state's
        #: deadline is another.
        self._tick_due: object = _ANY_CHANGE
        self._tasks: list[asyncio.Task[None]] = []
        self._device_tasks: list[asyncio.Task[None]] = []
        self._status = ""
        self.started = time.monotonic()
        self.console: asyncio.Server | None = None

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
                        self.config.daemon.console, self._request, lambda: self.link.accept_requests
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

    async def _retained(self, report: RoundReport) -> None:
        """A retention round ended: raise or clear its alarm."""
        await self.space.set_retention(report.alarm(), report.waiting_bytes, self._record_event)

    async def _record_event(self, event: TableEvent) -> None:
        """Journal an event no input caused (the journal's disk)."""
        await self.runner.record_rejection(event, None)

    async def _ticker(self) -> None:
        """Send the core a Tick when a deadline of its state falls due.

        The core names its next deadline (``controller.table.engine.deadline``), e.g. the
        readers' settle time after the deal.
        """
        while True:
            self._tick_wake.clear()
            due = deadline(self.runner.state)
            self._tick_due = due
            delay = None if due is None else (due - datetime.now(UTC)).total_seconds()
            if delay is not None and delay <= 0:
                tick = Tick(datetime.now(UTC), "clock")
                if self.runner.accepts(tick):
                    await self.runner.submit_when_writable(tick)
                    continue
                delay = None
                self._tick_due = _ANY_CHANGE  # the core may take the tick after any input
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._tick_wake.wait()

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

    # ------------------------------------------------------------------ devices

    # ------------------------------------------------------------------ requests and state

    def _offer(
        self,
        verb: str,
        payload: bytes,
        reply: Reply,
        retained: bool = False,
    ) -> None:
        """A request from the broker: into the intake, answered when the worker gets to it."""
        self.intake.offer(verb, payload, datetime.now(UTC), reply, retained=retained)

    async def _request(self, verb: str, payload: bytes) -> dict[str, Any]:
        """A request from the console socket: through the same intake, waited for."""
        answered: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        def reply(body: dict[str, Any], urgency: Urgency = Urgency.URGENT) -> None:
            if not answered.done():
                answered.set_result(body)

        self.intake.offer(verb, payload, datetime.now(UTC), reply)
        return await answered

    async def _serve_requests(self) -> None:
        """The one worker: the most urgent request first (see controller/shell/intake.py)."""
        while True:
            item = await self.intake.next()
            body = await self.commands.handle_queued(item)
            # answers to signed requests go out first
            item.reply(body, Urgency.URGENT if item.priority <= 1 else Urgency.ROUTINE)
            waited = (datetime.now(UTC) - item.received).total_seconds()
            self.metrics.command_seconds.labels(body.get("status") or "error").observe(waited)
            log.info(
                "request.handled",
                command=bounded_text(item.verb, 64),
                transaction=body.get("transaction"),
                status=body.get("status"),
                error=body.get("error"),
                waiting=len(self.intake),
            )

    async def _report_shed(self) -> None:
        """Once a second, journal how many requests were answered without running."""
        last = time.monotonic()
        while True:
            await asyncio.sleep(1.0)
            if not self.intake.shed:
                last = time.monotonic()
                continue
            counts = self.intake.shed_report()
            now = time.monotonic()
            log.warning("requests.shed", counts=counts)
            try:
                await self.runner.record_rejection(
                    shed_event(counts, now - last, datetime.now(UTC)), None
                )
            except JournalFullError:
                self.intake.shed.update(counts)  # reported once the journal has room
                continue
            except ShutdownError:
                pass
            last = now

    def _preload_nonces(self) -> None:
        """The nonces of the requests of the last minutes: a replay across a restart is
        refused too (an older one fails the clock check anyway)."""
        horizon = 2 * self.config.security.clock_skew
        now = datetime.now(UTC)
        for text in self.writer.journal.recent_requests(2000):
            auth = _auth_of(text)
            if auth is None:
                continue
            age = (now - auth[2]).total_seconds()
            if age < horizon:
                self.gate.remember_nonce(f"{auth[0]}:{auth[1]}", time.monotonic() + horizon - age)

    def _changed(self) -> None:
        state = self.runner.state
        hand = state.hand
        shell_logging.CONTEXT.hand = hand.hand_id if hand is not None else None
        self.metrics.events.inc(self.runner.last_seq - self._counted_seq)
        self._counted_seq = self.runner.last_seq
        self.metrics.holds.set(len(hand.irregular.holds) if hand is not None else 0)
        epoch, seq = self.writer.journal.event_id(self.runner.last_seq)  # (…, 0): no event yet
        # made when it is about to go (the core never changes a state it returned)
        self.link.set_retained(self.topics.state, lambda: snapshot(state, seq=seq, epoch=epoch))
        self.link.wake.set()
        self.devices.table_changed()
        if deadline(state) != self._tick_due:
            self._tick_wake.set()
        self._status_changed()

    def _device_changed(self, device: str, body: dict[str, Any]) -> None:
        # A device's health is recorded after the input that reported it was committed (and
        # after _changed ran), so the status line is refreshed here as well.
        self.link.set_retained(self.topics.device(device), body)
        self.metrics.health(device, body.get("health"))
        self._status_changed()

    def _alarms_changed(self) -> None:
        """The journal's disk or its integrity changed: the status topic and ``STATUS=``."""
        if self.space.low or self.space.full:
            self.retention_task.wake.set()  # a round now: pruning may give room back
        self.link.set_alarms([*self.space.alarms(), *self.integrity.status_alarms()])
        self._status_changed()

    def _status_changed(self) -> None:
        line = self.status_line()
        if line != self._status and (self.ready.is_set() or self.integrity.held):
            self._status = line
            notify(f"STATUS={line}")

    @property
    def health(self) -> dict[str, dict[str, Any]]:
        """Each device's last reported health (as on its retained topic)."""
        return self.devices.health

    def status_line(self) -> str:
        """One line for ``systemctl status``."""
        hand = self.runner.state.hand
        where = f"hand {hand.hand_id} {hand.phase.value}" if hand is not None else "between hands"
        broker = (
            "no broker"
            if not self.config.broker.enabled
            else "broker up"
            if self.link.connected.is_set()
            else "broker down"
        )
        devices = ", ".join(f"{d} {h.get('health') or '?'}" for d, h in self.devices.health.items())
        line = f"{where}; {broker}; {devices or 'no devices'}"
        alarm = self.integrity.alarm_line
        if alarm is not None:
            waiting = ", waiting for maintenance (journal_accept)" if self.integrity.held else ""
            line = f"{alarm}{waiting}; {line}"
        # The disk first: while it is full nothing, not even maintenance's decision, is taken.
        disk = self.space.status()
        return f"{disk}; {line}" if disk else line

    def healthy(self) -> bool:
        """Healthy enough to feed the watchdog: tasks alive, no commit stuck."""
        if any(t.done() for t in self._tasks if t.get_name() in ("mqtt", "dispatch")):
            return False
        started = self.runner.commit_started
        return started is None or time.monotonic() - started < STUCK_COMMIT


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
    journal = await _open_when_room(config)
    daemon = Daemon(config, journal)
    return await daemon.run()


def open_journal(config: TableConfig) -> Journal:
    """The table's journal (created on the first start)."""
    table = config.table
    journal = Journal.open(config.journal.path, table_id=table.id, genesis=table.genesis())
    if config.journal.max_pages is not None:
        journal.cap_pages(config.journal.max_pages)
    return journal


async def _open_when_room(config: TableConfig) -> Journal:
    path = config.journal.path
    poll = config.journal.disk_poll
    waiting = False
    while True:
        try:
            journal = open_journal(config)
        except (sqlite3.Error, OSError) as exc:
            if not is_full(exc, path.parent):
                raise
            free = free_bytes(path.parent)
            if not waiting:
                log.error("journal.full_at_start", error=str(exc), free_bytes=free)
                waiting = True
            notify(
                f"STATUS=DEGRADED: journal disk full ({free} bytes free); waiting for space "
                "to open the journal",
                f"EXTEND_TIMEOUT_USEC={int(poll * 3 * 1_000_000)}",
                "WATCHDOG=1",
            )
            await asyncio.sleep(poll)
            continue
        if waiting:
            log.warning("journal.opened_after_full")
        return journal


def space_config(config: TableConfig) -> SpaceConfig:
    """The disk watch's settings from ``[journal]``."""
    return SpaceConfig(config.journal.low_disk_bytes, config.journal.disk_poll)


def retention_config(config: TableConfig) -> RetentionConfig:
    """Retention's settings from ``[journal]``."""
    journal = config.journal
    return RetentionConfig(
        live_hands=journal.live_hands,
        keep_days=journal.keep_days,
        max_bytes=journal.max_bytes,
        archive_dir=journal.archive_dir,
        interval=journal.retention_interval,
        inbox_seconds=journal.inbox_seconds,
    )


def policy_of(security: SecuritySection) -> Policy:
    """The gate's policy from ``[security]``."""
    return Policy(
        require_signed=security.require_signed,
        clock_skew=security.clock_skew,
        unsigned_roles=frozenset(security.unsigned_roles),
        limits=Limits(
            security.max_request_bytes,
            security.max_depth,
            security.max_int_digits,
            security.max_string,
        ),
    )


def rates_of(security: SecuritySection) -> Rates:
    """The intake's rate limits from ``[security]``."""
    return Rates(
        per_key=security.rate_per_key,
        per_key_burst=security.rate_per_key_burst,
        anonymous=security.rate_anonymous,
        anonymous_burst=security.rate_anonymous_burst,
        total=security.rate_total,
        total_burst=security.rate_total_burst,
        replays=security.rate_replays,
        replays_burst=security.rate_replays_burst,
        queue_limit=security.queue_limit,
    )


def _auth_of(text: str) -> tuple[str, str, datetime] | None:
    """(key, nonce, ts) of a journaled signed request, None for any other."""
    try:
        auth = json.loads(text).get("auth")
        ts = datetime.fromisoformat(auth["ts"])
        return str(auth["key"]), str(auth["nonce"]), ts
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
