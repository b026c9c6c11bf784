"""What the daemon says about itself, and when: after every change of the table's state, a
device's health or an alarm, the retained snapshots and the birth's alarms on MQTT, the metrics
and systemd's ``STATUS=`` line; the journal's own events (its disk, retention's alarm); and the
watchdog's health check (controller/shell/daemon.py puts the daemon together).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from controller.config import TableConfig
from controller.shell import logging as shell_logging
from controller.shell.integrity import Integrity
from controller.shell.metrics import Metrics
from controller.shell.mqtt import MqttLink
from controller.shell.notify import notify
from controller.shell.retention import RoundReport
from controller.shell.retention_task import RetentionTask
from controller.shell.snapshot import snapshot
from controller.shell.space import JournalSpace
from controller.shell.supervisor import Devices
from controller.shell.table import TableRunner
from controller.shell.topics import Topics
from controller.shell.watch import Watchers
from controller.shell.writer import JournalWriter
from controller.table.engine import deadline
from controller.table.events import TableEvent

#: Seconds a commit may take before the watchdog is no longer fed.
STUCK_COMMIT = 10.0


class DaemonStatus:
    """The reports of :class:`~controller.shell.daemon.Daemon`, which makes what is declared
    here."""

    config: TableConfig
    topics: Topics
    writer: JournalWriter
    runner: TableRunner
    space: JournalSpace
    link: MqttLink
    integrity: Integrity
    devices: Devices
    retention_task: RetentionTask
    metrics: Metrics
    watchers: Watchers
    ready: asyncio.Event
    _tasks: list[asyncio.Task[None]]
    _counted_seq: int
    _tick_wake: asyncio.Event
    _tick_due: object
    _status: str

    # ------------------------------------------------------------------ on a change

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
        self.watchers.touch()
        line = self.status_line()
        if line != self._status and (self.ready.is_set() or self.integrity.held):
            self._status = line
            notify(f"STATUS={line}")

    # ------------------------------------------------------------------ the journal's events

    async def _retained(self, report: RoundReport) -> None:
        """A retention round ended: raise or clear its alarm."""
        await self.space.set_retention(report.alarm(), report.waiting_bytes, self._record_event)

    async def _record_event(self, event: TableEvent) -> None:
        """Journal an event no input caused (the journal's disk)."""
        await self.runner.record_rejection(event, None)

    # ------------------------------------------------------------------ asked

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
