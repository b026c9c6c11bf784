"""Each table's hands by quarter hour (pit schema 15): what the drop and the dealers reports read
instead of every hand of their span.

A month of a busy floor is millions of hands; a report over it that read them all would take
seconds to tens of seconds. Its figures add up by the quarter hour, and every period a report
groups by is made of whole quarter hours (the floor's zone is whole quarter hours from UTC, its
day and shifts begin on the quarter hour: ``[reports]``), so a row per table and UTC quarter hour
holds them, some 600,000 rows a month for 200 tables dealing around the clock:

* ``hand_quarters`` (the drop's): ``hands``, ``raked``, ``rake``, ``jackpot``, ``pots``,
  ``pot_total`` of the hands completed in it (by their end: HOUSE-RAKE, HOUSE-DROP-JACKPOT), and
  ``time_collected`` of the hands started in it (HOUSE-TIME);
* ``dealer_quarters`` (the dealers report's): the hands ``started`` in it, per dealer (``''``:
  none named). A hand's dealer is known with its start, so no row's figures wait for an event
  that may come later than another.

The ingest keeps them in the batch's transaction, and never adds to them: a quarter hour one of
the batch's new events could change (the quarter of its ``ts``, for an event that starts or ends
a hand, takes rake or collects time) is counted again from the hands' rows, which the batch has
just written, in one statement each. Events that come late, twice or out of order (a replay, a
gap repaired) therefore leave them as a count from scratch would
(tests/pit/test_reports_quarters.py). A quarter is named by the UTC text of the times in it,
``2026-01-05T10:2`` (10:30 to 10:45).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from controller.pit.batches import EventIn
from controller.pit.db import Db
from controller.pit.partitions import EVERY_MONTH, month_window
from controller.pit.reports.params import ReportQuery
from controller.pit.reports.periods import BUCKETS, bucket_name
from controller.table import event_types as et

#: The quarter of an RFC 3339 UTC text column ``{t}`` (a report's bucket of a quarter hour).
QUARTER_SQL = BUCKETS[15]
#: The events that may change a quarter's figures: they start or end a hand, take rake, collect
#: time (the hand they are in, or start, is in the quarter of their ``ts``: one command, one
#: ``ts``).
TYPES = frozenset(
    {
        et.HandStarted.TYPE,
        et.HouseTimeCollected.TYPE,
        et.PotRakeTaken.TYPE,
        et.PotAwarded.TYPE,
        et.HandCompleted.TYPE,
        et.HandMisdeal.TYPE,
        et.HandVoid.TYPE,
    }
)
QUARTER = timedelta(minutes=15)
#: The drop's figures of a quarter (``hand_quarters``).
FIGURES = ("hands", "raked", "rake", "jackpot", "pots", "pot_total", "time_collected")


#: Every hand (the migration's count): what :func:`counted` and :func:`dealt` read.
EVERY_HAND = "hands h WHERE 1 = 1"


def picked(db: Db, ranges: str, column: str) -> str:
    """The hands whose ``column`` is in one of ``ranges`` (a relation ``(t, lo, hi)``: a table
    and the ``ts`` texts of a quarter), each range looked up by the hands' index of table and
    time, within the months the two ``?`` after it say. PostgreSQL is told so (``LATERAL``):
    it would otherwise join the ranges to every hand of the month."""
    within = (
        f"h.table_id = r.t AND h.{column} >= r.lo AND h.{column} < r.hi "
        "AND h.month >= ? AND h.month <= ?"
    )
    if db.dialect == "postgresql":  # OFFSET 0: not folded into a join again
        return (
            f"({ranges}) r CROSS JOIN LATERAL (SELECT * FROM hands h "  # noqa: S608
            f"WHERE {within} OFFSET 0) h WHERE 1 = 1"
        )
    return f"({ranges}) r JOIN hands h ON {within} WHERE 1 = 1"


def counted(by_start: str = EVERY_HAND, by_end: str = EVERY_HAND) -> str:
    """The statement counting the drop's quarters of the hands ``by_start`` picks (for the time
    collected: their start's quarter) and ``by_end`` (their end's): a row per table and
    quarter. Each is a ``FROM`` of ``hands h`` and its ``WHERE``."""
    started, ended = QUARTER_SQL.format(t="h.started_ts"), QUARTER_SQL.format(t="h.ended_ts")
    sums = ", ".join(f"sum({name})" for name in FIGURES)
    return (
        f"SELECT table_id, quarter, {sums} FROM ("  # noqa: S608 (the module's own text)
        f"SELECT h.table_id, {started} AS quarter, 0 AS hands, 0 AS raked, 0 AS rake, "
        "0 AS jackpot, 0 AS pots, 0 AS pot_total, h.time_collected "
        f"FROM {by_start} AND h.time_collected IS NOT NULL AND h.started_ts IS NOT NULL "
        "UNION ALL "
        f"SELECT h.table_id, {ended}, 1, CASE WHEN h.rake > 0 THEN 1 ELSE 0 END, "
        "COALESCE(h.rake, 0), COALESCE(h.jackpot, 0), "
        "CASE WHEN h.pot IS NOT NULL THEN 1 ELSE 0 END, "
        "COALESCE(h.pot + COALESCE(h.rake, 0) + COALESCE(h.jackpot, 0), 0), 0 "
        f"FROM {by_end} AND h.outcome = 'completed' AND h.ended_ts IS NOT NULL"
        ") x GROUP BY table_id, quarter"
    )


def dealt(by_start: str = EVERY_HAND) -> str:
    """The statement counting the hands started by each dealer in the quarters of the hands
    ``by_start`` picks (by their start)."""
    started = QUARTER_SQL.format(t="h.started_ts")
    return (
        f"SELECT h.table_id, {started} AS quarter, COALESCE(h.dealer, '') AS dealer, "  # noqa: S608
        f"count(*) FROM {by_start} AND h.started_ts IS NOT NULL "
        f"GROUP BY h.table_id, {started}, COALESCE(h.dealer, '')"
    )


#: Pit schema 15's counting of the hands stored before it.
BACKFILL = (
    f"INSERT INTO hand_quarters (table_id, quarter, {', '.join(FIGURES)}) "  # noqa: S608
    f"SELECT * FROM ({counted()}) c WHERE 1 = 1"
)
BACKFILL_DEALERS = (
    "INSERT INTO dealer_quarters (table_id, quarter, dealer, started) "  # noqa: S608
    f"SELECT * FROM ({dealt()}) c WHERE 1 = 1"
)


def summed_hours(wanted: str | None = None, lateral: bool = True) -> str:
    """The statement summing the drop's quarters into clock hours (``hand_hours``): the hours
    ``wanted`` names (a relation ``(t, hour)``, each looked up by the quarters' key), or every
    hour."""
    sums = ", ".join(f"sum(q.{name})" for name in FIGURES)
    if wanted is None:
        source = "hand_quarters q"
    elif not lateral:  # SQLite: no LATERAL, and no need of it (it loops over the hours)
        source = (
            f"({wanted}) w JOIN hand_quarters q ON q.table_id = w.t "
            "AND q.quarter >= w.hour || ':0' AND q.quarter <= w.hour || ':3'"
        )
    else:  # an hour's quarters are its text and ':0' to ':3', by the key (LATERAL: picked())
        source = (
            f"({wanted}) w CROSS JOIN LATERAL (SELECT * FROM hand_quarters x "  # noqa: S608
            "WHERE x.table_id = w.t AND x.quarter >= w.hour || ':0' "
            "AND x.quarter <= w.hour || ':3' OFFSET 0) q"
        )
    return (
        f"SELECT q.table_id, substr(q.quarter, 1, 13) AS hour, {sums} "  # noqa: S608
        f"FROM {source} GROUP BY q.table_id, substr(q.quarter, 1, 13)"
    )


#: Pit schema 16's summing of the quarters counted before it.
BACKFILL_HOURS = (
    f"INSERT INTO hand_hours (table_id, hour, {', '.join(FIGURES)}) "  # noqa: S608
    f"SELECT * FROM ({summed_hours()}) c WHERE 1 = 1"
)


def quarter_of(ts: str) -> str | None:
    """The quarter an RFC 3339 UTC time is in (None: not such a time)."""
    try:
        datetime.strptime(ts[:16], "%Y-%m-%dT%H:%M")
    except ValueError:
        return None
    return ts[:14] + "0123"[int(ts[14:16]) // 15]


def bounds(quarter: str) -> tuple[str, str]:
    """The ``ts`` texts a quarter's times are at or after, and before."""
    start = datetime.strptime(quarter[:14] + f"{int(quarter[14]) * 15:02d}", "%Y-%m-%dT%H:%M")
    return start.strftime("%Y-%m-%dT%H:%M"), (start + QUARTER).strftime("%Y-%m-%dT%H:%M")


def whole_quarters(query: ReportQuery) -> bool:
    """Whether a report's span and periods are made of whole quarter hours: what it asks the
    quarters for then is what the hands would give (a span cut inside one, or an edge off the
    quarter in a zone of the past, is asked of the hands)."""
    edges = (query.since, query.until, *(p.start for p in query.periods))
    return query.buckets.minutes in (15, 60) and all(
        e.second == 0 and e.microsecond == 0 and e.astimezone(UTC).minute % 15 == 0 for e in edges
    )


def quarter_span(query: ReportQuery) -> tuple[str, str]:
    """The first quarter of the span, and the first after it."""
    return bucket_name(query.since, 15), bucket_name(query.until, 15)


def whole_hours(query: ReportQuery) -> bool:
    """Whether a report's span and periods are made of whole clock hours (UTC): it may read the
    hours (``hand_hours``) then, a quarter of the rows."""
    edges = (query.since, query.until, *(p.start for p in query.periods))
    return query.buckets.minutes == 60 and all(
        e.second == 0 and e.microsecond == 0 and e.astimezone(UTC).minute == 0 for e in edges
    )


def hour_span(query: ReportQuery) -> tuple[str, str]:
    """The first hour of the span, and the first after it."""
    return bucket_name(query.since, 60), bucket_name(query.until, 60)


def touched(events: Iterable[EventIn]) -> list[tuple[str, str]]:
    """The (table, quarter) pairs whose figures ``events`` may change, in order."""
    found: set[tuple[str, str]] = set()
    for e in events:
        if e.type in TYPES:
            quarter = quarter_of(e.ts)
            if quarter is not None:
                found.add((e.table_id, quarter))
    return sorted(found)


def archived_hand_months(db: Db) -> frozenset[str]:
    """The months whose hands are archived and not restored (PostgreSQL's store for years)."""
    rows = db.all(
        "SELECT DISTINCT month FROM archived WHERE relation = 'hands' AND restored_at IS NULL"
    )
    return frozenset(str(month) for (month,) in rows)


def refresh(db: Db, events: Sequence[EventIn]) -> None:
    """Count again the quarters the batch's new ``events`` touched, from the hands' rows (in
    the batch's transaction, after the hands were written)."""
    pairs = touched(events)
    if pairs and db.dialect == "postgresql":
        # A quarter of a month whose hands are archived (a month kept as quarters longer than
        # as hands) is not counted again: the hands online would be only the late ones, and the
        # count would overwrite the month's figures with theirs. (The month before may be
        # archived while this one is not: a hand over the turn of the month is then missed, as
        # any count reading only what is online misses it.)
        gone = archived_hand_months(db)
        pairs = [(table, quarter) for table, quarter in pairs if quarter[:7] not in gone]
    if not pairs:
        return
    # the quarters as one JSON parameter, a relation of ranges each looked up by the index
    # (a statement of one range per quarter OR-ed took 30 ms for 20 quarters, most of it planning)
    quarters = json.dumps([(table, *bounds(quarter)) for table, quarter in pairs])
    if db.dialect == "postgresql":
        ranges = (
            "SELECT value->>0 AS t, value->>1 AS lo, value->>2 AS hi "
            "FROM json_array_elements(?::json)"
        )
        # a hand is filed under the month of its first event: of its start, or (ended in a
        # quarter) the month before at the earliest (docs/pit.md, "The store for years")
        first, last = min(q for _, q in pairs)[:7], max(q for _, q in pairs)[:7]
        months = (month_window(first)[0], last)
    else:
        ranges = (
            "SELECT json_extract(value, '$[0]') AS t, json_extract(value, '$[1]') AS lo, "
            "json_extract(value, '$[2]') AS hi FROM json_each(?)"
        )
        months = EVERY_MONTH
    by_start, by_end = picked(db, ranges, "started_ts"), picked(db, ranges, "ended_ts")
    # the module's own text; the tables and times are parameters
    db.execute(
        f"INSERT INTO hand_quarters (table_id, quarter, {', '.join(FIGURES)}) "  # noqa: S608
        f"SELECT * FROM ({counted(by_start, by_end)}) c WHERE 1 = 1 "
        "ON CONFLICT (table_id, quarter) DO UPDATE SET "
        + ", ".join(f"{name} = excluded.{name}" for name in FIGURES),
        [quarters, *months, quarters, *months],
    )
    db.execute(
        "INSERT INTO dealer_quarters (table_id, quarter, dealer, started) "  # noqa: S608
        f"SELECT * FROM ({dealt(by_start)}) c WHERE 1 = 1 "
        "ON CONFLICT (table_id, quarter, dealer) DO UPDATE SET started = excluded.started",
        [quarters, *months],
    )
    # and the hours of those quarters, summed from them (four rows each, by the key's index)
    hours = json.dumps(sorted({(table, quarter[:13]) for table, quarter in pairs}))
    if db.dialect == "postgresql":
        wanted = "SELECT value->>0 AS t, value->>1 AS hour FROM json_array_elements(?::json)"
    else:
        wanted = (
            "SELECT json_extract(value, '$[0]') AS t, json_extract(value, '$[1]') AS hour "
            "FROM json_each(?)"
        )
    db.execute(
        f"INSERT INTO hand_hours (table_id, hour, {', '.join(FIGURES)}) "  # noqa: S608
        f"SELECT * FROM ({summed_hours(wanted, db.dialect == 'postgresql')}) c WHERE 1 = 1 "
        "ON CONFLICT (table_id, hour) DO UPDATE SET "
        + ", ".join(f"{name} = excluded.{name}" for name in FIGURES),
        [hours],
    )


#: Pit schema 15 (controller/pit/schema.py): schema 14's table of each dealer's quarters made two
#: (the drop's, read by every drop report, and the dealers'), their indexes by quarter (a
#: report's span), and the hands stored before counted. A migration's text once released is
#: never changed: a new one goes after it.
MIGRATION = f"""
    DROP TABLE hand_quarters;
    CREATE TABLE hand_quarters (
        table_id TEXT NOT NULL,
        quarter TEXT NOT NULL,
        hands BIGINT NOT NULL DEFAULT 0,
        raked BIGINT NOT NULL DEFAULT 0,
        rake BIGINT NOT NULL DEFAULT 0,
        jackpot BIGINT NOT NULL DEFAULT 0,
        pots BIGINT NOT NULL DEFAULT 0,
        pot_total BIGINT NOT NULL DEFAULT 0,
        time_collected BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (table_id, quarter)
    );
    CREATE INDEX hand_quarters_quarter ON hand_quarters (quarter);
    CREATE TABLE dealer_quarters (
        table_id TEXT NOT NULL,
        quarter TEXT NOT NULL,
        dealer TEXT NOT NULL,
        started BIGINT NOT NULL,
        PRIMARY KEY (table_id, quarter, dealer)
    );
    CREATE INDEX dealer_quarters_quarter ON dealer_quarters (quarter);
    {BACKFILL};
    {BACKFILL_DEALERS}
    """


#: Pit schema 16: the drop's quarters summed by clock hour (``hand_hours``: a drop report over
#: whole hours, as every floor whole hours from UTC with shifts on the hour asks, reads a quarter
#: of the rows), its index by hour, and the quarters counted before it summed.
MIGRATION_HOURS = f"""
    CREATE TABLE hand_hours (
        table_id TEXT NOT NULL,
        hour TEXT NOT NULL,
        hands BIGINT NOT NULL DEFAULT 0,
        raked BIGINT NOT NULL DEFAULT 0,
        rake BIGINT NOT NULL DEFAULT 0,
        jackpot BIGINT NOT NULL DEFAULT 0,
        pots BIGINT NOT NULL DEFAULT 0,
        pot_total BIGINT NOT NULL DEFAULT 0,
        time_collected BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (table_id, hour)
    );
    CREATE INDEX hand_hours_hour ON hand_hours (hour);
    {BACKFILL_HOURS}
    """
