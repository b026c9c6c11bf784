"""The store for years: what grows with play, partitioned by month (PostgreSQL).

A floor of 500 tables publishes ~8 billion events a year. On PostgreSQL the tables that grow
with play are partitioned by month with declarative partitioning (``PARTITION BY RANGE`` on a
time column): one partition a month, made ahead of time by the pit, and a default partition
that takes a row of a month no partition covers (a table's clock far off, a month archived), so
that no insert ever fails for want of one. A month is then detached, archived and dropped whole
(:mod:`controller.pit.archive`), never deleted row by row.

A unique key of a partitioned table must include its partition key: each partition's index
enforces uniqueness only within its month. The keys are therefore:

* an event and what is keyed by it (its rule IDs, its ruling, its alarm and that alarm's
  acknowledgement): ``(table_id, epoch, seq, ts)``. An event's ``ts`` is part of the event: the
  journal's row, which every delivery carries the same (live or replayed, public or secure), so
  the same event delivered twice, in whatever month it arrives, meets its own row and is stored
  once. A separate table of every event's key would be a second copy of 8 billion keys a year,
  unpartitioned: the very thing retention cannot drop by the month.
* a hand (and its rule IDs) and a hold: ``(…, month)``, the month (``YYYY-MM``) of the first of
  their events the store took. Their rows are changed by later events (a hand's end, a hold's
  resolution), which carry times of their own: each write looks for the row in the month before
  and after its own (:func:`month_window`) and writes the row it finds, in the same statement.
  Two processes writing one table's hand wait for each other already (each batch updates the
  table's ``streams`` row first), so the second finds the first's row.

The time column is text of the ``C`` collation, compared byte by byte as RFC 3339 sorts: a month
is the range ``['2026-01', '2026-02')``, which holds both ``2026-01-31T23:59:59.999Z`` and the
month ``2026-01``. SQLite keeps its tables whole: it is the store of one host, and nothing here
runs on it.

References: PostgreSQL 15, "Table Partitioning"
(https://www.postgresql.org/docs/15/ddl-partitioning.html) and ``ALTER TABLE … ATTACH PARTITION
/ DETACH PARTITION`` (https://www.postgresql.org/docs/15/sql-altertable.html).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from controller.pit.db import Db

#: A month, as the partitions name it.
MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
#: Months made ahead of the current one (by the pit at each start and as months begin).
AHEAD = 3
#: What makes and changes partitions takes this advisory lock (one at a time over every process
#: of the store); archiving and restoring hold it for their whole round.
LOCK_KEY = 0x7461626C6570  # "tablep"


@dataclass(frozen=True)
class ByMonth:
    """A table partitioned by month."""

    table: str
    #: the time column: ``ts`` (RFC 3339), ``month`` (YYYY-MM), a quarter (``2026-01-05T10:2``)
    #: or an hour (``2026-01-05T10``): text whose first seven characters are its month
    column: str
    key: tuple[str, ...]  # the row's identity; the primary key is it and the time column
    kind: str  # its data kind for retention (``[retention] <kind>_months``)

    @property
    def primary(self) -> tuple[str, ...]:
        """The primary key: the identity, and the time column unless it is part of it."""
        return self.key if self.column in self.key else (*self.key, self.column)


#: Pit schema 11's tables, in the order its migration converts them (a table before those whose
#: time is read from it).
SCHEMA_11: tuple[ByMonth, ...] = (
    ByMonth("events", "ts", ("table_id", "epoch", "seq"), "events"),
    ByMonth("event_rules", "ts", ("table_id", "epoch", "seq", "rule"), "events"),
    ByMonth("hands", "month", ("table_id", "epoch", "hand_id"), "hands"),
    ByMonth("hand_rules", "month", ("table_id", "epoch", "hand_id", "rule"), "hands"),
    ByMonth("rulings", "ts", ("table_id", "epoch", "seq"), "rulings"),
    ByMonth("holds", "month", ("table_id", "epoch", "hold"), "holds"),
    ByMonth("alarms", "ts", ("table_id", "epoch", "seq"), "alarms"),
    ByMonth("alarm_acks", "ts", ("table_id", "epoch", "seq"), "alarms"),
)
#: Pit schema 18's: the reports' tables (docs/reports.md), their keys as before (each holds its
#: time column already, but the decks', whose identity is their event's). Two kinds:
#:
#: * ``quarters``: the hands counted by quarter hour and hour, what the drop and dealers reports
#:   read. Each row is a sum, ~100 bytes, so a floor may keep them years after the hands;
#: * ``decks``: the shufflers' decks (SHF-RAND), their count by hour and the kept day tallies of
#:   them. The hours count the decks and a tally holds while its decks are counted as many: the
#:   three of a month are archived together (one detach) and restored together (one
#:   transaction), so that online the counts always equal the decks (:data:`TOGETHER`).
REPORTS: tuple[ByMonth, ...] = (
    ByMonth("hand_quarters", "quarter", ("table_id", "quarter"), "quarters"),
    ByMonth("dealer_quarters", "quarter", ("table_id", "quarter", "dealer"), "quarters"),
    ByMonth("hand_hours", "hour", ("table_id", "hour"), "quarters"),
    ByMonth("shuffler_decks", "ts", ("table_id", "epoch", "seq"), "decks"),
    ByMonth("shuffler_hours", "hour", ("table_id", "device", "hour"), "decks"),
    ByMonth("shuffler_rollups", "start_ts", ("table_id", "device", "start_ts", "end_ts"), "decks"),
)
#: What grows with play.
BY_MONTH: tuple[ByMonth, ...] = SCHEMA_11 + REPORTS
BY_NAME = {t.table: t for t in BY_MONTH}
#: The data kinds, each kept online for its own number of months.
KINDS: tuple[str, ...] = ("events", "hands", "rulings", "holds", "alarms", "quarters", "decks")
#: The kinds whose tables of a month leave and come back as one: the decks' (a deck's hour and
#: a day's tally are in the month of the deck's ``ts``, or of the day's start).
TOGETHER: frozenset[str] = frozenset({"decks"})


def of_kind(kind: str) -> tuple[ByMonth, ...]:
    """The tables of a data kind."""
    return tuple(spec for spec in BY_MONTH if spec.kind == kind)


#: How a migrated row gets the time it is filed under (a join on the table it is read from, and
#: the value): ``{events}`` … name the tables already converted, ``o`` is the row.
_FILL: dict[str, tuple[str, str]] = {
    "event_rules": (
        "LEFT JOIN events x ON x.table_id = o.table_id AND x.epoch = o.epoch AND x.seq = o.seq",
        "x.ts",
    ),
    "hands": (
        "LEFT JOIN events x ON x.table_id = o.table_id AND x.epoch = o.epoch "
        "AND x.seq = o.first_seq",
        "COALESCE(substr(o.started_ts, 1, 7), substr(x.ts, 1, 7))",
    ),
    "hand_rules": (
        "LEFT JOIN hands x ON x.table_id = o.table_id AND x.epoch = o.epoch "
        "AND x.hand_id = o.hand_id",
        "x.month",
    ),
    "holds": ("", "substr(COALESCE(o.raised_ts, o.resolved_ts), 1, 7)"),
    "alarm_acks": (
        "LEFT JOIN alarms x ON x.table_id = o.table_id AND x.epoch = o.epoch AND x.seq = o.seq",
        "x.ts",
    ),
}


class PartitionError(RuntimeError):
    """A partition cannot be made as asked (a table of its name is in the way)."""


# --------------------------------------------------------------------------- months


def month_of(stamp: float) -> str:
    """The UTC month of a Unix time."""
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m")


def add_months(month: str, count: int) -> str:
    """``month`` moved by ``count`` months (ValueError: not a month)."""
    found = MONTH.match(month)
    if found is None:
        raise ValueError(f"{month!r} is not a month (YYYY-MM)")
    index = int(found.group(1)) * 12 + int(found.group(2)) - 1 + count
    year, rest = divmod(index, 12)
    if not 1 <= year <= 9999:
        raise ValueError(f"{month!r} moved by {count} months is not a month")
    return f"{year:04d}-{rest + 1:02d}"


def month_start(month: str) -> float:
    """The Unix time a month begins."""
    year, number = (int(part) for part in month.split("-"))
    return datetime(year, number, 1, tzinfo=UTC).timestamp()


def month_window(month: str) -> tuple[str, str]:
    """The months a row of ``month`` is looked for in: the month before and the month after (a
    hand or hold that goes on over the turn of a month); the month alone when it is not one
    (a table's ``ts`` need not be a time)."""
    try:
        return add_months(month, -1), add_months(month, 1)
    except ValueError:
        return month, month


#: What :func:`month_window` is on a store that is not partitioned: every month (the row is
#: wherever it is).
EVERY_MONTH = ("", "\U0010ffff")


def months(first: str, last: str) -> list[str]:
    """Every month from ``first`` to ``last``, both in."""
    out: list[str] = []
    month = first
    while month <= last:
        out.append(month)
        month = add_months(month, 1)
    return out


def partition_name(table: str, month: str) -> str:
    """The partition of ``table`` for ``month``: ``events_p2026_01``."""
    return f"{table}_p{month.replace('-', '_')}"


def default_name(table: str) -> str:
    """The default partition of ``table``."""
    return f"{table}_default"


_BOUND = re.compile(r"^FOR VALUES FROM \('([^']*)'\) TO \('([^']*)'\)$")


# --------------------------------------------------------------------------- the partitions


class Partitions:
    """The monthly partitions of a PostgreSQL store (its connection in autocommit; each change
    a transaction of its own unless one is open)."""

    def __init__(self, db: Db) -> None:
        assert db.dialect == "postgresql"
        self.db = db

    def partitioned(self, table: str) -> bool:
        """Whether ``table`` is partitioned (a store migrated to pit schema 11 on PostgreSQL)."""
        row = self.db.one("SELECT c.relkind FROM pg_class c WHERE c.oid = to_regclass(?)", (table,))
        return row is not None and row[0] == "p"

    def attached(self, table: str) -> dict[str, str]:
        """The months ``table`` has a partition for, and each one's name."""
        rows = self.db.all(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(?)",
            (table,),
        )
        out: dict[str, str] = {}
        for name, bound in rows:
            found = _BOUND.match(str(bound))
            if found is not None and MONTH.match(found.group(1)):
                out[found.group(1)] = str(name)
        return out

    def has_default(self, table: str) -> bool:
        """Whether ``table`` has its default partition."""
        row = self.db.one(
            "SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(?) AND pg_get_expr(c.relpartbound, c.oid) = "
            "'DEFAULT'",
            (table,),
        )
        return row is not None

    def exists(self, name: str) -> bool:
        """Whether a table of that name exists (attached or not)."""
        row = self.db.one("SELECT to_regclass(?) IS NOT NULL", (name,))
        return bool(row and row[0])

    def columns(self, table: str) -> list[str]:
        """The columns of ``table``, in order."""
        return [
            str(r[0])
            for r in self.db.all(
                "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(?) "
                "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                (table,),
            )
        ]

    def ensure(self, wanted: Iterable[str], *, lock_timeout: float = 5.0) -> list[str]:
        """A partition of every partitioned table for each month of ``wanted``; those made.

        Each is made standalone (``CREATE TABLE … (LIKE …)``) and attached: attaching takes a
        ``SHARE UPDATE EXCLUSIVE`` lock on the partitioned table, which inserts and reads do
        not wait for (``CREATE TABLE … PARTITION OF`` would take ``ACCESS EXCLUSIVE``), and
        ``ACCESS EXCLUSIVE`` on the default partition while it is checked. Rows of that month
        already in the default partition move into the new one first, in the same transaction.
        """
        made: list[str] = []
        asked = list(wanted)
        for spec in BY_MONTH:
            if not self.partitioned(spec.table):
                continue  # a store not migrated to it yet (pit schema 18's tables)
            attached = self.attached(spec.table)
            missing = [m for m in asked if m not in attached]
            for month in missing:
                with self.db.transaction():
                    self.db.execute(f"SET LOCAL lock_timeout = '{int(lock_timeout * 1000)}ms'")
                    self.db.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,))
                    if month in self.attached(spec.table):
                        continue  # another process made it meanwhile
                    self.attach_month(spec, month)
                    made.append(partition_name(spec.table, month))
        return made

    def attach_month(self, spec: ByMonth, month: str, *, filled: bool = False) -> int:
        """Attach ``spec``'s partition for ``month`` (made empty unless ``filled``: a restored
        month already in its table); the rows moved from the default partition into it. In the
        caller's transaction."""
        db = self.db
        name = partition_name(spec.table, month)
        if not filled:
            if self.exists(name):
                raise PartitionError(
                    f"{name} exists but is not a partition of {spec.table} (a month detached "
                    "and not archived yet: `tablectl pit archive run` finishes it)"
                )
            db.execute(f"CREATE TABLE {name} (LIKE {spec.table} INCLUDING DEFAULTS)")
        # its key first: a row of the default partition may be one of a restored month's, and
        # ATTACH takes this index for the table's own
        db.execute(f"ALTER TABLE {name} ADD PRIMARY KEY ({', '.join(spec.primary)})")
        lo, hi = month, add_months(month, 1)
        moved = 0
        default = default_name(spec.table)
        if self.has_default(spec.table):
            names = ", ".join(self.columns(spec.table))
            moved = int(
                db.execute(
                    f"WITH moved AS (DELETE FROM {default} WHERE {spec.column} >= ? "  # noqa: S608
                    f"AND {spec.column} < ? RETURNING {names}) INSERT INTO {name} ({names}) "
                    f"SELECT {names} FROM moved ON CONFLICT DO NOTHING",
                    (lo, hi),
                ).rowcount
                or 0
            )
        db.execute(
            f"ALTER TABLE {spec.table} ATTACH PARTITION {name} "
            f"FOR VALUES FROM ({_literal(lo)}) TO ({_literal(hi)})"
        )
        return moved

    # ------------------------------------------------------------------ the migration

    def convert(self, now: float, ahead: int = AHEAD, specs: Sequence[ByMonth] = SCHEMA_11) -> None:
        """Pit schema 11 (``specs``: :data:`SCHEMA_11`) and 18 (:data:`REPORTS`): make each
        table of ``specs`` partitioned by month, in place, keeping every row (in the migration's
        transaction). A partition for each month its rows have and for the months from now to
        ``ahead`` months on, and a default one for the rest; the columns and indexes are the
        table's own, whatever earlier migrations made them."""
        db = self.db
        this_month = month_of(now)
        fallback = {"ts": f"{this_month}-01T00:00:00.000Z", "month": this_month}
        for spec in specs:
            if self.partitioned(spec.table):
                continue  # partitioned already (a store made again from an earlier schema)
            old = f"{spec.table}_before_months"
            columns = db.all(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
                "pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a LEFT JOIN pg_attrdef d "
                "ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid = "
                "to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                (spec.table,),
            )
            indexes = db.all(
                "SELECT i.indexname, i.indexdef FROM pg_indexes i JOIN pg_index x ON "
                "x.indexrelid = to_regclass(i.indexname) WHERE i.tablename = ? "
                "AND i.schemaname = current_schema() AND NOT x.indisprimary",
                (spec.table,),
            )
            primary = db.one(
                "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(?) "
                "AND contype = 'p'",
                (spec.table,),
            )
            db.execute(f"ALTER TABLE {spec.table} RENAME TO {old}")
            for name, _ in indexes:
                db.execute(f"DROP INDEX {name}")
            if primary is not None:
                db.execute(f"ALTER TABLE {old} DROP CONSTRAINT {primary[0]}")
            definitions = []
            for name, kind, not_null, default in columns:
                text = f"{name} {kind}"
                if name == spec.column:
                    text += ' COLLATE "C" NOT NULL'
                elif not_null:
                    text += " NOT NULL"
                if default is not None:
                    text += f" DEFAULT {default}"
                definitions.append(text)
            db.execute(
                f"CREATE TABLE {spec.table} ({', '.join(definitions)}) "
                f"PARTITION BY RANGE ({spec.column})"
            )
            join, value = _FILL.get(spec.table, ("", f"o.{spec.column}"))
            found = [
                str(r[0])
                for r in db.all(
                    f"SELECT DISTINCT substr({value}, 1, 7) FROM {old} o {join}"  # noqa: S608
                )
                if r[0] is not None
            ]
            wanted = sorted(
                {m for m in found if MONTH.match(m)}
                | set(months(this_month, add_months(this_month, ahead)))
            )
            for month in wanted:
                db.execute(
                    f"CREATE TABLE {partition_name(spec.table, month)} PARTITION OF "
                    f"{spec.table} FOR VALUES FROM ({_literal(month)}) "
                    f"TO ({_literal(add_months(month, 1))})"
                )
            db.execute(f"CREATE TABLE {default_name(spec.table)} PARTITION OF {spec.table} DEFAULT")
            names = [str(c[0]) for c in columns]
            select = ", ".join(
                f"COALESCE({value}, ?)" if n == spec.column else f"o.{n}" for n in names
            )
            db.execute(
                f"INSERT INTO {spec.table} ({', '.join(names)}) "  # noqa: S608
                f"SELECT {select} FROM {old} o {join}",
                # the reports' time columns are never null (NOT NULL since they were made)
                (fallback.get(spec.column, fallback["ts"]),),
            )
            db.execute(f"ALTER TABLE {spec.table} ADD PRIMARY KEY ({', '.join(spec.primary)})")
            for _, definition in indexes:
                db.execute(str(definition))  # read before the rename: on the new table
            db.execute(f"DROP TABLE {old}")


def fill_sqlite(db: Db, now: float) -> None:
    """Pit schema 11 on SQLite: the new time columns of the rows stored before it (nothing is
    partitioned)."""
    this_month = month_of(now)
    stamp = f"{this_month}-01T00:00:00.000Z"
    for statement, value in (
        (
            "UPDATE event_rules SET ts = COALESCE((SELECT e.ts FROM events e WHERE "
            "e.table_id = event_rules.table_id AND e.epoch = event_rules.epoch "
            "AND e.seq = event_rules.seq), ?)",
            stamp,
        ),
        (
            "UPDATE hands SET month = COALESCE(substr(started_ts, 1, 7), (SELECT "
            "substr(e.ts, 1, 7) FROM events e WHERE e.table_id = hands.table_id "
            "AND e.epoch = hands.epoch AND e.seq = hands.first_seq), ?)",
            this_month,
        ),
        (
            "UPDATE hand_rules SET month = COALESCE((SELECT h.month FROM hands h WHERE "
            "h.table_id = hand_rules.table_id AND h.epoch = hand_rules.epoch "
            "AND h.hand_id = hand_rules.hand_id), ?)",
            this_month,
        ),
        (
            "UPDATE holds SET month = COALESCE(substr(COALESCE(raised_ts, resolved_ts), 1, 7), ?)",
            this_month,
        ),
        (
            "UPDATE alarm_acks SET ts = COALESCE((SELECT a.ts FROM alarms a WHERE "
            "a.table_id = alarm_acks.table_id AND a.epoch = alarm_acks.epoch "
            "AND a.seq = alarm_acks.seq), ?)",
            stamp,
        ),
    ):
        db.execute(statement, (value,))


def key_of(db: Db, table: str) -> str:
    """The conflict target of ``table``'s identity: its key, and on PostgreSQL its time column
    too (the primary key of a partitioned table)."""
    spec = BY_NAME[table]
    columns: Sequence[str] = spec.key
    if db.dialect == "postgresql":
        columns = spec.primary
    return f"({', '.join(columns)})"


def _literal(month: str) -> str:
    """A month as a SQL literal (a partition's bound: DDL takes no parameters)."""
    if MONTH.match(month) is None:
        raise ValueError(f"{month!r} is not a month (YYYY-MM)")
    return f"'{month}'"
