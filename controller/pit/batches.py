"""What one batch of the pit's ingest is: the events and messages it takes, what its commit did,
and the messages it refused; shared by the ingest, the store and the metrics.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Literal, NamedTuple

from controller.mqtt import Message
from controller.pit.devices import DeviceIn
from controller.pit.rows import Stream
from controller.table.decoder import decode
from controller.table.events import EventData


@dataclass(frozen=True)
class EventIn:
    """One event envelope as it came from the broker, checked (:func:`controller.pit.ingest`)."""

    table_id: str
    epoch: str
    seq: int
    ts: str
    hand_id: str | None
    type: str
    severity: str
    stream: Stream
    source: Literal["live", "replay"]
    text: str  # the envelope, as received
    body: Mapping[str, Any]

    @cached_property
    def decoded(self) -> tuple[EventData, tuple[str, ...]]:
        """The event's typed record (controller/table/decoder.py; Recorded when its data does
        not fit its type) and the fields of its data that did not fit."""
        problems: list[str] = []
        record = decode(self.body, problems=problems)
        return record, tuple(problems)

    @property
    def record(self) -> EventData:
        """The event's typed record."""
        return self.decoded[0]


@dataclass
class Applied:
    """What one batch did."""

    stored: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # table → new rows
    duplicates: int = 0
    new_epochs: list[tuple[str, str]] = field(default_factory=list)
    committed_at: float = 0.0
    stored_events: list[EventIn] = field(default_factory=list)
    came_online: list[str] = field(default_factory=list)  # tables with a new birth
    touched: set[str] = field(default_factory=set)  # tables whose rows a batch may have changed


class Refusal(NamedTuple):
    """A message refused (or an event stored with a field left out), and the table it came
    from (None: a topic of no table)."""

    table: str | None
    topic: str
    payload: bytes
    reason: str


@dataclass
class Batch:
    """What one commit stores: events, statuses, states, devices' health and refused messages."""

    events: list[EventIn] = field(default_factory=list)
    statuses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    states: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    devices: list[DeviceIn] = field(default_factory=list)
    rejects: list[Refusal] = field(default_factory=list)
    acks: list[Message] = field(default_factory=list)  # acknowledged once the batch is stored
    #: each event message's stream, source and bytes, as taken: a copy of one already in the
    #: batch is acknowledged with it and not parsed again (a process that takes over an away
    #: member's share gets each message of its own share twice, from the share and directly,
    #: together)
    taken: set[tuple[str, str, bytes]] = field(default_factory=set)
    copies: int = 0  # event messages the batch took twice

    def __len__(self) -> int:
        return (
            len(self.events)
            + len(self.statuses)
            + len(self.states)
            + len(self.devices)
            + len(self.rejects)
        )


def event_age(ts: str, now: float) -> float | None:
    """Seconds from an event's ``ts`` to ``now`` (None: not a time)."""
    try:
        return now - datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None
