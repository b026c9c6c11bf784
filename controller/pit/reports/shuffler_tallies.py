"""SHF-RAND: a shuffler's tally over a report's span, from tallies of its floor days kept in the
store, so that a month of a busy floor is not read again deck by deck.

A busy table reveals ~300 decks a day; tallying one costs ~40 µs, so a month of 500 shufflers
read deck by deck is minutes of CPU. A tally of consecutive decks is a sum (counts, changes and
suit pairs add; the change across two runs' seam is counted when they merge:
:meth:`~controller.pit.reports.randomness.Tally.merged`), so a span is the merge of its floor
days' tallies (the floor's days: ``[reports] day_start`` in ``[web] time_zone``), each kept in
``shuffler_rollups`` with the decks it holds and the last of them, and merged all at once
(:func:`~controller.pit.reports.randomness.joined`).

A kept tally is used only if the store still has exactly as many decks in its day: decks are
never deleted, so the same count is the same decks. A day that has more (today, as it goes on;
a day whose decks a repair brought late) has its newer decks merged in when they all come after
the last one it holds, and is tallied again otherwise. Every shuffler's decks in every day of
the span are summed from their count by clock hour, which the ingest keeps
(controller/pit/reports/shuffler_hours.py), the pieces of an hour at a day's edges off the hour
counted from their decks; a day cut by the span's edge (a time given with ``since`` or
``until``) is tallied from its decks and not kept. The audit keeps the days of the last two
floor days up to date as decks come (controller/pit/reports/shuffler_audit.py), so a report
rarely tallies more than the edges.

A kept tally is a cache: two processes making one write the same; a stale write is seen by its
count next time.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from controller.pit.db import Db, Row
from controller.pit.reports.periods import Calendar, Period, periods, rfc3339
from controller.pit.reports.randomness import Tally, joined
from controller.pit.reports.shuffler_decks import DeckKey, StoredDeck, shuffler_decks
from controller.pit.reports.shuffler_hours import split
from controller.pit.reports.sql import among, bucket_table

Shuffler = tuple[str, str]  # (table_id, device)


class Day(NamedTuple):
    """A floor day of the span, cut to it, and whether it is whole (kept) or cut (not)."""

    period: Period
    whole: bool
    #: its start and end as ``ts`` texts (written once: a month's report looks them up for
    #: each of its days of each shuffler, 6,200 times for 200 shufflers)
    bounds: tuple[str, str]


class Kept(NamedTuple):
    """A floor day's tally as the store keeps it (read from its bytes when it is used)."""

    decks: int
    upto: DeckKey
    data: bytes

    @property
    def tally(self) -> Tally:
        return Tally.from_bytes(self.data)


def days(since: datetime, until: datetime, calendar: Calendar) -> list[Day]:
    """The floor days ``[since, until)`` covers, each cut to it."""
    margin = timedelta(days=2)
    full = {p.name: p for p in periods(since - margin, until + margin, "day", calendar)}
    out = []
    for period in periods(since, until, "day", calendar):
        whole = full.get(period.name)
        bounds = (rfc3339(period.start), rfc3339(period.end))
        out.append(Day(period, whole is not None and whole == period, bounds))
    return out


def deck_counts(
    db: Db, spans: Sequence[Day], tables: Sequence[str] = ()
) -> dict[Shuffler, dict[int, int]]:
    """Each shuffler's decks in each day of ``spans`` (by index), counted in the store: the
    whole hours of each day summed from ``shuffler_hours``, the pieces of an hour at its edges
    (if any) counted from their decks."""
    if not spans:
        return {}
    hours, pieces = split([d.period for d in spans])
    only, table_params = among("table_id", tables)
    out: dict[Shuffler, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    rows: list[Row] = []
    if hours:
        # the hours of the span with their day as one JSON parameter, joined by name; the
        # statement is this module's text, the tables parameters
        rows += db.all(
            f"SELECT table_id, device, b.p, sum(decks) FROM shuffler_hours "  # noqa: S608
            f"JOIN ({bucket_table(db)}) b ON hour = b.k "
            f"WHERE hour >= ? AND hour <= ?{only} GROUP BY table_id, device, b.p",
            [json.dumps(hours, separators=(",", ":")), hours[0][0], hours[-1][0], *table_params],
        )
    if pieces:
        if db.dialect == "postgresql":  # each range by the index of ts (LATERAL: not a join)
            ranges = (
                "SELECT value->>0 AS lo, value->>1 AS hi, (value->>2)::integer AS p "
                "FROM json_array_elements(?::json)"
            )
            source = (
                f"({ranges}) r CROSS JOIN LATERAL (SELECT table_id, device "  # noqa: S608
                f"FROM shuffler_decks WHERE ts >= r.lo AND ts < r.hi{only} OFFSET 0) d"
            )
        else:
            ranges = (
                "SELECT json_extract(value, '$[0]') AS lo, json_extract(value, '$[1]') AS hi, "
                "json_extract(value, '$[2]') AS p FROM json_each(?)"
            )
            source = f"({ranges}) r JOIN shuffler_decks d ON d.ts >= r.lo AND d.ts < r.hi{only}"
        rows += db.all(
            f"SELECT d.table_id, d.device, r.p, count(*) FROM {source} "  # noqa: S608
            "GROUP BY d.table_id, d.device, r.p",
            [json.dumps(pieces, separators=(",", ":")), *table_params],
        )
    for table, device, day, count in rows:
        out[str(table), str(device)][int(day)] += int(count)
    return out


def kept(
    db: Db, shufflers: Iterable[Shuffler], spans: Sequence[Day], tables: Sequence[str] = ()
) -> dict[tuple[str, ...], Kept]:
    """The kept tallies of whole days of ``spans`` of ``shufflers`` (of ``tables``, when they
    are given): (table, device, start, end) → what is kept."""
    wanted = set(shufflers)
    whole = [d for d in spans if d.whole]
    if not wanted or not whole:
        return {}
    only, table_params = among("table_id", tables)
    rows = db.all(
        "SELECT table_id, device, start_ts, end_ts, decks, upto_ts, upto_epoch, upto_seq, "  # noqa: S608
        f"tally FROM shuffler_rollups WHERE start_ts >= ? AND start_ts < ?{only}",
        (whole[0].bounds[0], whole[-1].bounds[1], *table_params),
    )
    out: dict[tuple[str, ...], Kept] = {}
    for table, device, start, end, decks, ts, epoch, seq, data in rows:
        if (str(table), str(device)) in wanted:
            key = (str(table), str(device), str(start), str(end))
            out[key] = Kept(int(decks), DeckKey(str(ts), str(epoch), int(seq)), bytes(data))
    return out


def keep(db: Db, shuffler: Shuffler, day: Day, decks: int, upto: DeckKey, tally: Tally) -> None:
    """Keep a whole day's tally."""
    start, end = day.bounds
    with db.transaction():
        db.execute(
            "INSERT INTO shuffler_rollups (table_id, device, start_ts, end_ts, decks, upto_ts, "
            "upto_epoch, upto_seq, tally, made_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (table_id, device, start_ts, end_ts) DO UPDATE SET "
            "decks = excluded.decks, upto_ts = excluded.upto_ts, "
            "upto_epoch = excluded.upto_epoch, upto_seq = excluded.upto_seq, "
            "tally = excluded.tally, made_at = excluded.made_at",
            (*shuffler, start, end, decks, *upto, tally.to_bytes(), time.time()),
        )


class SpanTally(NamedTuple):
    """A shuffler's tally over a span, and how many of its decks were read one by one (the
    rest came from kept tallies)."""

    tally: Tally
    read: int


def day_tally(
    db: Db,
    shuffler: Shuffler,
    day: Day,
    count: int,
    have: Kept | None,
    *,
    save: bool = True,
) -> tuple[Tally | None, int]:
    """The tally of ``shuffler``'s ``count`` decks of ``day`` (None: the kept one holds, and
    is not read unless ``save`` is false), from the kept one where it holds or extends, and
    its decks where not (kept again when ``save`` and the day is whole); the decks read."""
    start, end = day.bounds
    if have is not None and have.decks == count:
        return (None if save else have.tally), 0
    part: Tally | None = None
    upto: DeckKey | None = None
    read = 0
    if have is not None and have.decks < count:
        newer = shuffler_decks(db, *shuffler, start, end, after=have.upto)
        read += len(newer)
        if newer and len(newer) == count - have.decks:
            part, upto = have.tally.merged(_tally(newer)), newer[-1].key
    if part is None:
        decks = shuffler_decks(db, *shuffler, start, end)
        read += len(decks)
        part = _tally(decks)
        upto = decks[-1].key if decks else None
    if day.whole and save and upto is not None:
        keep(db, shuffler, day, part.decks, upto, part)
    return part, read


def span_tally(
    db: Db,
    shuffler: Shuffler,
    spans: Sequence[Day],
    counts: dict[int, int],
    stored: dict[tuple[str, ...], Kept],
    *,
    save: bool = True,
) -> SpanTally:
    """The tally of ``shuffler``'s decks over ``spans``, from kept tallies where they hold and
    its decks where not (kept again when ``save``): its days joined in one pass (a kept one as
    the store keeps it)."""
    runs: list[Tally | bytes] = []
    read = 0
    for index, day in enumerate(spans):
        count = counts.get(index, 0)
        if not count:
            continue
        have = stored.get((*shuffler, *day.bounds)) if day.whole else None
        part, more = day_tally(db, shuffler, day, count, have, save=save)
        read += more
        if part is None:
            assert have is not None  # only a kept tally that holds is not read
            runs.append(have.data)
        else:
            runs.append(part)
    return SpanTally(joined(runs), read)


def keep_up(db: Db, spans: Sequence[Day], tables: Sequence[str] = ()) -> int:
    """The kept tallies of the whole days of ``spans`` of every shuffler with decks in them
    brought up to date (none read that still holds); the decks read one by one."""
    counts = deck_counts(db, spans, tables)
    stored = kept(db, counts, spans, tables)
    read = 0
    for shuffler in sorted(counts):
        for index, count in sorted(counts[shuffler].items()):
            day = spans[index]
            if day.whole:
                read += day_tally(db, shuffler, day, count, stored.get((*shuffler, *day.bounds)))[1]
    return read


def _tally(decks: Sequence[StoredDeck]) -> Tally:
    out = Tally()
    for deck in decks:
        out.add(deck.order)
    return out
