"""What the daemon tells those who follow it on the console socket (controller/shell/watch.py):
the view of the table, its devices and links, each commit's events, and the reads of the
dealer's badges (controller/shell/daemon.py puts the daemon together).

A read on the station's badge zone (``[station] badge_zone``) is taken away from the core: a
badge is no card of the deck, and a tag the deck does not know is a foreign card to the core
(FOUL-FOREIGN). The read goes to the watchers only, with whether the tag is a playing card of a
deck the table knows (a card laid on the badge reader must never log a dealer in); it is not
journaled.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from controller.config import TableConfig
from controller.envelope import envelope
from controller.shell.integrity import Integrity
from controller.shell.merge_patch import without_nulls
from controller.shell.mqtt import MqttLink
from controller.shell.space import JournalSpace
from controller.shell.supervisor import Devices
from controller.shell.table import TableRunner
from controller.shell.watch import Watchers
from controller.shell.watch_view import VIEW_SCHEMA, table_view
from controller.shell.writer import JournalWriter
from controller.table.codec import rfc3339
from controller.table.events import TableEvent
from controller.table.inputs import DeviceInput, TagArrived, TagDeparted, Zone

log = structlog.get_logger("tablectl.watch")


class DaemonWatch:
    """The watch stream's side of :class:`~controller.shell.daemon.Daemon`, which makes what is
    declared here."""

    config: TableConfig
    runner: TableRunner
    writer: JournalWriter
    devices: Devices
    link: MqttLink
    integrity: Integrity
    space: JournalSpace
    watchers: Watchers
    #: The pit's last ``stored`` confirmation (pit, epoch, seq, at), for the stations.
    pit_stored: dict[str, Any] | None

    def _watch_setup(self) -> None:
        self.watchers = Watchers(self._watch_view)
        self.pit_stored = None
        self.runner.committed.append(self._watch_events)
        zone = self.config.station.badge_zone
        if zone is not None:
            badge_zone = Zone.parse(zone)
            self.devices.divert = lambda item: self._badge_read(item, badge_zone)

    def _watch_view(self) -> dict[str, Any]:
        """The whole view: the table, its devices, its links."""
        epoch, seq = self.writer.journal.event_id(self.runner.last_seq)
        broker = (
            "off"
            if not self.config.broker.enabled
            else "up"
            if self.link.connected.is_set()
            else "down"
        )
        devices = {
            device: {
                "health": body.get("health"),
                "approved": body.get("approved"),
                "detail": body.get("detail") or None,
            }
            for device, body in self.devices.health.items()
        }
        view = {
            "schema": VIEW_SCHEMA,
            "epoch": epoch,
            "seq": seq,
            "table": table_view(self.runner.state),
            "devices": devices,
            "link": {
                "broker": broker,
                "accepting": self.link.accept_requests,
                "alarms": [*self.space.alarms(), *self.integrity.status_alarms()],
                "pit": self.pit_stored,
            },
        }
        result: dict[str, Any] = without_nulls(view)
        return result

    def _watch_events(self, seqs: Sequence[int], events: Sequence[TableEvent]) -> None:
        """A commit: its events to whoever wants them, and the view to everyone."""
        journal = self.writer.journal
        table = self.config.table.id

        def envelopes() -> list[dict[str, Any]]:
            made = []
            for key, event in zip(seqs, events, strict=False):
                epoch, seq = journal.event_id(key)
                made.append(envelope(event, table_id=table, epoch=epoch, seq=seq))
            return made

        self.watchers.events(envelopes)

    def _watch_stored(self, data: dict[str, Any], pit: str) -> None:
        """The pit confirmed what it stored."""
        self.pit_stored = {**data, "pit": pit, "at": rfc3339(datetime.now(UTC))}
        self.watchers.touch()

    def _badge_read(self, item: DeviceInput, zone: Zone) -> bool:
        """A read on the badge zone: to the watchers, not to the core (True)."""
        if not isinstance(item, TagArrived | TagDeparted) or item.zone != zone:
            return False
        if isinstance(item, TagArrived):
            state = self.runner.state
            manifest = state.manifest
            card = (
                manifest.card(item.uid) is not None
                or item.uid in manifest.jokers
                or item.uid in state.other_decks
            )
            log.info(
                "badge.read", device=item.device, card=card, watchers=len(self.watchers.watchers)
            )
            self.watchers.badge(item.uid, card=card, ts=rfc3339(item.ts))
        return True
