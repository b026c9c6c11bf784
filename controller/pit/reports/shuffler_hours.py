"""SHF-RAND: each shuffler's decks counted by UTC clock hour (pit schema 17), what the shufflers
report and the audit read to know how many decks each floor day of a span holds.

A kept day tally (controller/pit/reports/shuffler_tallies.py) holds while the store has exactly
as many decks in its day. Counting them in ``shuffler_decks`` on every request read each deck of
the span: 4 million rows and 2.2 s for a month of 200 tables on PostgreSQL (a sequential scan
and a grouping spilled to disk), two thirds of the report's time. ``shuffler_hours`` keeps the
count per shuffler (table, device) and hour instead, ~150,000 rows a month for 200 tables dealing
around the clock: a floor day whose edges are on the UTC hour (every zone a whole number of
hours from UTC) is the sum of its hours; the rest of a day (an edge on the half or quarter
hour, or a span cut at any time) is counted from its decks, at most two pieces of an hour each
(:func:`split`).

The ingest adds to it in the transaction that stores the decks, from the rows that statement
inserted (``ON CONFLICT DO NOTHING RETURNING``: a deck stored already, redelivered, replayed or
stored meanwhile by another pit process, is not returned, so it is counted once). Decks are
never deleted or moved to another shuffler, so the sum stays the count of ``shuffler_decks``
whatever order the decks come in, late ones of a past day brought by a repair included
(tests/pit/test_shuffler_hours.py). Adding, not counting again, is what keeps it exact when two
pit processes store decks of the same hour at once: each adds under the row's lock what its own
statement inserted, where a count again would see only what was committed before it.

An hour is named by the UTC text of the times in it, ``2026-01-05T10`` (``ts``'s first 13
characters: a report's bucket of an hour, controller/pit/reports/periods.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from controller.pit.db import Db
from controller.pit.reports.periods import Period, bucket_name, rfc3339

HOUR = timedelta(hours=1)

#: Pit schema 17's count of the decks stored before it.
BACKFILL = (
    "INSERT INTO shuffler_hours (table_id, device, hour, decks) "
    "SELECT table_id, device, substr(ts, 1, 13), count(*) FROM shuffler_decks "
    "GROUP BY table_id, device, substr(ts, 1, 13)"
)

#: Pit schema 17 (controller/pit/schema.py): the table, its index by hour (a report's span of
#: every shuffler), and the decks stored before it counted. A migration's text once released is
#: never changed: a new one goes after it.
MIGRATION = f"""
    CREATE TABLE shuffler_hours (
        table_id TEXT NOT NULL,
        device TEXT NOT NULL,
        hour TEXT NOT NULL,
        decks BIGINT NOT NULL,
        PRIMARY KEY (table_id, device, hour)
    );
    CREATE INDEX shuffler_hours_hour ON shuffler_hours (hour);
    {BACKFILL}
    """


def hour_of(ts: str) -> str:
    """The hour a deck's ``ts`` is counted in (what ``substr(ts, 1, 13)`` gives)."""
    return ts[:13]


def count_stored(db: Db, stored: Iterable[tuple[str, str, str]]) -> None:
    """Add the decks one statement just inserted, (table, device, ts) each, to their hours (in
    its transaction)."""
    added: dict[tuple[str, str, str], int] = {}
    for table, device, ts in stored:
        key = (table, device, hour_of(ts))
        added[key] = added.get(key, 0) + 1
    # each key once: PostgreSQL updates a row at most once per statement
    db.insert(
        "shuffler_hours",
        (("table_id", "text"), ("device", "text"), ("hour", "text"), ("decks", "bigint")),
        [(*key, n) for key, n in sorted(added.items())],
        "ON CONFLICT (table_id, device, hour) DO UPDATE SET "
        "decks = shuffler_hours.decks + excluded.decks",
    )


def split(spans: Sequence[Period]) -> tuple[list[tuple[str, int]], list[tuple[str, str, int]]]:
    """The whole UTC hours in each of ``spans`` (its index), named as the table names them, and
    the rest of each: pieces ``[since, until)`` as ``ts`` texts, each shorter than an hour, at
    most one at each edge that is not on the hour (one in all when the span is within an
    hour)."""
    hours: list[tuple[str, int]] = []
    pieces: list[tuple[str, str, int]] = []
    for index, span in enumerate(spans):
        start, end = span.start.astimezone(UTC), span.end.astimezone(UTC)
        first = _floor(start)
        if first < start:
            first += HOUR
        last = _floor(end)
        if first > last:  # within an hour
            pieces.append((rfc3339(start), rfc3339(end), index))
            continue
        if start < first:
            pieces.append((rfc3339(start), rfc3339(first), index))
        moment = first
        while moment < last:
            hours.append((bucket_name(moment, 60), index))
            moment += HOUR
        if last < end:
            pieces.append((rfc3339(last), rfc3339(end), index))
    return hours, pieces


def _floor(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)
