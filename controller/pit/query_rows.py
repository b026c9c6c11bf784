"""The rows the pit's reads return (controller/pit/queries.py), typed: what the API's models,
the console's pages and the tools may rely on, key by key.

They stay dictionaries (the JSON the API answers and what the templates read), typed with
``TypedDict`` so that a reader asking for a key a row does not have is a type error.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class TableRow(TypedDict):
    """A table the pit has heard of: its birth, epoch, state and what is open on it."""

    table_id: str
    online: bool | None
    bdseq: int | None
    status_ts: str | None
    version: str | None
    epoch: str | None
    last_seq: int
    hand_id: str | None
    phase: str | None
    state_seq: int | None
    open_holds: int
    open_gaps: int
    degraded: bool
    alarms: list[dict[str, Any]]
    stored_seq: int
    build: dict[str, Any] | None
    journal: str | None


class EpochRow(TypedDict):
    """One epoch of a table: when it began and why."""

    epoch: str
    first_ts: str | None
    first_seen: float
    previous: str | None
    reason: str | None


class HoldResolution(TypedDict):
    """How a hold was resolved, and by whom."""

    ts: str | None
    seq: int
    decision: str | None
    by: str | None
    person: str | None
    role: str | None


class HoldRow(TypedDict):
    """A hold raised at a table, with its resolution once there is one."""

    table_id: str
    epoch: str
    hold: str
    hand_id: str | None
    rule: str | None
    reason: str | None
    ruling: str | None
    seat: int | None
    evidence: dict[str, Any]
    raised_ts: str | None
    raised_seq: int | None
    resolution: HoldResolution | None


class RulingRow(TypedDict):
    """A ruling of a hand: the event that made it and who did."""

    seq: int
    ts: str
    type: str
    rule: str | None
    hold: str | None
    decision: str | None
    person: str | None
    role: str | None


class HandRow(TypedDict):
    """A hand as its events told it (a column of another shape reads as null)."""

    table_id: str
    epoch: str
    hand_id: str
    started_ts: str | None
    ended_ts: str | None
    outcome: str | None
    button: int | None
    seats: list[int] | None
    blinds: list[int] | None
    ante: int | None
    stacks_before: dict[str, int] | None
    stacks_after: dict[str, int] | None
    payouts: dict[str, int] | None
    pot: int | None
    rake: int | None
    first_seq: int
    last_seq: int
    rake_pots: list[int] | None
    jackpot: int | None
    rake_waived: str | None
    time_collected: int | None
    straddles: dict[str, int] | None
    ante_seat: int | None
    runouts: int | None
    rules: NotRequired[list[str]]
    rulings: NotRequired[list[RulingRow]]


class AlarmRow(TypedDict):
    """An alarm a table raised, and who acknowledged it."""

    table_id: str
    epoch: str
    seq: int
    ts: str
    hand_id: str | None
    type: str
    severity: str
    rule: str | None
    reason: str | None
    acked_by: str | None
    acked_at: float | None


class BirthRow(TypedDict):
    """A table's birth or death (its status: the connection ``bdseq`` of ``journal``)."""

    journal: str | None
    bdseq: int
    state: str
    epoch: str | None
    ts: str | None
    received_at: float


class ArchiveKindRow(TypedDict):
    """Where one data kind's older months are (the store for years, PostgreSQL)."""

    kind: str
    online_from: str | None
    archived: list[str]
    restored: list[str]


class ArchiveRow(TypedDict):
    """Where the store's older data is: online, or archived by ``tablectl pit archive``."""

    store: str
    partitioned: bool
    kinds: list[ArchiveKindRow]
