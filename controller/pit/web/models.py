"""The pit API's answers as JSON models: what /openapi.json describes of each."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class User(BaseModel):
    """Who is asking, and their roles."""

    username: str
    roles: list[str]


class TableNow(BaseModel):
    """A table as the pit knows it now."""

    table_id: str
    online: bool | None = Field(description="the last birth (true) or death (false) heard")
    bdseq: int
    status_ts: str | None
    version: str | None
    epoch: str | None = Field(description="the journal epoch the table publishes in")
    last_seq: int = Field(description="the highest seq stored of that epoch")
    hand_id: str | None = Field(description="the hand in progress (retained state)")
    phase: str | None
    state_seq: int | None = Field(description="the seq the retained state reflects")
    open_holds: int
    open_gaps: int = Field(description="ranges of seqs missing, not yet repaired")
    degraded: bool = Field(
        description="its status says it is up but takes no input (a full journal disk, or an "
        "integrity alarm holding it): see alarms"
    )
    alarms: list[dict[str, Any]] = Field(
        description="the alarms on its status topic (alarm, detail, since, …), as it published them"
    )
    stored_seq: int = Field(
        description="every event of the epoch numbered 1 to this is stored (the watermark the "
        "pit confirms to the table)"
    )
    build: dict[str, Any] | None = Field(
        description="the build it runs, from its last birth: version, record_sha256 (the "
        "identity `tablectl version` prints), editable; null: its birth named none"
    )
    journal: str | None = Field(
        description="the journal its newest connection's birth or death named (its first "
        "epoch); null: none heard, or from a tablectl that names none"
    )


class Resolution(BaseModel):
    """How a hold was decided."""

    ts: str | None
    seq: int
    decision: str | None
    by: str | None = Field(description="confirm, reject, override, or what settled it")
    person: str | None
    role: str | None


class Hold(BaseModel):
    """A ruling the dealer or the floor must confirm or reject."""

    table_id: str
    epoch: str
    hold: str
    hand_id: str | None
    rule: str | None
    reason: str | None
    ruling: str | None = Field(description="what confirming it does")
    seat: int | None
    evidence: dict[str, Any]
    raised_ts: str | None
    raised_seq: int | None
    resolution: Resolution | None


class Ruling(BaseModel):
    """A ruling event of a hand."""

    seq: int
    ts: str
    type: str
    rule: str | None
    hold: str | None
    decision: str | None
    person: str | None
    role: str | None


class Hand(BaseModel):
    """One hand: how it started, how it ended, its rule IDs and rulings."""

    table_id: str
    epoch: str
    hand_id: str
    started_ts: str | None
    ended_ts: str | None
    outcome: Literal["completed", "misdeal", "void"] | None
    button: int | None
    seats: list[int] | None
    blinds: list[int] | None
    ante: int | None
    stacks_before: dict[str, int] | None
    stacks_after: dict[str, int] | None
    payouts: dict[str, int] | None
    pot: int | None
    rake: int | None = Field(
        description="the rake from the pots, HOUSE-RAKE (null: the table takes none from the pots)"
    )
    rake_pots: list[int] | None = Field(description="the rake from each pot, main pot first")
    jackpot: int | None = Field(description="the jackpot or promotion drop, HOUSE-DROP-JACKPOT")
    rake_waived: str | None = Field(
        description="why nothing was taken: no flop, a pot below the minimum or the threshold"
    )
    time_collected: int | None = Field(
        description="the time collected before this hand, HOUSE-TIME (null: none)"
    )
    straddles: dict[str, int] | None = Field(description="each straddler's straddle, STRADDLE")
    ante_seat: int | None = Field(
        description="the seat that posted the table's ante, ANTE-TABLE (null: every seat antes)"
    )
    runouts: int | None = Field(description="how many times the board was run, RUN-TWICE")
    first_seq: int
    last_seq: int
    rules: list[str]
    rulings: list[Ruling]


class Alarm(BaseModel):
    """An integrity alarm or a critical event."""

    table_id: str
    epoch: str
    seq: int
    ts: str
    hand_id: str | None
    type: str
    severity: str
    rule: str | None
    reason: str | None
    acked_by: str | None = Field(description="the person who acknowledged it (null: nobody yet)")
    acked_at: float | None = Field(description="when (Unix time)")


class RulingAnswer(BaseModel):
    """A table's answer to a ruling the console sent."""

    table_id: str
    hold: str
    command: str
    person: str
    status: Literal["ok", "error"]
    error: str | None
    data: Any = None


class GapOut(BaseModel):
    """A range of seqs the pit did not receive."""

    id: int
    table_id: str
    epoch: str
    stream: str
    from_seq: int
    to_seq: int
    first_seen: float
    state: Literal["open", "asked", "lost", "repaired"]
    attempts: int
    asked_at: float | None
    reason: str | None = Field(description="why the table could not replay it (lost)")
    closed_at: float | None


class RejectOut(BaseModel):
    """A message refused from a table (or an event stored with a field left out)."""

    id: int
    table_id: str | None = Field(description="the table it came from (null: none named)")
    topic: str
    size: int
    sha256: str
    head: str = Field(description="its first 200 characters")
    reason: str
    received_at: float


class ArchiveKind(BaseModel):
    """Where one data kind's older months are."""

    kind: Literal["events", "hands", "rulings", "holds", "alarms", "quarters", "decks"] = Field(
        description="quarters: the hands counted by quarter hour and hour (the drop and "
        "dealers reports'); decks: the shufflers' decks, their hours and kept day tallies"
    )
    online_from: str | None = Field(
        description="the oldest month (YYYY-MM) the store has online for it (PostgreSQL; null "
        "on SQLite, which keeps every row)"
    )
    archived: list[str] = Field(
        description="months archived by `tablectl pit archive run`, oldest first: not read by "
        "the API or the pages; `tablectl pit archive restore MONTH` brings one back"
    )
    restored: list[str] = Field(
        description="archived months brought back for an audit: online until a later round "
        "archives them again"
    )


class ArchiveOut(BaseModel):
    """Where the store's older data is."""

    store: Literal["sqlite", "postgresql"]
    partitioned: bool = Field(description="its tables that grow with play are partitioned by month")
    kinds: list[ArchiveKind]


class LostPart(BaseModel):
    """A part the pit process has lost."""

    part: Literal["broker", "store", "changes"]
    since: str = Field(
        description="when it was lost (RFC 3339 UTC); for a broker never reached, "
        "when the process started"
    )
    seconds: float = Field(description="how long ago")
    reason: str


class Health(BaseModel):
    """Whether this pit process works."""

    status: Literal["ok", "degraded"]
    pit: str
    version: str
    broker_connected: bool
    store: bool
    changes: bool = Field(
        description="whether it hears the commits of the other pit processes of its store at "
        "once (its console's listening connection; true for a process without a console)"
    )
    lost: list[LostPart] = Field(
        description="what is lost and since when, as the console's banner says it"
    )
