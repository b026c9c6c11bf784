"""``tablectl run``: the daemon, wiring devices, core, journal and broker together.

Start-up, in order: open the journal and replay it through the core (the exact state before the
last stop, and the device commands still outstanding); start the devices and the broker link;
ask every device where it is before anything is resent; then accept dealer requests and tell
systemd ``READY=1``.

Everything runs in one TaskGroup: the broker link, one restart loop per device, the device
command sender and the watchdog. A bug in any of them ends the daemon (systemd restarts it; the
journal makes that safe). A device that fails is restarted after a full-jitter backoff and its
health reported as an input, so the pit sees ``device.status`` events.

SIGTERM (or SIGINT) shuts down in order, each step bounded: stop the inputs (devices, requests),
let the input being committed finish, publish the retained ``offline`` status, close the ports,
checkpoint the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from controller.config import SecuritySection, TableConfig
from controller.profiles import load_profile
from controller.shell import logging as shell_logging
from controller.shell.commands import CommandHandler, shed_event
from controller.shell.console import serve_console
from controller.shell.gate import Gate, Limits, Policy, bounded_text
from controller.shell.intake import Intake, Rates
from controller.shell.journal import Journal
from controller.shell.mqtt import MqttLink
from controller.shell.notify import feed_watchdog, notify, watchdog_interval
from controller.shell.replay import Replayer
from controller.shell.snapshot import snapshot
from controller.shell.supervisor import Devices
from controller.shell.table import ShutdownError, TableRunner, initial_state
from controller.shell.topics import Topics
from controller.shell.writer import JournalWriter
from controller.table.engine import deadline
from controller.table.inputs import (
    ControllerRestarted,
    Tick,
)
from drivers.contract import Device, DeviceContext
from drivers.errors import DeviceError
from drivers.registry import build_device

log = structlog.get_logger("tablectl.daemon")

STUCK_COMMIT = 10.0


class Daemon:
    """One table controller process."""

    def __init__(self, config: TableConfig) -> None:
        self.config = config
        table = config.table
        self.topics = Topics(config.broker.prefix, table.id)
        journal = Journal.open(config.journal.path, table_id=table.id, genesis=table.genesis())
        if journal.genesis != table.genesis():
            log.warning(
                "journal.genesis_differs",
                detail="the table section changed since the journal began; the journal decides",
            )
        genesis = journal.genesis
        profile = load_profile(genesis["profile"]).with_overrides(genesis.get("house_rules", {}))
        manifest = table.manifest()
        self.writer = JournalWriter(journal)
        self.runner = TableRunner(
            self.writer,
            initial_state(genesis, profile, manifest),
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
        replayer = Replayer(
            self.writer,
            self.topics,
            lambda message: self.link.send(message.topic, message.payload, message.properties),
        )
        self.commands = CommandHandler(self.runner, self.gate, replayer)
        self.ready = asyncio.Event()
        self.stop_requested = asyncio.Event()
        self.devices = Devices(
            devices,
            self.runner,
            config.daemon,
            self._device_changed,
        )
        self._tick_wake = asyncio.Event()
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
        report = self.runner.recover()
        log.info(
            "journal.recovered",
            inputs=report.inputs,
            events=report.events,
            diverged=report.diverged,
            from_snapshot_after=report.snapshot,
            outstanding=self.runner.planner.summary(),
            epoch=self.writer.journal.epoch,
        )
        # An event journaled during a broker outage is historical; before the first connect
        # there is no outage yet, only start-up, and the age of the event decides.
        self.runner.connected = lambda: self.link.connected.is_set() or self.link.connects == 0
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
                if self.config.daemon.console is not None:
                    self.console = await serve_console(
                        self.config.daemon.console, self._request, lambda: self.link.accept_requests
                    )
                for device_id in self.devices.devices:
                    supervised = self.devices.supervise(device_id)
                    self._device_tasks.append(self._spawn(group, supervised, f"device:{device_id}"))
                await self.devices.query_all()
                if report.inputs:
                    await self._restarted()
                self._spawn(group, self.devices.dispatch_loop(), "dispatch")
                self._spawn(group, self._ticker(), "ticker")
                interval = watchdog_interval()
                if interval is not None:
                    self._spawn(group, feed_watchdog(self.healthy, interval), "watchdog")
                self.link.accept_requests = True
                self.ready.set()
                self._status = self.status_line()
                notify("READY=1", f"STATUS={self._status}")
                log.info("daemon.ready", seconds=round(time.monotonic() - self.started, 3))
                await self.stop_requested.wait()
                await self.shutdown()
                await _cancel_all(self._tasks)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        await self.writer.close(checkpoint=True)
        log.info("daemon.stopped")
        return 0

    async def _restarted(self) -> None:
        """Tell the core the controller came back (CTRL-POWER), once the devices were asked."""
        item = ControllerRestarted(datetime.now(UTC), "controller")
        if self.runner.accepts(item):
            await self.runner.submit(item)

    async def _ticker(self) -> None:
        """Send the core a Tick when a deadline of its state falls due.

        The core names its next deadline (``controller.table.engine.deadline``), e.g. the
        readers' settle time after the deal.
        """
        while True:
            self._tick_wake.clear()
            due = deadline(self.runner.state)
            delay = None if due is None else (due - datetime.now(UTC)).total_seconds()
            if delay is not None and delay <= 0:
                tick = Tick(datetime.now(UTC), "clock")
                if self.runner.accepts(tick):
                    await self.runner.submit(tick)
                    continue
                delay = None
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
        await _cancel_all(
            [*self._device_tasks, *(t for t in self._tasks if t.get_name() == "dispatch")]
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
        self, verb: str, payload: bytes, reply: Callable[[dict[str, Any], bool], None]
    ) -> None:
        """A request from the broker: into the intake, answered when the worker gets to it."""
        self.intake.offer(verb, payload, datetime.now(UTC), reply)

    async def _request(self, verb: str, payload: bytes) -> dict[str, Any]:
        """A request from the console socket: through the same intake, waited for."""
        answered: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        def reply(body: dict[str, Any], urgent: bool = True) -> None:
            if not answered.done():
                answered.set_result(body)

        self.intake.offer(verb, payload, datetime.now(UTC), reply)
        return await answered

    async def _serve_requests(self) -> None:
        """The one worker: the most urgent request first (see controller/shell/intake.py)."""
        while True:
            item = await self.intake.next()
            body = await self.commands.handle_queued(item)
            item.reply(body, item.priority <= 1)  # answers to signed requests go out first
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
            with contextlib.suppress(ShutdownError):
                await self.runner.record_rejection(
                    shed_event(counts, now - last, datetime.now(UTC)), None
                )
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
        body = snapshot(state, seq=self.runner.last_seq, epoch=self.writer.journal.epoch)
        self.link.set_retained(self.topics.state, body)
        self.link.wake.set()
        self.devices.wake.set()
        self._tick_wake.set()
        self._status_changed()

    def _device_changed(self, device: str, body: dict[str, Any]) -> None:
        # A device's health is recorded after the input that reported it was committed (and
        # after _changed ran), so the status line is refreshed here as well.
        self.link.set_retained(self.topics.device(device), body)
        self._status_changed()

    def _status_changed(self) -> None:
        line = self.status_line()
        if line != self._status and self.ready.is_set():
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
        return f"{where}; {broker}; {devices or 'no devices'}"

    def healthy(self) -> bool:
        """Healthy enough to feed the watchdog: tasks alive, no commit stuck."""
        if any(t.done() for t in self._tasks if t.get_name() in ("mqtt", "dispatch")):
            return False
        started = self.runner.commit_started
        return started is None or time.monotonic() - started < STUCK_COMMIT


async def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait until they are done.

    Cancelling again until they are: on Python 3.11 ``asyncio.wait_for`` (inside aiomqtt) can
    swallow a cancellation that lands as the awaited operation completes, and a task that lost
    its cancellation would keep the daemon from exiting.
    """
    for _ in range(50):
        pending = [task for task in tasks if not task.done()]
        if not pending:
            return
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=0.2)
    log.error("daemon.tasks_not_cancelled", tasks=[t.get_name() for t in tasks if not t.done()])


async def run_daemon(config: TableConfig) -> int:
    """Run the daemon of ``config`` until it is told to stop."""
    daemon = Daemon(config)
    return await daemon.run()


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
        security.rate_per_key,
        security.rate_per_key_burst,
        security.rate_anonymous,
        security.rate_anonymous_burst,
        security.rate_total,
        security.rate_total_burst,
        security.queue_limit,
    )


def _auth_of(text: str) -> tuple[str, str, datetime] | None:
    """(key, nonce, ts) of a journaled signed request, None for any other."""
    try:
        auth = json.loads(text).get("auth")
        ts = datetime.fromisoformat(auth["ts"])
        return str(auth["key"]), str(auth["nonce"]), ts
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
