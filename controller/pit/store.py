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

This module holds the schema's migrations and the ingest; the class is made of one part per
reader, each a module of its own over the same connection: the derived rows
(``projections.py``), the tables' statuses and refused messages (``table_status.py``), the gaps
(``gaps.py``), the API's and the console's reads (``queries.py``), the users, sessions and
lock-out (``accounts.py``), the devices' health (``devices.py``); ``rows.py`` has the column
types and value checks they share.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

import structlog

from controller.pit.accounts import Accounts
from controller.pit.batches import Applied, EventIn
from controller.pit.db import Column, Db, Row, StoreError
from controller.pit.devices import Devices
from controller.pit.gaps import Gap, Gaps
from controller.pit.partitions import (
    AHEAD,
    REPORTS,
    Partitions,
    add_months,
    fill_sqlite,
    key_of,
    month_of,
    month_start,
    months,
)
from controller.pit.projections import Projections
from controller.pit.queries import Queries
from controller.pit.reports.shuffler_decks import ShufflerDecks
from controller.pit.rows import Stream
from controller.pit.schema import (
    AUTO_ID,
    BY_MONTH,
    MIGRATIONS,
    REPORTS_BY_MONTH,
    SCHEMA_VERSION,
)
from controller.pit.table_status import TableStatus
from controller.table import event_types as et

__all__ = ["EVENT_COLUMNS", "Gap", "Store", "Stream"]

log = structlog.get_logger("tablectl.pit.store")

#: Events read at once when a migration derives its new columns from the stored events.
_BACKFILL_BATCH = 2000
#: Epochs remembered as stored at most (beyond: forgotten, and written once more each).
_EPOCHS_KNOWN = 100_000
#: The mark in pit_meta of pit schema 3's derivation still to do.
_DERIVE_HOUSE_MONEY = "derive_house_money"

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


class Store(Projections, TableStatus, Gaps, Queries, Accounts, Devices, ShufflerDecks):
    """The pit's database: its schema and its ingest here, the rest in the parts it is made of."""

    def __init__(self, url: str) -> None:
        self.db = Db(url)
        #: the (table, epoch) pairs the store holds an ``epochs`` row of, as far as this
        #: connection saw committed, and those the transaction under way wrote
        self._epochs_known: set[tuple[str, str]] = set()
        self._epochs_pending: set[tuple[str, str]] = set()
        #: when the monthly partitions ahead are to be checked next (PostgreSQL)
        self._months_checked_until = 0.0 if self.db.dialect == "postgresql" else math.inf

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
        # what a migration's new tables and columns hold for the rows stored before it, in its
        # transaction
        procedures = {
            MIGRATIONS.index(BY_MONTH) + 1: self._by_month,
            MIGRATIONS.index(REPORTS_BY_MONTH) + 1: self._reports_by_month,
        }
        # … and what is derived again from the stored events by this code, which writes the
        # latest schema: once every migration is in (a mark in pit_meta until it is done, so
        # that a process stopped meanwhile leaves it to the next start)
        derivations = {3: _DERIVE_HOUSE_MONEY}
        for number in range(version + 1, SCHEMA_VERSION + 1):
            text = MIGRATIONS[number - 1].replace("{id}", AUTO_ID[db.dialect])
            with db.transaction():
                # Another process may have migrated meanwhile: check inside the transaction.
                if (number > 1 or self._has_meta()) and self.schema_version() >= number:
                    continue
                db.script(text)
                if number in procedures:
                    procedures[number]()
                if number in derivations:
                    db.execute(
                        "INSERT INTO pit_meta (key, value) VALUES (?, 'to do') "
                        "ON CONFLICT (key) DO NOTHING",
                        (derivations[number],),
                    )
                db.execute(
                    "INSERT INTO pit_meta (key, value) VALUES ('schema', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(number),),
                )
        with db.transaction():
            # the first process to take the mark derives; another waits for its commit
            if db.one("DELETE FROM pit_meta WHERE key = ? RETURNING key", (_DERIVE_HOUSE_MONEY,)):
                self._derive_house_money()
        self.prepare_months()
        return self.schema_version()

    def _by_month(self) -> None:
        """Pit schema 11, the store for years: on PostgreSQL the tables that grow with play
        partitioned by month, every row kept; on SQLite their new time columns filled."""
        if self.db.dialect == "postgresql":
            Partitions(self.db).convert(time.time())
        else:
            fill_sqlite(self.db, time.time())

    def _reports_by_month(self) -> None:
        """Pit schema 18: on PostgreSQL the reports' tables partitioned by month, every row
        kept (SQLite keeps them whole)."""
        if self.db.dialect == "postgresql":
            Partitions(self.db).convert(time.time(), specs=REPORTS)

    def prepare_months(
        self, now: float | None = None, ahead: int = AHEAD, lock_timeout: float = 5.0
    ) -> list[str]:
        """On PostgreSQL: a partition of every partitioned table for this month and the
        ``ahead`` months after it (those made). At each start, and by the ingest as each month
        begins; a failure (a lock that does not come within seconds) is tried again a minute
        later, and rows meanwhile go to the default partition, never lost."""
        if self.db.dialect != "postgresql":
            return []
        stamp = time.time() if now is None else now
        this = month_of(stamp)
        made = Partitions(self.db).ensure(
            months(this, add_months(this, ahead)), lock_timeout=lock_timeout
        )
        if made:
            log.info("pit.store.partitions_made", partitions=made)
        self._months_checked_until = month_start(add_months(this, 1))
        return made

    def _months_due(self, stamp: float) -> None:
        """The ingest's check that this month's partitions are there (once a month)."""
        try:
            # the commits wait meanwhile: a lock the console's reads hold is not waited for long
            self.prepare_months(stamp, lock_timeout=2.0)
        except Exception as exc:
            if self.db.broken:
                raise
            log.warning("pit.store.partitions_not_made", error=str(exc))
            self._months_checked_until = stamp + 60.0

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
        self._epochs_pending = set()
        # one row per event, with every view this batch has of it: a statement updates a row
        # once; a view delivered twice in the batch is a duplicate
        views: dict[tuple[str, str, int], dict[str, EventIn]] = {}
        for e in sorted(events, key=lambda e: (e.table_id, e.epoch, e.seq, e.stream)):
            views.setdefault((e.table_id, e.epoch, e.seq), {}).setdefault(e.stream, e)
        if stamp >= self._months_checked_until:
            self._months_due(stamp)
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
            returned = self._store_events(rows)
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
            db.changed(applied.stored)  # every pit's live pages hear of it with the commit
            self._streams(new)
            self._derive([e for e in new if e.stream == "public"])
            self._shuffler_decks(new)  # SHF-RAND: the decks revealed (secure view)
            self._epochs_and_tables(new, stamp, applied)
        if len(self._epochs_known) > _EPOCHS_KNOWN:
            self._epochs_known.clear()
        self._epochs_known |= self._epochs_pending
        return applied

    def _store_events(self, rows: Sequence[tuple[Any, ...]]) -> list[Row]:
        """Insert the batch's events, each a row or the views its row lacked; the key and the
        views each stored for the first time (``fresh``: SET reads the row as it was)."""
        db = self.db
        tail = (
            f"ON CONFLICT {key_of(db, 'events')} DO UPDATE SET "
            "public = COALESCE(events.public, excluded.public), "
            "secure = COALESCE(events.secure, excluded.secure), "
            "fresh = (CASE WHEN events.public IS NULL AND excluded.public IS NOT NULL "
            f"THEN {PUBLIC} ELSE 0 END) + (CASE WHEN events.secure IS NULL "
            f"AND excluded.secure IS NOT NULL THEN {SECURE} ELSE 0 END) "
            "WHERE events.ts = excluded.ts AND ((events.public IS NULL "
            "AND excluded.public IS NOT NULL) OR (events.secure IS NULL "
            "AND excluded.secure IS NOT NULL)) RETURNING table_id, epoch, seq, fresh"
        )
        if db.dialect == "sqlite":  # its key is (table_id, epoch, seq): the event's identity
            return db.insert("events", EVENT_COLUMNS, rows, tail)  # (a view of another ts: not)
        # The key has the event's ts (the partition key): every delivery of an event carries
        # the same one. One that would be another row of the same (table_id, epoch, seq) with
        # another ts (a table that published one seq twice, differently) is not stored: the
        # first stands, as it does on SQLite. Looked for in the months around its ts, in the
        # same statement.
        names = [name for name, _ in EVENT_COLUMNS]
        return db.insert_from(
            "events",
            names,
            (*EVENT_COLUMNS, ("ts_from", "text"), ("ts_to", "text")),
            [(*row, *self._ts_window(str(row[3]))) for row in rows],
            ", ".join(f"v.{name}" for name in names),
            tail,
            where="NOT EXISTS (SELECT 1 FROM events x WHERE x.table_id = v.table_id "
            "AND x.epoch = v.epoch AND x.seq = v.seq AND x.ts <> v.ts "
            "AND x.ts >= v.ts_from AND x.ts < v.ts_to)",
        )

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
        # an epoch this connection saw committed is in the store for good: not written again
        # (one statement less a batch); known once this transaction commits
        known = self._epochs_known
        self._epochs_pending = set(latest)
        returned = db.insert(
            "epochs",
            (
                ("table_id", "text"),
                ("epoch", "text"),
                ("first_ts", "text"),
                ("first_seen", "float8"),
            ),
            [(t, ep, e.ts, stamp) for (t, ep), e in sorted(latest.items()) if (t, ep) not in known],
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
