"""What the journal takes and gives back: the rows an append writes, the rows its readers get, and
the ids and epochs of its events (controller/shell/journal.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from controller.shell.chain import (
    Head,
)


class NewEvent(NamedTuple):
    """An event to journal: its type, hand and journal text (see :mod:`controller.table.codec`)."""

    type: str
    hand_id: str | None
    body: str


class NewDispatch(NamedTuple):
    """A device command to journal before it is sent."""

    device: str
    body: str


@dataclass
class NewCommand:
    """A dealer request to record in the inbox with its response.

    ``respond`` builds the response from the sequence numbers the events got, inside the
    transaction, so the stored response names the events it caused.
    """

    transaction: str
    verb: str
    request: str
    respond: Callable[[list[int]], Mapping[str, Any]]


@dataclass(frozen=True)
class Appended:
    """What one transaction wrote."""

    input_id: int | None
    seqs: list[int]
    dispatch_ids: list[int]
    response: Mapping[str, Any] | None = None
    #: The outbox rows it wrote, as :meth:`Journal.pending` would read them back.
    outbox: tuple[OutboxRow, ...] = ()


class DeviceOrigin(NamedTuple):
    """A device's last numbered event: its boot id, sequence number and the parts journaled."""

    device: str
    boot_id: int
    seq: int
    parts: frozenset[int]


class EventId(NamedTuple):
    """What an event is called on the wire: its epoch and its number in that epoch."""

    epoch: str
    seq: int


class Epoch(NamedTuple):
    """An epoch of the journal: its name and the journal key of its first event."""

    name: str
    first_seq: int


@dataclass(frozen=True)
class NewEpoch:
    """An epoch to begin in a transaction: events from journal key ``first_seq`` on are in it."""

    name: str
    first_seq: int
    reason: str


class OutboxRow(NamedTuple):
    """A message waiting for the broker: the event, the stream, and when it was journaled.

    ``seq`` is the event's journal key, ``event`` its id on the wire, ``chain`` the position
    and hash of its row in the chain.
    """

    id: int
    seq: int
    stream: str
    live: bool
    created_ns: int
    body: str
    event: EventId
    chain: Head


class StoredRow(NamedTuple):
    """A journaled row read back for replay: its key, input link and body."""

    key: int
    input_id: int | None
    body: str
