"""What is not the game itself: irregularities and integrity alarms, devices, refused or shed
requests, and the journal's own events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller.cards import Card
from controller.table.event_types.seats import Seat
from controller.table.events import EventData, secret
from controller.table.inputs import Purpose


@dataclass(frozen=True, slots=True)
class RequestRecord(EventData):
    """What the journal keeps of a refused request: never the request itself."""

    size: int
    sha256: str
    head: str  # its first 200 characters


@dataclass(frozen=True, slots=True)
class IrregularityDetected(EventData):
    """``irregularity.detected``: a reason, the rule, and the evidence that applies."""

    TYPE = "irregularity.detected"
    reason: str
    rule: str | None = None
    seat: Seat | None = None
    group: int | None = None
    shuffle_id: int | None = None
    zone: str | None = None
    source: str | None = None  # where a moved card was
    card: Card | None = None  # public when the table has seen it
    put: int | None = None  # an under-call: the chips put in
    call_to: int | None = None  # … and what the call was
    cutoff_passed: bool | None = None
    actions: int | None = None
    severity: str | None = None
    hidden_card: Card | None = secret("card")


@dataclass(frozen=True, slots=True)
class EventRange(EventData):
    """Event ids ``{epoch}:{from_seq}`` to ``{epoch}:{to_seq}`` (``from_seq`` None: unknown)."""

    epoch: str
    from_seq: int | None
    to_seq: int


@dataclass(frozen=True, slots=True)
class IntegrityAlarm(EventData):
    """``integrity.alarm``: a foul deck, a broken commitment, an unapproved device, a fault,
    or a journal that is not what the table wrote (docs/operations.md, "The journal's integrity").

    A revealed deck's order against the groups dealt from it (SHF-INFO, ``deck_audit.py``) names
    the ``group``, its ``purpose`` and ``seat``, the hand it was dealt in (``dealt_in``) and,
    secret, the ``cards`` read for it (or reported) and the cards the order dealt (``expected``).
    """

    TYPE = "integrity.alarm"
    reason: str
    rule: str | None = None
    zone: str | None = None
    action_stands: bool | None = None
    device: str | None = None
    shuffle_id: int | None = None
    command: str | None = None  # an internal error: the request being handled
    error: str | None = None
    request: RequestRecord | None = None
    journal: str | None = None  # what the journal check found: chain, replay or rollback
    problems: tuple[str, ...] | None = None  # the chain's breaks (the first few)
    inputs: tuple[int, ...] | None = None  # inputs whose replay differs (the first few)
    lost: EventRange | None = None  # events the broker holds that this journal does not
    group: int | None = None  # the deck audit: the group whose cards the order contradicts
    purpose: Purpose | None = None
    seat: Seat | None = None
    dealt_in: str | None = None  # the hand the group was dispensed in
    uid: str | None = secret()
    card: Card | None = secret()
    cards: tuple[Card, ...] | None = secret()  # the cards read for the group (or reported)
    expected: tuple[Card, ...] | None = secret()  # the cards the revealed order dealt it


@dataclass(frozen=True, slots=True)
class DeviceStatus(EventData):
    """``device.status``: health, a fault, a clear or a reboot of one device."""

    TYPE = "device.status"
    device: str
    health: str | None = None
    kind: str | None = None
    approved: bool | None = None
    detail: str | None = None
    fault: str | None = None
    fault_id: int | None = None
    cleared: str | None = None
    rebooted: bool | None = None
    boot_id: int | None = None


@dataclass(frozen=True, slots=True)
class CommandRejected(EventData):
    """``command.rejected``: nothing changed.

    A request the gate refused (docs/security.md) adds a bounded ``request`` record and, when it
    proved who sent it, the signing ``key``.
    """

    TYPE = "command.rejected"
    command: str
    reason: str
    request: RequestRecord | None = None
    key: str | None = None


@dataclass(frozen=True, slots=True)
class RequestsShed(EventData):
    """``requests.shed``: requests answered at once and not run (a flood, a full queue)."""

    TYPE = "requests.shed"
    counts: Mapping[str, int]  # how many, by reason
    seconds: float  # over how long


@dataclass(frozen=True, slots=True)
class JournalAccepted(EventData):
    """``journal.accepted``: maintenance accepted the journal as it is after an integrity alarm;
    the next events are a new epoch."""

    TYPE = "journal.accepted"
    alarm: str  # the alarm's reason
    reason: str  # maintenance's own words
    through: int  # breaks of the chain up to this position are accepted
    input_through: int  # replay differences at inputs up to this one are accepted
    epoch: str  # the epoch that starts


@dataclass(frozen=True, slots=True)
class JournalEpochStarted(EventData):
    """``journal.epoch.started``: event ids go on under a new epoch, from seq 1."""

    TYPE = "journal.epoch.started"
    epoch: str
    previous: str
    reason: str  # "rollback" or "accepted"
    moved: EventRange | None = None  # journaled before it began and still unpublished


@dataclass(frozen=True, slots=True)
class JournalDisk(EventData):
    """``journal.disk``: the journal's disk ran low, has room again, or was full until now; or
    retention cannot keep the journal's budget (``waiting_bytes`` wait for the pit/archive).

    ``recovered`` is journaled by the first write after a full disk: the table took no input
    from ``full_since`` for ``seconds``, and answered ``refused`` requests with the reason.
    """

    TYPE = "journal.disk"
    condition: str  # "low", "ok", "recovered", or "retention" (over budget, nothing prunable)
    free_bytes: int
    low_disk_bytes: int  # the watermark
    journal_bytes: int
    full_since: str | None = None
    seconds: float | None = None
    refused: int | None = None
    waiting_bytes: int | None = None  # retention: segments waiting for the pit or the archive


#: Every event type's data class, by type.
