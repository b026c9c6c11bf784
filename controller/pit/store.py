"""The pit's store: every table's events exactly once, and what the floor reads from them.

An event is one row keyed by ``(table_id, epoch, seq)``, holding the envelope as it came on each
stream the pit takes (``public``, and ``secure`` with surveillance credentials). A delivery of a
view already stored changes nothing, so a message the broker delivers twice (a redelivery after
a crash, a replay of something that arrived after all) is stored once. When an event's public
view is stored for the first time, the rows derived from it are written in the same
transaction: its rule IDs, its hand (one row per hand: start, outcome, stacks, payouts), a hold
and its resolution, a ruling, an alarm. Births and deaths, epochs and the tables' retained
snapshots come from the status and state topics.

:class:`Store` is synchronous and used from one thread (:class:`controller.pit.worker.StoreWorker`
runs it); the readers of the API open their own :class:`Store` on the same database.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from controller.pit.db import Column, Db, Row, StoreError
from controller.pit.lockout import LockOut
from controller.pit.schema import AUTO_ID, MIGRATIONS, SCHEMA_VERSION
from controller.table import event_types as et
from controller.table.decoder import decode
from controller.table.events import EventData, Recorded

Stream = Literal["public", "secure"]
STREAM_COLUMN: dict[str, str] = {"public": "public", "secure": "secure"}
PUBLIC, SECURE = 1, 2  # the views of an event, as bits of ``events.fresh``
STREAM_BIT: dict[str, int] = {"public": PUBLIC, "secure": SECURE}
EVENT_COLUMNS: tuple[Column, ...] = (
    ("table_id", "text"),
    ("epoch", "text"),
    ("seq", "bigint"),
    ("ts", "text"),
    ("hand_id", "text"),
    ("type", "text"),
    ("severity", "text"),
    ("public", "text"),
    ("secure", "text"),
    ("source", "text"),
    ("committed_at", "float8"),
    ("fresh", "integer"),
)

#: How a hand ended, by the record of the event that ended it.
HAND_END: dict[type[EventData], str] = {
    et.HandCompleted: "completed",
    et.HandMisdeal: "misdeal",
    et.HandVoid: "void",
}


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


@dataclass(frozen=True)
class Gap:
    """A range of seqs of one table's epoch not received on one stream."""

    id: int
    table_id: str
    epoch: str
    stream: str
    from_seq: int
    to_seq: int
    first_seen: float
    state: str
    attempts: int
    asked_at: float | None
    reason: str | None


class Store:
    """The pit's database."""

    def __init__(self, url: str) -> None:
        self.db = Db(url)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    # ------------------------------------------------------------------ schema

    def migrate(self) -> int:
        """Apply the migrations this database lacks; the schema version it has now."""
        db = self.db
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the store has pit schema {version}, newer than this tablectl's "
                f"({SCHEMA_VERSION}): upgrade tablectl"
            )
        # what a migration's new columns hold for the rows stored before it
        backfills = {3: self._derive_house_money}
        for number in range(version + 1, SCHEMA_VERSION + 1):
            text = MIGRATIONS[number - 1].replace("{id}", AUTO_ID[db.dialect])
            with db.transaction():
                # Another process may have migrated meanwhile: check inside the transaction.
                if (number > 1 or self._has_meta()) and self.schema_version() >= number:
                    continue
                db.script(text)
                if number in backfills:
                    backfills[number]()
                db.execute(
                    "INSERT INTO pit_meta (key, value) VALUES ('schema', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(number),),
                )
        return self.schema_version()

    def _derive_house_money(self) -> None:
        """Pit schema 3: the house's money and blind structures of the hands stored before it,
        from their stored events (deriving them again leaves every other row as it was)."""
        db = self.db
        after: tuple[str, str, int] = ("", "", 0)
        while True:
            rows = db.all(
                "SELECT table_id, epoch, seq, ts, hand_id, type, severity, source, public "
                "FROM events WHERE public IS NOT NULL AND (table_id, epoch, seq) > (?, ?, ?) "
                "AND (type IN (?, ?, ?, ?) OR (type = ? AND public LIKE ?)) "
                "ORDER BY table_id, epoch, seq LIMIT ?",
                (
                    *after,
                    et.HandStarted.TYPE,
                    et.PotRakeTaken.TYPE,
                    et.BoardRunoutStarted.TYPE,
                    et.HouseTimeCollected.TYPE,
                    et.BettingAction.TYPE,
                    "%ANTE-TABLE%",
                    _BACKFILL_BATCH,
                ),
            )
            if not rows:
                return
            self._derive(
                [
                    EventIn(
                        table_id=r[0],
                        epoch=r[1],
                        seq=int(r[2]),
                        ts=r[3],
                        hand_id=r[4],
                        type=r[5],
                        severity=r[6],
                        stream="public",
                        source=r[7],
                        text=r[8],
                        body=json.loads(r[8]),
                    )
                    for r in rows
                ]
            )
            after = (rows[-1][0], rows[-1][1], int(rows[-1][2]))

    def _has_meta(self) -> bool:
        if self.db.dialect == "sqlite":
            row = self.db.one(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pit_meta'"
            )
        else:
            row = self.db.one("SELECT to_regclass('pit_meta') IS NOT NULL")
            row = row if row and row[0] else None
        return row is not None

    def schema_version(self) -> int:
        """The number of the last migration applied (0: an empty database)."""
        if not self._has_meta():
            return 0
        row = self.db.one("SELECT value FROM pit_meta WHERE key = 'schema'")
        return int(row[0]) if row else 0

    # ------------------------------------------------------------------ ingest

    def ingest(self, events: Sequence[EventIn], now: float | None = None) -> Applied:
        """Store a batch of events in one transaction (each view of each event at most once).

        Rows are written in key order, table after table in one fixed order, so that two pit
        processes committing at once wait for each other rather than deadlock. Each table of
        the store takes the batch's rows in one statement (:meth:`Db.insert`).
        """
        db = self.db
        applied = Applied()
        stamp = time.time() if now is None else now
        applied.committed_at = stamp
        # one row per event, with every view this batch has of it: a statement updates a row
        # once; a view delivered twice in the batch is a duplicate
        views: dict[tuple[str, str, int], dict[str, EventIn]] = {}
        for e in sorted(events, key=lambda e: (e.table_id, e.epoch, e.seq, e.stream)):
            views.setdefault((e.table_id, e.epoch, e.seq), {}).setdefault(e.stream, e)
        rows = []
        for (table, epoch, seq), by_stream in views.items():
            e = by_stream.get("public") or by_stream["secure"]
            public, secure = by_stream.get("public"), by_stream.get("secure")
            rows.append(
                (
                    table,
                    epoch,
                    seq,
                    e.ts,
                    e.hand_id,
                    e.type,
                    e.severity,
                    None if public is None else public.text,
                    None if secure is None else secure.text,
                    e.source,
                    stamp,
                    (PUBLIC if public is not None else 0) | (SECURE if secure is not None else 0),
                )
            )
        with db.transaction():
            # ``fresh``: the views this statement stored for the first time (SET reads the row
            # as it was), so the batch knows what is new without reading anything first
            returned = db.insert(
                "events",
                EVENT_COLUMNS,
                rows,
                "ON CONFLICT (table_id, epoch, seq) DO UPDATE SET "
                "public = COALESCE(events.public, excluded.public), "
                "secure = COALESCE(events.secure, excluded.secure), "
                "fresh = (CASE WHEN events.public IS NULL AND excluded.public IS NOT NULL "
                f"THEN {PUBLIC} ELSE 0 END) + (CASE WHEN events.secure IS NULL "
                f"AND excluded.secure IS NOT NULL THEN {SECURE} ELSE 0 END) "
                "WHERE (events.public IS NULL AND excluded.public IS NOT NULL) "
                "OR (events.secure IS NULL AND excluded.secure IS NOT NULL) "
                "RETURNING table_id, epoch, seq, fresh",
            )
            fresh = {(t, ep, int(seq)): int(bits) for t, ep, seq, bits in returned}
            new = [
                e
                for key, by_stream in views.items()
                for stream, e in by_stream.items()
                if fresh.get(key, 0) & STREAM_BIT[stream]
            ]
            applied.duplicates = len(events) - len(new)
            for event in new:
                applied.stored[event.table_id] += 1
            applied.stored_events = new
            self._streams(new)
            self._derive([e for e in new if e.stream == "public"])
            self._epochs_and_tables(new, stamp, applied)
        return applied

    def _streams(self, events: Sequence[EventIn]) -> None:
        highest: dict[tuple[str, str, str], int] = {}
        for e in events:
            key = (e.table_id, e.epoch, e.stream)
            highest[key] = max(highest.get(key, 0), e.seq)
        self.db.insert(
            "streams",
            (("table_id", "text"), ("epoch", "text"), ("stream", "text"), ("max_seq", "bigint")),
            [(t, e, stream, seq) for (t, e, stream), seq in sorted(highest.items())],
            "ON CONFLICT (table_id, epoch, stream) DO UPDATE SET "
            f"max_seq = {self.db.greatest}(streams.max_seq, excluded.max_seq)",
        )

    def _epochs_and_tables(self, events: Sequence[EventIn], stamp: float, applied: Applied) -> None:
        db = self.db
        latest: dict[tuple[str, str], EventIn] = {}
        for e in events:
            key = (e.table_id, e.epoch)
            if key not in latest or e.seq > latest[key].seq:
                latest[key] = e
        if not latest:
            return
        began = sorted(
            (
                e.table_id,
                e.epoch,
                e.ts,
                e.record.previous,
                e.record.reason,
            )
            for e in events
            if isinstance(e.record, et.JournalEpochStarted) and e.stream == "public"
        )
        returned = db.insert(
            "epochs",
            (
                ("table_id", "text"),
                ("epoch", "text"),
                ("first_ts", "text"),
                ("first_seen", "float8"),
            ),
            [(t, ep, e.ts, stamp) for (t, ep), e in sorted(latest.items())],
            "ON CONFLICT (table_id, epoch) DO NOTHING RETURNING table_id, epoch",
        )
        first_seen = sorted((str(t), str(ep)) for t, ep in returned)
        applied.new_epochs.extend(first_seen)
        # A new epoch takes over the table's row (the last, when a batch brings two); the
        # highest seq stored of it is read from streams, so nothing else of the row is written
        # per batch.
        newest = dict(first_seen)
        db.insert(
            "tables",
            (("table_id", "text"), ("epoch", "text"), ("updated_at", "float8")),
            [(table, epoch, stamp) for table, epoch in sorted(newest.items())],
            "ON CONFLICT (table_id) DO UPDATE SET epoch = excluded.epoch, "
            "updated_at = excluded.updated_at",
        )
        # how an epoch began: the chained journal.epoch.started event, its first
        db.many(
            "UPDATE epochs SET previous = ?, reason = ? WHERE table_id = ? AND epoch = ?",
            [(previous, reason, t, ep) for t, ep, _, previous, reason in began],
        )

    # ------------------------------------------------------------------ derived rows

    def _derive(self, events: Sequence[EventIn]) -> None:
        """Rule IDs, hands, holds, rulings and alarms of newly stored public events."""
        db = self.db
        event_rules: list[tuple[Any, ...]] = []
        hand_rules: set[tuple[str, str, str, str]] = set()
        rulings: list[tuple[Any, ...]] = []
        alarms: list[tuple[Any, ...]] = []
        holds_raised: list[tuple[Any, ...]] = []
        holds_resolved: list[tuple[Any, ...]] = []
        hands: dict[tuple[str, str, str], dict[str, Any]] = {}
        time_marks: set[tuple[str, str, int]] = set()
        for e in events:
            body, record = e.body, e.record
            rules = [r for r in body.get("rules", ()) if isinstance(r, str)]
            by = body.get("by") if isinstance(body.get("by"), dict) else {}
            assert isinstance(by, dict)
            for rule in rules:
                event_rules.append((e.table_id, e.epoch, e.seq, rule))
                if e.hand_id is not None:
                    hand_rules.add((e.table_id, e.epoch, e.hand_id, rule))
            if e.hand_id is not None:
                hand = hands.setdefault(
                    (e.table_id, e.epoch, e.hand_id), {"first_seq": e.seq, "last_seq": e.seq}
                )
                hand["first_seq"] = min(hand["first_seq"], e.seq)
                hand["last_seq"] = max(hand["last_seq"], e.seq)
                columns = _hand_columns(record, e.ts, rules)
                if "runouts" in columns:  # a batch may hold the hand's events in any order
                    columns["runouts"] = max(columns["runouts"], hand.get("runouts", 0))
                hand.update(columns)
            else:  # HOUSE-TIME: time is collected just before a hand starts, in no hand
                time_marks.add((e.table_id, e.epoch, e.seq))
            if isinstance(record, et.HandStarted):
                time_marks.add((e.table_id, e.epoch, e.seq))
            if record.RULING:
                cited, hold, decision = _ruling(record)
                rulings.append(
                    (
                        e.table_id,
                        e.epoch,
                        e.seq,
                        e.hand_id,
                        e.ts,
                        e.type,
                        cited or (rules[0] if rules else None),
                        hold,
                        decision,
                        _text(by.get("person")),
                        _text(by.get("role")),
                    )
                )
            # a device's fault is an alarm whatever its severity: the floor acknowledges it
            fault = record.fault if isinstance(record, et.DeviceStatus) else None
            alarm = isinstance(record, et.IntegrityAlarm)
            if alarm or e.severity == "critical" or fault is not None:
                cited, reason = _alarm(record)
                alarms.append(
                    (
                        e.table_id,
                        e.epoch,
                        e.seq,
                        e.ts,
                        e.hand_id,
                        e.type,
                        e.severity,
                        cited or (rules[0] if rules else None),
                        reason,
                    )
                )
            if isinstance(record, et.HandHold):
                # the evidence as the hold showed it: every field beside the hold's own
                evidence = record.evidence.public()
                holds_raised.append(
                    (
                        e.table_id,
                        e.epoch,
                        record.hold,
                        e.hand_id,
                        record.rule,
                        record.reason,
                        record.ruling,
                        _small(record.seat),
                        json.dumps(evidence, separators=(",", ":")),
                        e.ts,
                        e.seq,
                    )
                )
            if isinstance(record, et.HandResume) and record.hold is not None:
                holds_resolved.append(
                    (
                        e.table_id,
                        e.epoch,
                        record.hold,
                        e.hand_id,
                        e.ts,
                        e.seq,
                        record.decision,
                        record.by,
                        _text(by.get("person")),
                        _text(by.get("role")),
                    )
                )
        nothing = "ON CONFLICT DO NOTHING"
        db.insert("event_rules", _columns("table_id epoch seq rule"), event_rules, nothing)
        db.insert(
            "hand_rules", _columns("table_id epoch hand_id rule"), sorted(hand_rules), nothing
        )
        db.insert(
            "rulings",
            _columns("table_id epoch seq hand_id ts type rule hold decision person role"),
            rulings,
            nothing,
        )
        db.insert(
            "alarms",
            _columns("table_id epoch seq ts hand_id type severity rule reason"),
            alarms,
            nothing,
        )
        db.insert(
            "holds",
            _columns(
                "table_id epoch hold hand_id rule reason ruling seat evidence raised_ts raised_seq"
            ),
            _last_per_key(holds_raised, 3),
            "ON CONFLICT (table_id, epoch, hold) DO UPDATE SET hand_id = excluded.hand_id, "
            "rule = excluded.rule, reason = excluded.reason, ruling = excluded.ruling, "
            "seat = excluded.seat, evidence = excluded.evidence, raised_ts = excluded.raised_ts, "
            "raised_seq = excluded.raised_seq",
        )
        db.insert(
            "holds",
            _columns(
                "table_id epoch hold hand_id resolved_ts resolved_seq decision resolved_by "
                "person role"
            ),
            _last_per_key(holds_resolved, 3),
            "ON CONFLICT (table_id, epoch, hold) DO UPDATE SET "
            "resolved_ts = excluded.resolved_ts, resolved_seq = excluded.resolved_seq, "
            "decision = excluded.decision, resolved_by = excluded.resolved_by, "
            "person = excluded.person, role = excluded.role",
        )
        self._hands(hands)
        self._time_collected(time_marks)

    def _time_collected(self, marks: Iterable[tuple[str, str, int]]) -> None:
        """HOUSE-TIME: the time collected goes on the row of the hand that starts next.

        ``house.time.collected`` belongs to no hand: it comes in the same command as the
        ``hand.started`` after it, with no other hand's events between. Each mark (a new
        ``hand.started`` or event of no hand) looks back, a command's events at most, for the
        last time collected at or before it; the hand it belongs to is the first
        ``hand.started`` after that, once every seq between the two is stored (the missing seq,
        when it comes, is a mark too).
        """
        db = self.db
        collected: set[tuple[str, str, int]] = set()
        for table, epoch, seq in marks:
            row = db.one(
                "SELECT max(seq) FROM events WHERE table_id = ? AND epoch = ? "
                "AND seq BETWEEN ? AND ? AND type = ?",
                (table, epoch, seq - _TIME_REACH, seq, et.HouseTimeCollected.TYPE),
            )
            if row is not None and row[0] is not None:
                collected.add((table, epoch, int(row[0])))
        for table, epoch, seq in sorted(collected):
            start = db.one(
                "SELECT seq, hand_id FROM events WHERE table_id = ? AND epoch = ? "
                "AND seq > ? AND seq <= ? AND type = ? ORDER BY seq LIMIT 1",
                (table, epoch, seq, seq + _TIME_REACH, et.HandStarted.TYPE),
            )
            if start is None:
                continue
            between = db.one(
                "SELECT count(*) FROM events WHERE table_id = ? AND epoch = ? "
                "AND seq > ? AND seq < ?",
                (table, epoch, seq, start[0]),
            )
            if between is None or int(between[0]) != int(start[0]) - seq - 1:
                continue
            body = db.one(
                "SELECT public FROM events WHERE table_id = ? AND epoch = ? AND seq = ?",
                (table, epoch, seq),
            )
            record = decode(json.loads(body[0])) if body and body[0] else None
            total = _int(record.total) if isinstance(record, et.HouseTimeCollected) else None
            if total is not None:
                db.execute(
                    "UPDATE hands SET time_collected = ? "
                    "WHERE table_id = ? AND epoch = ? AND hand_id = ?",
                    (total, table, epoch, start[1]),
                )

    def _hands(self, hands: Mapping[tuple[str, str, str], Mapping[str, Any]]) -> None:
        db = self.db
        grouped: dict[tuple[str, ...], list[tuple[Any, ...]]] = defaultdict(list)
        for (table, epoch, hand_id), columns in sorted(hands.items()):
            names = tuple(sorted(k for k in columns if k not in ("first_seq", "last_seq")))
            grouped[names].append(
                (
                    table,
                    epoch,
                    hand_id,
                    columns["first_seq"],
                    columns["last_seq"],
                    *(columns[n] for n in names),
                )
            )
        for names, rows in grouped.items():
            names_all = ("table_id", "epoch", "hand_id", "first_seq", "last_seq", *names)
            updates = [
                f"first_seq = {db.least}(hands.first_seq, excluded.first_seq)",
                f"last_seq = {db.greatest}(hands.last_seq, excluded.last_seq)",
                *(
                    f"{n} = {db.greatest}(COALESCE(hands.{n}, 0), excluded.{n})"
                    if n == "runouts"  # RUN-TWICE: the most runouts any event showed
                    else f"{n} = excluded.{n}"
                    for n in names
                ),
            ]
            db.insert(
                "hands",
                _columns(" ".join(names_all)),
                rows,
                f"ON CONFLICT (table_id, epoch, hand_id) DO UPDATE SET {', '.join(updates)}",
            )

    # ------------------------------------------------------------------ status and state

    def record_status(self, table: str, body: Mapping[str, Any], now: float) -> bool:
        """A birth or death on a table's status topic; False when it was known already."""
        new, refused = self.record_statuses([(table, body)], now)
        if refused:
            raise ValueError(refused[0][2])
        return bool(new)

    def record_statuses(
        self, statuses: Sequence[tuple[str, Mapping[str, Any]]], now: float
    ) -> tuple[list[tuple[str, str]], list[tuple[str, Mapping[str, Any], str]]]:
        """Births and deaths, in one transaction: the new ones (table, ``online`` or
        ``offline``), and those refused.

        A status republished on the same connection (its degraded state or alarms changed) is
        no new birth, but the table's row takes its ``degraded`` and ``alarms``.
        """
        db = self.db
        good: list[tuple[str, str, int, Mapping[str, Any]]] = []
        refused: list[tuple[str, Mapping[str, Any], str]] = []
        for table, body in statuses:
            state, bdseq = body.get("state"), body.get("bdseq")
            if state not in ("online", "offline") or not isinstance(bdseq, int):
                reason = "a status needs state online/offline and an integer bdseq"
                refused.append((table, body, reason))
                continue
            good.append((table, str(state), bdseq, body))
        if not good:
            return [], refused
        good.sort(key=lambda g: (g[0], g[2], g[1] == "offline"))
        with db.transaction():  # births, then tables: the order every transaction takes
            rows = db.returning_many(
                "INSERT INTO births (table_id, bdseq, state, ts, body, received_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING bdseq",
                [
                    (t, b, st, _text(body.get("ts")), json.dumps(body), now)
                    for t, st, b, body in good
                ],
            )
            # the newest connection decides; its death comes after its birth, and a birth
            # republished (degraded or alarms changed) updates a table still online
            db.many(
                "INSERT INTO tables (table_id, online, bdseq, status_ts, version, degraded, "
                "alarms, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (table_id) "
                "DO UPDATE SET online = excluded.online, bdseq = excluded.bdseq, "
                "status_ts = excluded.status_ts, version = excluded.version, "
                "degraded = excluded.degraded, alarms = excluded.alarms, "
                "updated_at = excluded.updated_at WHERE excluded.bdseq > tables.bdseq "
                "OR (excluded.bdseq = tables.bdseq "
                "AND (excluded.online = 0 OR tables.online = 1))",
                [
                    (
                        t,
                        1 if st == "online" else 0,
                        b,
                        _text(body.get("ts")),
                        _text(body.get("version")),
                        1 if body.get("degraded") is True else 0,
                        json.dumps(_alarms(body.get("alarms")), separators=(",", ":")),
                        now,
                    )
                    for t, st, b, body in good
                ],
            )
        new = [(t, st) for (t, st, _, _), row in zip(good, rows, strict=True) if row is not None]
        return new, refused

    def record_state(
        self, table: str, body: Mapping[str, Any], now: float, streams: Iterable[str]
    ) -> None:
        """A table's retained snapshot: the table now, and the last seq it has published."""
        refused = self.record_states([(table, body)], now, streams)
        if refused:
            raise ValueError(refused[0][2])

    def record_states(
        self,
        states: Sequence[tuple[str, Mapping[str, Any]]],
        now: float,
        streams: Iterable[str],
    ) -> list[tuple[str, Mapping[str, Any], str]]:
        """Tables' retained snapshots, in one transaction; those refused."""
        db = self.db
        good: list[tuple[str, str, int, Mapping[str, Any]]] = []
        refused: list[tuple[str, Mapping[str, Any], str]] = []
        for table, body in states:
            epoch, seq = body.get("epoch"), body.get("seq")
            if not isinstance(epoch, str) or not isinstance(seq, int):
                refused.append((table, body, "a state needs an epoch and an integer seq"))
                continue
            good.append((table, epoch, seq, body))
        if not good:
            return refused
        good.sort(key=lambda g: (g[0], g[2]))
        known: dict[tuple[str, str, str], int] = {}
        for table, epoch, seq, _ in good:
            for stream in streams:
                key = (table, epoch, stream)
                known[key] = max(known.get(key, 0), seq)
        rows = []
        for table, epoch, seq, body in good:
            hand = body.get("hand") if isinstance(body.get("hand"), dict) else None
            hand_id = _text(hand.get("hand_id")) if hand else None
            phase = _text(hand.get("phase")) if hand else None
            text = json.dumps(body, separators=(",", ":"))
            rows.append((table, epoch, text, seq, hand_id, phase, now))
        g = db.greatest
        with db.transaction():  # streams before tables: the order every transaction takes
            db.insert(
                "streams",
                _columns("table_id epoch stream known_last"),
                [(t, e, st, seq) for (t, e, st), seq in sorted(known.items())],
                "ON CONFLICT (table_id, epoch, stream) DO UPDATE SET "
                f"known_last = {g}(streams.known_last, excluded.known_last)",
            )
            db.insert(
                "tables",
                _columns("table_id epoch state state_seq hand_id phase updated_at"),
                _last_per_key(rows, 1),  # a table's newest snapshot of the batch
                "ON CONFLICT (table_id) DO UPDATE SET "
                "state = excluded.state, state_seq = excluded.state_seq, "
                "hand_id = excluded.hand_id, phase = excluded.phase, "
                "epoch = COALESCE(tables.epoch, excluded.epoch), updated_at = excluded.updated_at "
                "WHERE tables.state_seq IS NULL OR tables.epoch IS NULL "
                "OR tables.epoch <> excluded.epoch OR excluded.state_seq >= tables.state_seq",
            )
        return refused

    def record_known_last(self, table: str, epoch: str, stream: str, last: int) -> None:
        """The table said its journal goes up to ``last`` (a replay's answer)."""
        g = self.db.greatest
        self.db.execute(
            "INSERT INTO streams (table_id, epoch, stream, known_last) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (table_id, epoch, stream) DO UPDATE SET "
            f"known_last = {g}(streams.known_last, excluded.known_last)",
            (table, epoch, stream, last),
        )

    def record_reject(
        self,
        topic: str,
        size: int,
        digest: str,
        head: str,
        reason: str,
        table: str | None = None,
        now: float | None = None,
    ) -> None:
        """A message that is not what its topic carries (kept as a bounded record), and the
        table it came from."""
        self.db.execute(
            "INSERT INTO rejects (topic, size, sha256, head, reason, received_at, table_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                topic[:300],
                size,
                digest,
                head,
                reason[:300],
                time.time() if now is None else now,
                None if table is None else table[:200],
            ),
        )

    def rejects(self, *, table: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The refused messages, newest first (of one table)."""
        where = "WHERE table_id = ? " if table is not None else ""
        rows = self.db.all(
            "SELECT id, table_id, topic, size, sha256, head, reason, received_at FROM rejects "
            f"{where}ORDER BY received_at DESC, id DESC LIMIT ?",
            (*(() if table is None else (table,)), limit),
        )
        names = ("id", "table_id", "topic", "size", "sha256", "head", "reason", "received_at")
        return [dict(zip(names, r, strict=True)) for r in rows]

    def reject_counts(self, since: float) -> dict[str, int]:
        """Table → messages refused from it since ``since`` (Unix time)."""
        rows = self.db.all(
            "SELECT table_id, COUNT(*) FROM rejects WHERE received_at >= ? "
            "AND table_id IS NOT NULL GROUP BY table_id",
            (since,),
        )
        return {r[0]: int(r[1]) for r in rows}

    # ------------------------------------------------------------------ gaps

    def streams_behind(self) -> list[tuple[str, str, str, int, int]]:
        """``(table, epoch, stream, contiguous, end)`` of every stream with a seq missing.

        One query for the whole floor: a stream whose seqs after its contiguous mark are all
        stored (their count is the span) has its mark moved to the end at once, and is not
        returned; only the streams with a hole are looked at seq by seq.
        """
        g = self.db.greatest
        rows = self.db.all(
            f"SELECT s.table_id, s.epoch, s.stream, s.contiguous, s.max_seq, "
            f"{g}(s.max_seq, s.known_last), (SELECT COUNT(*) FROM events e "
            "WHERE e.table_id = s.table_id AND e.epoch = s.epoch AND e.seq > s.contiguous "
            "AND e.seq <= s.max_seq AND ((s.stream = 'public' AND e.public IS NOT NULL) "
            "OR (s.stream = 'secure' AND e.secure IS NOT NULL))) "
            f"FROM streams s WHERE s.contiguous < {g}(s.max_seq, s.known_last) "
            "ORDER BY s.table_id, s.epoch, s.stream"
        )
        behind = []
        whole = []
        for table, epoch, stream, contiguous, highest, end, count in rows:
            if int(count) == int(highest) - int(contiguous) and int(end) == int(highest):
                whole.append((table, epoch, stream, int(highest)))
            elif int(count) == int(highest) - int(contiguous):
                # every seq stored up to the highest; the tail the table announced is missing
                whole.append((table, epoch, stream, int(highest)))
                behind.append((table, epoch, stream, int(highest), int(end)))
            else:
                behind.append((table, epoch, stream, int(contiguous), int(end)))
        self.advance(whole)
        return behind

    def holes(
        self, table: str, epoch: str, stream: str, contiguous: int, end: int, limit: int = 5000
    ) -> tuple[int, list[tuple[int, int]]]:
        """Advance the stream's contiguous mark; the ranges still missing up to ``end``."""
        mark, holes = self.find_holes(table, epoch, stream, contiguous, end, limit)
        self.advance([(table, epoch, stream, mark)])
        return mark, holes

    def find_holes(
        self, table: str, epoch: str, stream: str, contiguous: int, end: int, limit: int = 5000
    ) -> tuple[int, list[tuple[int, int]]]:
        """How far the stream is contiguous now, and the ranges missing above, up to ``end``
        (reads only: :meth:`advance` records the marks of a whole scan in one transaction)."""
        column = STREAM_COLUMN[stream]
        present = [
            int(r[0])
            for r in self.db.all(
                f"SELECT seq FROM events WHERE table_id = ? AND epoch = ? AND seq > ? "
                f"AND {column} IS NOT NULL ORDER BY seq LIMIT ?",
                (table, epoch, contiguous, limit),
            )
        ]
        mark = contiguous
        for seq in present:
            if seq != mark + 1:
                break
            mark = seq
        holes: list[tuple[int, int]] = []
        expected = mark + 1
        for seq in present:
            if seq <= mark:
                continue
            if seq > expected:
                holes.append((expected, seq - 1))
            expected = seq + 1
        if len(present) < limit and end >= expected:
            holes.append((expected, end))
        return mark, holes

    def watermarks(self, streams: Sequence[str]) -> list[tuple[str, str, int, bool]]:
        """``(table, epoch, seq, online)`` of every epoch with something stored contiguously:
        each event numbered 1 to ``seq`` is stored on every one of ``streams`` (never past a
        gap). ``online`` is false for a table whose last status was its death."""
        rows = self.db.all(
            "SELECT s.table_id, s.epoch, s.stream, s.contiguous, t.online FROM streams s "
            "LEFT JOIN tables t ON t.table_id = s.table_id ORDER BY 1, 2"
        )
        marks: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        online: dict[str, bool] = {}
        for table, epoch, stream, contiguous, up in rows:
            marks[(table, epoch)][stream] = int(contiguous)
            online[table] = up is None or bool(up)
        found = []
        for (table, epoch), by_stream in marks.items():
            mark = min(by_stream.get(stream, 0) for stream in streams)
            if mark > 0:
                found.append((table, epoch, mark, online[table]))
        return found

    def advance(self, marks: Sequence[tuple[str, str, str, int]]) -> None:
        """Record how far streams are contiguous (one transaction; marks only move up)."""
        if not marks:
            return
        g = self.db.greatest
        with self.db.transaction():
            self.db.many(
                f"UPDATE streams SET contiguous = {g}(contiguous, ?) "
                "WHERE table_id = ? AND epoch = ? AND stream = ?",
                [(mark, t, e, s) for t, e, s, mark in sorted(marks)],
            )

    def open_gaps(
        self, table: str | None = None, epoch: str | None = None, stream: str | None = None
    ) -> list[Gap]:
        """The gaps not closed (of one stream), oldest first."""
        where = ["closed_at IS NULL"]
        params: list[Any] = []
        for name, value in (("table_id", table), ("epoch", epoch), ("stream", stream)):
            if value is not None:
                where.append(f"{name} = ?")
                params.append(value)
        rows = self.db.all(
            "SELECT id, table_id, epoch, stream, from_seq, to_seq, first_seen, state, attempts, "
            f"asked_at, reason FROM gaps WHERE {' AND '.join(where)} "
            "ORDER BY first_seen, table_id, from_seq",
            params,
        )
        return [_gap(r) for r in rows]

    def track_holes(
        self,
        table: str,
        epoch: str,
        stream: str,
        holes: Sequence[tuple[int, int]],
        now: float,
        keep: Sequence[tuple[int, int]] = (),
    ) -> list[Gap]:
        """Make the open gaps of a stream what ``holes`` says; return them.

        ``keep`` are ranges missing for too short a time to be gaps of their own: they only keep
        (and narrow) a gap they overlap. A gap that overlaps nothing missing is closed.
        """
        db = self.db
        with db.transaction():
            existing = self.open_gaps(table, epoch, stream)
            kept: set[int] = set()
            ranges = [(a, b, True) for a, b in holes] + [(a, b, False) for a, b in keep]
            for first, last, new in ranges:
                match = next(
                    (
                        gap
                        for gap in existing
                        if gap.id not in kept and gap.from_seq <= last and first <= gap.to_seq
                    ),
                    None,
                )
                if match is None:
                    if not new:
                        continue
                    db.execute(
                        "INSERT INTO gaps (table_id, epoch, stream, from_seq, to_seq, first_seen, "
                        "state) VALUES (?, ?, ?, ?, ?, ?, 'open') ON CONFLICT DO NOTHING",
                        (table, epoch, stream, first, last, now),
                    )
                    continue
                kept.add(match.id)
                if (match.from_seq, match.to_seq) != (first, last):
                    db.execute(
                        "UPDATE gaps SET from_seq = ?, to_seq = ? WHERE id = ?",
                        (first, last, match.id),
                    )
            for gap in existing:
                if gap.id in kept:
                    continue
                if gap.attempts == 0:  # filled by the stream itself, a moment late
                    db.execute("DELETE FROM gaps WHERE id = ?", (gap.id,))
                else:
                    db.execute(
                        "UPDATE gaps SET state = 'repaired', closed_at = ? WHERE id = ?",
                        (now, gap.id),
                    )
            return self.open_gaps(table, epoch, stream)

    def claim_gap(self, gap: Gap, pit: str, now: float, retry: float) -> bool:
        """Take the asking of ``gap`` for this pit (another process may have asked already)."""
        cursor = self.db.execute(
            "UPDATE gaps SET asked_at = ?, asked_by = ?, attempts = attempts + 1, "
            "state = CASE WHEN state = 'open' THEN 'asked' ELSE state END "
            "WHERE id = ? AND closed_at IS NULL AND state <> 'lost' "
            "AND (asked_at IS NULL OR asked_at <= ?)",
            (now, pit, gap.id, now - retry),
        )
        return int(cursor.rowcount) == 1

    def mark_gap(self, gap_id: int, state: str, reason: str | None) -> None:
        """Record what the table said about a gap (``lost``: it cannot be repaired)."""
        self.db.execute(
            "UPDATE gaps SET state = ?, reason = ? WHERE id = ? AND closed_at IS NULL",
            (state, reason, gap_id),
        )

    def gap_counts(self, unrepaired_after: int) -> dict[str, int]:
        """Open gaps: all, asked, and those shown as unrepaired (lost or asked often)."""
        row = self.db.one(
            "SELECT COUNT(*), "
            "COALESCE(SUM(CASE WHEN state = 'asked' THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN state = 'lost' OR attempts >= ? THEN 1 ELSE 0 END), 0) "
            "FROM gaps WHERE closed_at IS NULL",
            (unrepaired_after,),
        )
        assert row is not None
        return {"open": int(row[0]), "asked": int(row[1]), "unrepaired": int(row[2])}

    # ------------------------------------------------------------------ reading

    def tables(self, table: str | None = None) -> list[dict[str, Any]]:
        """Every table the pit has heard of (or only ``table``), with its open holds and gaps."""
        where = "WHERE t.table_id = ? " if table is not None else ""
        rows = self.db.all(
            "SELECT t.table_id, t.online, t.bdseq, t.status_ts, t.version, t.epoch, "
            "(SELECT COALESCE(MAX(s.max_seq), 0) FROM streams s WHERE s.table_id = t.table_id "
            "AND s.epoch = t.epoch), "
            "t.hand_id, t.phase, t.state_seq, "
            "(SELECT COUNT(*) FROM holds h WHERE h.table_id = t.table_id "
            "AND h.resolved_seq IS NULL AND h.raised_seq IS NOT NULL), "
            "(SELECT COUNT(*) FROM gaps g WHERE g.table_id = t.table_id AND g.closed_at IS NULL), "
            "t.degraded, t.alarms, (SELECT s.contiguous FROM streams s WHERE s.table_id = "
            "t.table_id AND s.epoch = t.epoch AND s.stream = 'public') "
            f"FROM tables t {where}ORDER BY t.table_id",
            () if table is None else (table,),
        )
        return [
            {
                "table_id": r[0],
                "online": None if r[1] is None else bool(r[1]),
                "bdseq": r[2],
                "status_ts": r[3],
                "version": r[4],
                "epoch": r[5],
                "last_seq": r[6],
                "hand_id": r[7],
                "phase": r[8],
                "state_seq": r[9],
                "open_holds": int(r[10]),
                "open_gaps": int(r[11]),
                "degraded": bool(r[12]),
                "alarms": _alarms(_json_loads(r[13])),
                "stored_seq": int(r[14] or 0),
            }
            for r in rows
        ]

    def table_state(self, table: str) -> dict[str, Any] | None:
        """A table's last retained snapshot."""
        row = self.db.one("SELECT state FROM tables WHERE table_id = ?", (table,))
        state = _json_loads(row[0]) if row else None
        return state if isinstance(state, dict) else None

    def current_epoch(self, table: str) -> str | None:
        """The epoch the table's row follows (its newest)."""
        row = self.db.one("SELECT epoch FROM tables WHERE table_id = ?", (table,))
        return row[0] if row else None

    def epochs(self, table: str) -> list[dict[str, Any]]:
        """Every epoch of a table, oldest first."""
        rows = self.db.all(
            "SELECT epoch, first_ts, first_seen, previous, reason FROM epochs WHERE table_id = ? "
            "ORDER BY first_seen",
            (table,),
        )
        names = ("epoch", "first_ts", "first_seen", "previous", "reason")
        return [dict(zip(names, r, strict=True)) for r in rows]

    def events(
        self, table: str, epoch: str, since_seq: int, limit: int, stream: Stream = "public"
    ) -> list[str]:
        """The stored envelopes after ``since_seq``, in seq order (JSON text each)."""
        column = STREAM_COLUMN[stream]
        rows = self.db.all(
            f"SELECT {column} FROM events WHERE table_id = ? AND epoch = ? AND seq > ? "
            f"AND {column} IS NOT NULL ORDER BY seq LIMIT ?",
            (table, epoch, since_seq, limit),
        )
        return [r[0] for r in rows]

    def event_keys(self, table: str | None = None) -> list[tuple[str, str, int]]:
        """Every stored event's key (for checks and benchmarks), in order."""
        if table is None:
            rows = self.db.all("SELECT table_id, epoch, seq FROM events ORDER BY 1, 2, 3")
        else:
            rows = self.db.all(
                "SELECT table_id, epoch, seq FROM events WHERE table_id = ? ORDER BY 2, 3",
                (table,),
            )
        return [(r[0], r[1], int(r[2])) for r in rows]

    def holds(
        self,
        *,
        open_only: bool = True,
        table: str | None = None,
        resolved_last: int | None = None,
    ) -> list[dict[str, Any]]:
        """Holds, oldest first (open ones: raised and not resolved); ``resolved_last``: that
        many resolved ones instead, the last resolved first."""
        where = ["raised_seq IS NOT NULL"]
        params: list[Any] = []
        order = "raised_ts, table_id, raised_seq"
        if open_only:
            where.append("resolved_seq IS NULL")
        if table is not None:
            where.append("table_id = ?")
            params.append(table)
        if resolved_last is not None:
            where.append("resolved_seq IS NOT NULL")
            order = f"resolved_ts DESC, table_id LIMIT {int(resolved_last)}"
        rows = self.db.all(
            "SELECT table_id, epoch, hold, hand_id, rule, reason, ruling, seat, evidence, "
            "raised_ts, raised_seq, resolved_ts, resolved_seq, decision, resolved_by, person, "
            f"role FROM holds WHERE {' AND '.join(where)} ORDER BY {order}",
            params,
        )
        return [
            {
                "table_id": r[0],
                "epoch": r[1],
                "hold": r[2],
                "hand_id": r[3],
                "rule": r[4],
                "reason": r[5],
                "ruling": r[6],
                "seat": r[7],
                "evidence": _object(_json_loads(r[8])),
                "raised_ts": r[9],
                "raised_seq": r[10],
                "resolution": None
                if r[12] is None
                else {
                    "ts": r[11],
                    "seq": r[12],
                    "decision": r[13],
                    "by": r[14],
                    "person": r[15],
                    "role": r[16],
                },
            }
            for r in rows
        ]

    def hands(
        self,
        *,
        table: str | None = None,
        rule: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 200,
    ) -> list[dict[str, Any]]:
        """Hands, newest first, by table, rule and start time."""
        where: list[str] = []
        params: list[Any] = []
        if table is not None:
            where.append("h.table_id = ?")
            params.append(table)
        if rule is not None:
            where.append(
                "EXISTS (SELECT 1 FROM hand_rules r WHERE r.table_id = h.table_id AND "
                "r.epoch = h.epoch AND r.hand_id = h.hand_id AND r.rule = ?)"
            )
            params.append(rule)
        if since is not None:
            where.append("h.started_ts >= ?")
            params.append(since)
        if until is not None:
            where.append("h.started_ts < ?")
            params.append(until)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self.db.all(
            f"SELECT {_HAND_COLUMNS} FROM hands h {clause} "
            "ORDER BY h.started_ts DESC, h.table_id, h.hand_id LIMIT ?",
            [*params, limit],
        )
        hands = [_hand(r) for r in rows]
        self._attach(hands)
        return hands

    def hand(self, hand_id: str) -> dict[str, Any] | None:
        """One hand (the newest epoch's, when a hand id was used by two)."""
        row = self.db.one(
            f"SELECT {_HAND_COLUMNS} FROM hands h WHERE h.hand_id = ? "
            "ORDER BY h.first_seq DESC LIMIT 1",
            (hand_id,),
        )
        if row is None:
            return None
        hand = _hand(row)
        self._attach([hand])
        return hand

    def _attach(self, hands: list[dict[str, Any]]) -> None:
        """Each hand's rule IDs and rulings."""
        for hand in hands:
            key = (hand["table_id"], hand["epoch"], hand["hand_id"])
            hand["rules"] = [
                r[0]
                for r in self.db.all(
                    "SELECT rule FROM hand_rules WHERE table_id = ? AND epoch = ? AND hand_id = ? "
                    "ORDER BY rule",
                    key,
                )
            ]
            hand["rulings"] = [
                {
                    "seq": r[0],
                    "ts": r[1],
                    "type": r[2],
                    "rule": r[3],
                    "hold": r[4],
                    "decision": r[5],
                    "person": r[6],
                    "role": r[7],
                }
                for r in self.db.all(
                    "SELECT seq, ts, type, rule, hold, decision, person, role FROM rulings "
                    "WHERE table_id = ? AND epoch = ? AND hand_id = ? ORDER BY seq",
                    key,
                )
            ]

    def hand_events(
        self, table: str, epoch: str, hand_id: str, stream: Stream = "public"
    ) -> list[dict[str, Any]]:
        """A hand's stored envelopes in seq order (the secure view where it is stored and
        ``stream`` is secure; the public one otherwise)."""
        column = "COALESCE(secure, public)" if stream == "secure" else "public"
        rows = self.db.all(
            f"SELECT {column} FROM events WHERE table_id = ? AND epoch = ? AND hand_id = ? "
            "ORDER BY seq",
            (table, epoch, hand_id),
        )
        return _envelopes(r[0] for r in rows)

    def alarms(
        self, *, since: str | None = None, limit: int = 200, unacknowledged: bool = False
    ) -> list[dict[str, Any]]:
        """Alarms, newest first, with who acknowledged each (``unacknowledged``: only those
        nobody has)."""
        where = " AND k.seq IS NULL" if unacknowledged else ""
        rows = self.db.all(
            "SELECT a.table_id, a.epoch, a.seq, a.ts, a.hand_id, a.type, a.severity, a.rule, "
            "a.reason, k.person, k.acked_at FROM alarms a LEFT JOIN alarm_acks k ON "
            "k.table_id = a.table_id AND k.epoch = a.epoch AND k.seq = a.seq "
            f"WHERE a.ts >= ?{where} ORDER BY a.ts DESC LIMIT ?",
            (since or "", limit),
        )
        names = (
            "table_id",
            "epoch",
            "seq",
            "ts",
            "hand_id",
            "type",
            "severity",
            "rule",
            "reason",
            "acked_by",
            "acked_at",
        )
        return [dict(zip(names, r, strict=True)) for r in rows]

    def ack_alarm(
        self, table: str, epoch: str, seq: int, person: str, roles: Sequence[str], now: float
    ) -> Literal["acked", "unknown", "already"]:
        """``person`` acknowledged an alarm: ``acked``, or ``unknown`` (no such alarm) or
        ``already`` (the first acknowledgement stands)."""
        with self.db.transaction():
            known = self.db.one(
                "SELECT 1 FROM alarms WHERE table_id = ? AND epoch = ? AND seq = ?",
                (table, epoch, seq),
            )
            if known is None:
                return "unknown"
            rows = self.db.returning_many(
                "INSERT INTO alarm_acks (table_id, epoch, seq, person, roles, acked_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING seq",
                [(table, epoch, seq, person, json.dumps(sorted(roles)), now)],
            )
        return "acked" if rows[0] is not None else "already"

    def table_states(self) -> dict[str, dict[str, Any]]:
        """Every table's last retained snapshot, by table."""
        rows = self.db.all("SELECT table_id, state FROM tables WHERE state IS NOT NULL")
        states = {r[0]: _json_loads(r[1]) for r in rows}
        return {table: state for table, state in states.items() if isinstance(state, dict)}

    def resolved_holds(self, limit: int = 20) -> list[dict[str, Any]]:
        """The holds resolved last, newest first."""
        return self.holds(open_only=False, resolved_last=limit)

    def recent_events(
        self, table: str, epoch: str, limit: int, stream: Stream = "public", after: int = 0
    ) -> list[dict[str, Any]]:
        """A table's newest envelopes after seq ``after``, newest first (the secure view where it
        is stored and ``stream`` is secure)."""
        column = "COALESCE(secure, public)" if stream == "secure" else "public"
        rows = self.db.all(
            f"SELECT {column} FROM events WHERE table_id = ? AND epoch = ? AND seq > ? "
            f"AND {column} IS NOT NULL ORDER BY seq DESC LIMIT ?",
            (table, epoch, after, limit),
        )
        return _envelopes(r[0] for r in rows)

    def births(self, table: str) -> list[dict[str, Any]]:
        """A table's births and deaths, in order."""
        rows = self.db.all(
            "SELECT bdseq, state, ts, received_at FROM births WHERE table_id = ? "
            "ORDER BY bdseq, received_at",
            (table,),
        )
        return [{"bdseq": r[0], "state": r[1], "ts": r[2], "received_at": r[3]} for r in rows]

    def gaps(self, *, open_only: bool = True) -> list[dict[str, Any]]:
        """Gaps (open ones first, oldest first)."""
        where = "WHERE closed_at IS NULL" if open_only else ""
        rows = self.db.all(
            "SELECT id, table_id, epoch, stream, from_seq, to_seq, first_seen, state, attempts, "
            f"asked_at, reason, closed_at FROM gaps {where} ORDER BY first_seen"
        )
        names = (
            "id",
            "table_id",
            "epoch",
            "stream",
            "from_seq",
            "to_seq",
            "first_seen",
            "state",
            "attempts",
            "asked_at",
            "reason",
            "closed_at",
        )
        return [dict(zip(names, r, strict=True)) for r in rows]

    def counts(self) -> dict[str, int]:
        """Rows in the main tables (for reports)."""
        return {
            name: int(self.db.one(f"SELECT COUNT(*) FROM {name}")[0])  # type: ignore[index]
            for name in ("tables", "events", "hands", "holds", "alarms", "births", "gaps")
        }

    # ------------------------------------------------------------------ users and sessions

    def add_user(self, username: str, password_hash: str, roles: Sequence[str]) -> None:
        """Create a user, or replace its password and roles."""
        self.db.execute(
            "INSERT INTO users (username, password_hash, roles, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (username) DO UPDATE SET password_hash = excluded.password_hash, "
            "roles = excluded.roles",
            (username, password_hash, json.dumps(sorted(roles)), time.time()),
        )

    def user(self, username: str) -> tuple[str, list[str]] | None:
        """A user's password hash and roles."""
        row = self.db.one("SELECT password_hash, roles FROM users WHERE username = ?", (username,))
        return (row[0], json.loads(row[1])) if row else None

    def set_password_hash(self, username: str, password_hash: str) -> None:
        """Store a re-hashed password (stronger parameters)."""
        self.db.execute(
            "UPDATE users SET password_hash = ? WHERE username = ?", (password_hash, username)
        )

    def add_session(self, token_sha256: str, username: str, expires_at: float) -> None:
        """Remember a logged-in session (by its token's digest; forget expired ones)."""
        with self.db.transaction():
            self.db.execute("DELETE FROM sessions WHERE expires_at < ?", (time.time(),))
            self.db.execute(
                "INSERT INTO sessions (token_sha256, username, expires_at) VALUES (?, ?, ?)",
                (token_sha256, username, expires_at),
            )

    def users(self, now: float) -> list[dict[str, Any]]:
        """Every user, by name: ``username``, ``roles``, ``created_at``, ``last_login_at`` (None:
        not recorded), ``sessions`` (how many are open at ``now``) and ``locked_out`` (each
        client address that must still wait before trying their password, with until when)."""
        db = self.db
        sessions = {
            str(name): int(count)
            for name, count in db.all(
                "SELECT username, COUNT(*) FROM sessions WHERE expires_at > ? GROUP BY username",
                (now,),
            )
        }
        locked: dict[str, list[dict[str, Any]]] = {}
        for name, address, until in db.all(
            "SELECT username, address, locked_until FROM login_failures WHERE locked_until > ? "
            "ORDER BY username, address",
            (now,),
        ):
            locked.setdefault(name, []).append({"address": address, "until": float(until)})
        return [
            {
                "username": name,
                "roles": json.loads(roles),
                "created_at": float(created),
                "last_login_at": None if last is None else float(last),
                "sessions": sessions.get(name, 0),
                "locked_out": locked.get(name, []),
            }
            for name, roles, created, last in db.all(
                "SELECT username, roles, created_at, last_login_at FROM users ORDER BY username"
            )
        ]

    def remove_user(self, username: str, now: float) -> int | None:
        """Remove a user with every session of theirs and their wrong-password counts, in one
        transaction; the number of their sessions that were open at ``now`` (None: no such
        user). A session's next request finds no session and is sent to log in."""
        db = self.db
        with db.transaction():
            row = db.one(
                "SELECT COUNT(*) FROM sessions WHERE username = ? AND expires_at > ?",
                (username, now),
            )
            db.execute("DELETE FROM sessions WHERE username = ?", (username,))
            db.execute("DELETE FROM login_failures WHERE username = ?", (username,))
            removed = db.all("DELETE FROM users WHERE username = ? RETURNING username", (username,))
        if not removed:
            return None
        return int(row[0]) if row else 0

    def end_session(self, token_sha256: str) -> None:
        """Forget a session (logging out)."""
        self.db.execute("DELETE FROM sessions WHERE token_sha256 = ?", (token_sha256,))

    def session_user(self, token_sha256: str, now: float) -> str | None:
        """The user of a live session."""
        row = self.db.one(
            "SELECT username FROM sessions WHERE token_sha256 = ? AND expires_at > ?",
            (token_sha256, now),
        )
        return row[0] if row else None

    # ------------------------------------------------------------------ lock-out

    def login_attempt(self, username: str, address: str, now: float, policy: LockOut) -> float:
        """A password is about to be checked for ``username`` from ``address``: 0 when it may
        be (the attempt is counted now, and cleared by :meth:`login_succeeded`), or the seconds
        the address must still wait for that user (the attempt is refused and not counted).

        Counted before the password is checked, in one transaction every pit process of the
        store sees: attempts made at once cannot slip past the count together.
        """
        db = self.db
        with db.transaction():
            db.execute("DELETE FROM login_failures WHERE last_at < ?", (now - policy.forget,))
            row = db.all(
                "INSERT INTO login_failures (username, address, failures, first_at, last_at) "
                "VALUES (?, ?, 1, ?, ?) ON CONFLICT (username, address) DO UPDATE SET "
                "failures = CASE WHEN login_failures.locked_until > excluded.last_at "
                "THEN login_failures.failures ELSE login_failures.failures + 1 END, "
                "last_at = CASE WHEN login_failures.locked_until > excluded.last_at "
                "THEN login_failures.last_at ELSE excluded.last_at END "
                "RETURNING failures, locked_until",
                (username, address, now, now),
            )[0]
            failures, locked_until = int(row[0]), float(row[1])
            if locked_until > now:
                return locked_until - now
            wait = policy.delay(failures)
            if wait > 0:
                db.execute(
                    "UPDATE login_failures SET locked_until = ? WHERE username = ? AND address = ?",
                    (now + wait, username, address),
                )
            counted = db.one("SELECT COUNT(*) FROM login_failures")
            over = int(counted[0]) - policy.keep if counted else 0
            if over > 0:  # the longest quiet first
                db.execute(
                    "DELETE FROM login_failures WHERE (username, address) IN (SELECT username, "
                    "address FROM login_failures ORDER BY last_at LIMIT ?)",
                    (over,),
                )
        return 0.0

    def login_succeeded(self, username: str, address: str, now: float | None = None) -> None:
        """The right password for ``username`` from ``address`` (at ``now``, by default the
        time now): its count starts again, and the user's last login is then."""
        with self.db.transaction():
            self.db.execute(
                "DELETE FROM login_failures WHERE username = ? AND address = ?",
                (username, address),
            )
            self.db.execute(
                "UPDATE users SET last_login_at = ? WHERE username = ?",
                (time.time() if now is None else now, username),
            )

    def login_failures(self) -> list[tuple[str, str, int, float]]:
        """``(username, address, failures, locked_until)`` of every count kept."""
        rows = self.db.all(
            "SELECT username, address, failures, locked_until FROM login_failures "
            "ORDER BY username, address"
        )
        return [(r[0], r[1], int(r[2]), float(r[3])) for r in rows]


#: Events read at once when a migration derives its new columns from the stored events.
_BACKFILL_BATCH = 2000

#: How many seqs apart time collected (``house.time.collected``) and the start of its hand may be:
#: they are events of one command, a few seqs apart.
_TIME_REACH = 64

_HAND_COLUMNS = (
    "h.table_id, h.epoch, h.hand_id, h.started_ts, h.ended_ts, h.outcome, h.button, h.seats, "
    "h.blinds, h.ante, h.stacks_before, h.stacks_after, h.payouts, h.pot, h.rake, h.first_seq, "
    "h.last_seq, h.rake_pots, h.jackpot, h.rake_waived, h.time_collected, h.straddles, "
    "h.ante_seat, h.runouts"
)


def _hand(r: Row) -> dict[str, Any]:
    """A hand's row in the API's shape (a column stored before its values were checked, of
    another shape, reads as null)."""
    return {
        "table_id": r[0],
        "epoch": r[1],
        "hand_id": r[2],
        "started_ts": r[3],
        "ended_ts": r[4],
        "outcome": r[5] if r[5] in ("completed", "misdeal", "void") else None,
        "button": r[6],
        "seats": _seat_list(_json_loads(r[7])),
        "blinds": _int_list(_json_loads(r[8])),
        "ante": r[9],
        "stacks_before": _seat_chips(_json_loads(r[10])),
        "stacks_after": _seat_chips(_json_loads(r[11])),
        "payouts": _seat_chips(_json_loads(r[12])),
        "pot": r[13],
        "rake": r[14],
        "first_seq": r[15],
        "last_seq": r[16],
        "rake_pots": _int_list(_json_loads(r[17])),
        "jackpot": r[18],
        "rake_waived": r[19],
        "time_collected": r[20],
        "straddles": _seat_chips(_json_loads(r[21])),
        "ante_seat": r[22],
        "runouts": r[23],
    }


def _hand_columns(record: EventData, ts: str, rules: Sequence[str] = ()) -> dict[str, Any]:
    """The columns of a hand's row that this event decides (a value a column cannot hold is left
    out, not served: controller/pit/published.py names it among the refused messages)."""
    if isinstance(record, et.HandStarted):
        straddles = _seat_chips(dict(record.straddles or {}))
        return {
            "started_ts": ts,
            "straddles": json.dumps(straddles) if straddles else None,
            "runouts": 1,
            "button": _small(record.button),
            "seats": _json_or_null(_seat_list(list(record.seats))),
            "blinds": _json_or_null(_int_list(list(record.blinds))),
            "ante": _int(record.ante),
            "stacks_before": _json_or_null(_seat_chips(dict(record.stacks))),
        }
    outcome = HAND_END.get(type(record))
    if outcome is not None:
        columns: dict[str, Any] = {"ended_ts": ts, "outcome": outcome}
        if isinstance(record, et.HandCompleted):
            columns["stacks_after"] = _json_or_null(_seat_chips(dict(record.stacks)))
        return columns
    if isinstance(record, et.PotAwarded):
        return {
            "payouts": _json_or_null(_seat_chips(dict(record.payouts))),
            "pot": _int(sum(pot.amount for pot in record.pots)),
        }
    if isinstance(record, et.PotRakeTaken):  # HOUSE-RAKE, HOUSE-DROP-JACKPOT
        rake_pots = _int_list(list(record.pots), keep_valid=True)
        return {
            "rake": _int(record.rake),
            "rake_pots": None if rake_pots is None else json.dumps(rake_pots),
            "jackpot": _int(record.jackpot),
            "rake_waived": record.waived,
        }
    if isinstance(record, et.BoardRunoutStarted):  # RUN-TWICE
        run = _small(record.run)
        return {} if run is None else {"runouts": run}
    if isinstance(record, et.BettingAction) and record.blind == "ante" and "ANTE-TABLE" in rules:
        return {"ante_seat": _small(record.seat)}
    return {}


def _ruling(record: EventData) -> tuple[str | None, str | None, str | None]:
    """A ruling's rule, the hold it decides and the decision, as its record says them."""
    if isinstance(record, et.HandResume | et.FloorOverride):
        return record.rule, record.hold, record.decision
    if isinstance(record, et.HandHold):
        return record.rule, record.hold, record.ruling
    if isinstance(record, et.HandMisdeal | et.HandVoid):
        return record.rule, None, None
    return None, None, None  # an award, a corrected action: the rules cited say it


def _alarm(record: EventData) -> tuple[str | None, str | None]:
    """An alarm's rule and reason: a device's fault, or what the event says of itself (an
    event this pit does not know, or whose data did not fit its type, as it came)."""
    if isinstance(record, et.DeviceStatus) and record.fault is not None:
        detail = f": {record.detail}" if record.detail is not None else ""
        return None, f"{record.device} fault {record.fault}{detail}"
    if isinstance(record, Recorded):
        written = record.public()
        return _text(written.get("rule")), _text(written.get("reason"))
    return _text(getattr(record, "rule", None)), _text(getattr(record, "reason", None))


def _gap(r: Row) -> Gap:
    return Gap(
        int(r[0]),
        r[1],
        r[2],
        r[3],
        int(r[4]),
        int(r[5]),
        float(r[6]),
        r[7],
        int(r[8]),
        None if r[9] is None else float(r[9]),
        r[10],
    )


#: The PostgreSQL type of each column :meth:`Db.insert` writes (every other one is text).
COLUMN_TYPES: dict[str, str] = {
    "seq": "bigint",
    "first_seq": "bigint",
    "last_seq": "bigint",
    "max_seq": "bigint",
    "known_last": "bigint",
    "raised_seq": "bigint",
    "resolved_seq": "bigint",
    "state_seq": "bigint",
    "ante": "bigint",
    "pot": "bigint",
    "rake": "bigint",
    "jackpot": "bigint",
    "time_collected": "bigint",
    "runouts": "integer",
    "ante_seat": "integer",
    "seat": "integer",
    "button": "integer",
    "fresh": "integer",
    "first_seen": "float8",
    "committed_at": "float8",
    "updated_at": "float8",
}


def _columns(names: str) -> tuple[Column, ...]:
    """Columns named by their names, with their types."""
    return tuple((name, COLUMN_TYPES.get(name, "text")) for name in names.split())


def _last_per_key(rows: Sequence[tuple[Any, ...]], width: int) -> list[tuple[Any, ...]]:
    """The rows sorted, keeping the last of those whose first ``width`` values are equal (one
    statement may update a row once: the last row of a key is what updating row by row left)."""
    last: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in sorted(rows, key=lambda r: tuple("" if v is None else v for v in r[:width])):
        last[row[:width]] = row
    return list(last.values())


def _alarms(value: Any) -> list[dict[str, Any]]:
    """The alarms of a status body, as the console shows them: each an object with its
    ``alarm`` (text), ``detail`` and ``since`` (text or null) and what else it holds; 50 at
    most. An item of another shape is kept as a ``malformed`` alarm, never dropped silently."""
    if not isinstance(value, list):
        return []
    out: list[dict[str, Any]] = []
    for item in value[:50]:
        if isinstance(item, dict) and isinstance(item.get("alarm"), str):
            out.append(
                {
                    **item,
                    "detail": _text(item.get("detail")),
                    "since": _text(item.get("since")),
                }
            )
        else:
            out.append({"alarm": "malformed", "detail": json.dumps(item)[:200], "since": None})
    return out


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    """An integer a BIGINT column holds (anything else: None)."""
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) < value < 2**63:
        return value
    return None


def _small(value: Any) -> int | None:
    """A seat, a button, a count: an integer an INTEGER column holds, not negative."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def _seat_list(value: Any) -> list[int] | None:
    """A list of seat numbers (anything else: None)."""
    if isinstance(value, list) and all(_small(v) is not None for v in value):
        return value
    return None


def _int_list(value: Any, *, keep_valid: bool = False) -> list[int] | None:
    """A list of amounts (``keep_valid``: the amounts of a list, the others left out)."""
    if not isinstance(value, list):
        return None
    valid = [v for v in value if _int(v) is not None]
    if keep_valid or len(valid) == len(value):
        return valid
    return None


def _seat_chips(value: Any) -> dict[str, int] | None:
    """Seat → chips: the entries with a seat number and an amount (None: not an object)."""
    if not isinstance(value, dict):
        return None
    return {str(k): v for k, v in value.items() if str(k).isdigit() and _int(v) is not None}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _json_or_null(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _json_loads(text: str | None) -> Any:
    """A JSON column's value (None: null, or text that is not JSON)."""
    if not text:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _envelopes(texts: Iterable[str | None]) -> list[dict[str, Any]]:
    """Stored envelopes as objects (one that does not read as an object is left out)."""
    out = []
    for text in texts:
        body = _json_loads(text)
        if isinstance(body, dict):
            out.append(body)
    return out
