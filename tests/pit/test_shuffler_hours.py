"""SHF-RAND: each shuffler's decks by clock hour (controller/pit/reports/shuffler_hours.py), on
SQLite and PostgreSQL: what the ingest keeps is the count of ``shuffler_decks`` whatever order,
however many times and by whichever path the decks come (a repair's replay of a past day); pit
schema 17 counts the decks stored before it; and each floor day's decks the report reads from
it are those whose ``ts`` is in the day, in zones whole, half and three quarters of an hour from
UTC and for spans cut at any minute."""

from __future__ import annotations

import itertools
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.cards import card_from_code
from controller.pit.batches import EventIn
from controller.pit.reports import randomness as rnd
from controller.pit.reports import shufflers
from controller.pit.reports.params import parse_query
from controller.pit.reports.periods import Calendar, Period
from controller.pit.reports.registry import head
from controller.pit.reports.shuffler_decks import BACKFILL_MARK, decode_order
from controller.pit.reports.shuffler_hours import split
from controller.pit.reports.shuffler_tallies import days, deck_counts
from controller.pit.schema import SCHEMA_VERSION
from controller.pit.store import Store
from tests.pit.test_shuffler_store import (
    START,
    body,
    deal,
    fair,
    named,
    revealed,
    same_statistics,
    stamp,
)
from tests.pit.test_store import event_in

ZONES = ("UTC", "Europe/Berlin", "Asia/Kolkata", "America/St_Johns", "Asia/Kathmandu")

Hours = list[tuple[str, str, str, int]]


def kept_hours(store: Store, tables: list[str] | None = None) -> Hours:
    """``shuffler_hours`` as the store keeps it (of ``tables``, or every one)."""
    rows = store.db.all("SELECT table_id, device, hour, decks FROM shuffler_hours ORDER BY 1, 2, 3")
    return [(str(t), str(d), str(h), int(n)) for t, d, h, n in rows if not tables or t in tables]


def counted_hours(store: Store, tables: list[str] | None = None) -> Hours:
    """The same, counted from the decks."""
    rows = store.db.all(
        "SELECT table_id, device, substr(ts, 1, 13), count(*) FROM shuffler_decks "
        "GROUP BY table_id, device, substr(ts, 1, 13) ORDER BY 1, 2, 3"
    )
    return [(str(t), str(d), str(h), int(n)) for t, d, h, n in rows if not tables or t in tables]


def replayed(table: str, seq: int, ts: str, codes: bytes) -> list[EventIn]:
    """A deck.revealed as a repair brings it (both views, source ``replay``)."""
    secret = {"shuffle_id": 1000 + seq, "cards": 52}
    whole = body(table, seq, ts, "deck.revealed", {**secret, "order": []})
    whole["data"]["order"] = [card_from_code(c) for c in codes]
    whole["secure"] = True
    return [
        event_in(body(table, seq, ts, "deck.revealed", secret), "public", "replay"),
        event_in(whole, "secure", "replay"),
    ]


# --------------------------------------------------------------------------- the ingest


def test_shf_rand_the_ingest_counts_each_deck_once_in_its_hour(store: Store) -> None:
    decks = fair(6, 1)
    store.ingest([named("T1", 1, stamp(START), "a")])
    deal(store, "T1", decks[:4], step=timedelta(minutes=25))  # 00:00, 00:25, 00:50, 01:15
    deal(store, "T2", decks[4:], first_seq=40)
    assert kept_hours(store) == [
        ("T1", "a", "2026-03-02T00", 3),
        ("T1", "a", "2026-03-02T01", 1),
        ("T2", "shuffler", "2026-03-02T00", 2),
    ]
    # a redelivery, and a stub (not a whole deck): nothing counted
    deal(store, "T1", decks[:4], step=timedelta(minutes=25))
    store.ingest(revealed("T1", 60, stamp(START), bytes(range(51))))
    assert kept_hours(store) == counted_hours(store)
    assert sum(n for *_, n in kept_hours(store)) == 6


def test_shf_rand_a_late_deck_of_a_past_day_brought_by_a_repair_is_counted(store: Store) -> None:
    decks = fair(50, 2)
    deal(store, "T1", decks[:48], step=timedelta(hours=1))  # two days, a deck an hour
    spans = days(START, START + timedelta(days=2), Calendar(zone=UTC))
    assert deck_counts(store.db, spans) == {("T1", "shuffler"): {0: 24, 1: 24}}
    # the gap repaired: two decks of the first day, after the second day's were stored
    late = START + timedelta(hours=5, minutes=30)
    store.ingest(replayed("T1", 900, stamp(late), decks[48]))
    store.ingest(replayed("T1", 901, stamp(late + timedelta(minutes=1)), decks[49]))
    store.ingest(replayed("T1", 901, stamp(late + timedelta(minutes=1)), decks[49]))  # again
    assert ("T1", "shuffler", "2026-03-02T05", 3) in kept_hours(store)
    assert kept_hours(store) == counted_hours(store)
    assert deck_counts(store.db, spans) == {("T1", "shuffler"): {0: 26, 1: 24}}


def test_shf_rand_the_decks_of_old_events_read_twice_are_counted_once(store: Store) -> None:
    """The events stored before pit schema 13 read by the audit's first round, and again by
    another process that came meanwhile (its mark still there): each deck counted once."""
    store.ingest([named("T1", 1, stamp(START), "a")])
    deal(store, "T1", fair(5, 6), step=timedelta(minutes=20))
    with store.db.transaction():  # as a store of pit schema 12 had them: the events alone
        store.db.execute("DELETE FROM shuffler_decks")
        store.db.execute("DELETE FROM shuffler_hours")
        store.db.execute("DELETE FROM shufflers")
    assert store.backfill_shuffler_decks() == 5
    assert kept_hours(store) == [("T1", "a", "2026-03-02T00", 3), ("T1", "a", "2026-03-02T01", 2)]
    store.db.execute("INSERT INTO pit_meta (key, value) VALUES (?, 'to do')", (BACKFILL_MARK,))
    assert store.backfill_shuffler_decks() == 0
    assert kept_hours(store) == counted_hours(store)
    assert sum(n for *_, n in kept_hours(store)) == 5


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[list[EventIn]], list[str]]:
    """Decks of three tables at any minute of three days, the shufflers named now and then,
    cut in batches delivered in any order, some twice, some as a repair's replay."""
    prefix = uuid.uuid4().hex[:8]  # each example's own tables: the store is the test's
    tables = [f"{prefix}-{n}" for n in range(3)]
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    placed = draw(
        st.lists(
            st.tuples(st.integers(0, 2), st.integers(0, 3 * 24 * 60 - 1)),
            min_size=1,
            max_size=40,
        )
    )
    names = draw(
        st.lists(
            st.tuples(st.integers(0, 2), st.integers(0, 3 * 24 * 60), st.sampled_from("ab")),
            max_size=4,
        )
    )
    seqs = itertools.count(10)
    events: list[list[EventIn]] = []
    for table, minute in placed:
        ts = stamp(START + timedelta(minutes=minute, seconds=rng.randrange(60)))
        codes = bytes(rng.sample(range(52), 52))
        seq = next(seqs)
        if rng.random() < 0.3:
            events.append(replayed(tables[table], seq, ts, codes))
        else:
            events.append(revealed(tables[table], seq, ts, codes))
    for table, minute, device in names:
        ts = stamp(START + timedelta(minutes=minute))
        events.append([named(tables[table], next(seqs), ts, f"shuffler-{device}")])
    order = draw(st.permutations(range(len(events))))
    size = draw(st.integers(1, 6))
    flat = [e for i in order for e in events[i]]
    batches = [flat[i : i + size] for i in range(0, len(flat), size)]
    twice = draw(st.lists(st.integers(0, len(batches) - 1), max_size=3))
    for i in sorted(twice, reverse=True):
        batches.insert(i + 1, batches[i])
    return batches, tables


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(delivered=deliveries())
def test_shf_rand_the_hours_kept_are_the_decks_counted_whatever_the_order(
    store: Store, delivered: tuple[list[list[EventIn]], list[str]]
) -> None:
    batches, tables = delivered
    for batch in batches:
        store.ingest(batch)
    found = kept_hours(store, tables)
    assert found == counted_hours(store, tables)
    stored = store.db.one(
        "SELECT count(*) FROM shuffler_decks WHERE table_id IN (?, ?, ?)", tuple(tables)
    )
    assert stored is not None
    assert sum(n for *_, n in found) == int(stored[0])


# --------------------------------------------------------------------------- the migration


def test_schema_17_counts_the_decks_stored_before_it(store: Store) -> None:
    store.ingest([named("T1", 1, stamp(START), "a")])
    deal(store, "T1", fair(30, 3), step=timedelta(minutes=47))
    deal(store, "T2", fair(20, 4), first_seq=100, step=timedelta(minutes=13))
    before = kept_hours(store)
    assert len(before) > 10
    q = parse_query(
        since="2026-03-01", until="2026-03-04", tables=None, group=None, groups=(),
        calendar=Calendar(zone=UTC), max_days=92, now=START + timedelta(days=30),
    )  # fmt: skip
    report = shufflers.compute(store.db, q, head(shufflers.REPORT, q))
    # a store of pit schema 16: the decks, no count of them by hour
    store.db.execute("DROP TABLE shuffler_hours")
    store.db.execute("UPDATE pit_meta SET value = ? WHERE key = 'schema'", (str(16),))
    assert store.migrate() == SCHEMA_VERSION
    assert kept_hours(store) == before == counted_hours(store)
    again = shufflers.compute(store.db, q, head(shufflers.REPORT, q))
    assert again.shufflers == report.shufflers
    assert [r.decks for r in again.shufflers] == [30, 20]
    # and the ingest adds to what the migration counted
    deal(store, "T2", fair(1, 5), first_seq=200)
    assert kept_hours(store) == counted_hours(store)


# --------------------------------------------------------------------------- each day's decks


@given(
    start=st.datetimes(
        min_value=datetime(2026, 3, 1), max_value=datetime(2026, 3, 6), timezones=st.just(UTC)
    ),
    minutes=st.integers(1, 4 * 24 * 60),
    zone=st.sampled_from(ZONES),
)
def test_the_hours_and_pieces_of_a_span_tile_each_day(
    start: datetime, minutes: int, zone: str
) -> None:
    spans = [
        d.period
        for d in days(start, start + timedelta(minutes=minutes), Calendar(zone=ZoneInfo(zone)))
    ]
    hours, pieces = split(spans)
    assert sorted({i for _, i in hours} | {i for *_, i in pieces}) == list(range(len(spans)))
    for index, span in enumerate(spans):
        whole = [_at(hour + ":00:00.000Z") for hour, i in hours if i == index]
        parts = [(_at(lo), _at(hi)) for lo, hi, i in pieces if i == index]
        assert len(parts) <= 2
        length = sum((hi - lo).total_seconds() for lo, hi in parts)
        # every second of the day in one hour or piece (its times written to the millisecond)
        assert len(whole) * 3600.0 + length == pytest.approx(span.seconds, abs=0.002)
        for lo, hi in parts:
            assert span.start - timedelta(milliseconds=1) < lo < hi <= span.end
            assert hi - lo < timedelta(hours=1)
        for hour in whole:
            assert span.start <= hour
            assert hour + timedelta(hours=1) <= span.end


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def day_by_day(store: Store, spans: list[Period], tables: list[str]) -> dict[Any, dict[int, int]]:
    """Each shuffler's decks in each day, counted from the decks by ``ts``."""
    out: dict[Any, dict[int, int]] = {}
    for index, span in enumerate(spans):
        lo, hi = (
            t.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            for t in (span.start, span.end)
        )
        for table, device, n in store.db.all(
            "SELECT table_id, device, count(*) FROM shuffler_decks WHERE ts >= ? AND ts < ? "
            "GROUP BY table_id, device",
            (lo, hi),
        ):
            if not tables or table in tables:
                out.setdefault((str(table), str(device)), {})[index] = int(n)
    return out


def seed_floor(store: Store) -> None:
    """Three tables' decks over five days, every 7 to 23 minutes; T1's shuffler renamed."""
    store.ingest([named("T1", 1, stamp(START), "a")])
    store.ingest([named("T1", 2, stamp(START + timedelta(days=2, hours=7)), "b")])
    for n, (table, step) in enumerate((("T1", 7), ("T2", 13), ("T3", 23))):
        count = 5 * 24 * 60 // step
        deal(store, table, fair(count, 10 + n), first_seq=10, step=timedelta(minutes=step))


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The floor on SQLite, for many spans (both stores: below)."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('decks') / 'pit.sqlite'}")
    store.migrate()
    seed_floor(store)
    return store


@settings(max_examples=60, deadline=None)
@given(
    start=st.integers(0, 5 * 24 * 4) | st.sampled_from((0, 96)),
    minutes=st.integers(1, 6 * 24 * 60) | st.sampled_from((1440, 2880)),
    cut=st.booleans(),
    zone=st.sampled_from(ZONES),
    tables=st.sampled_from(([], ["T2"], ["T1", "T3"])),
)
def test_shf_rand_each_days_decks_are_the_decks_in_it(
    floor: Store, start: int, minutes: int, cut: bool, zone: str, tables: list[str]
) -> None:
    """For any span (on the quarter hour, or cut at any minute and second) in any zone, the
    decks of each of its floor days (from the hours and pieces) are the decks whose ts is in
    the day."""
    since = START - timedelta(days=1) + timedelta(minutes=15 * start)
    if cut:
        since += timedelta(minutes=7, seconds=13)
    spans = days(since, since + timedelta(minutes=minutes), Calendar(zone=ZoneInfo(zone)))
    found = deck_counts(floor.db, spans, tables)
    assert {k: dict(v) for k, v in found.items()} == day_by_day(
        floor, [d.period for d in spans], tables
    )


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_shf_rand_the_report_counts_each_day_from_the_hours_on_both_stores(
    store: Store, zone: str
) -> None:
    """A report over a span cut at its edges, in a zone a whole or half an hour from UTC: each
    shuffler's decks and tests are those of its decks in the span, in order."""
    seed_floor(store)
    q = parse_query(
        since="2026-03-02T05:10:00Z", until="2026-03-05T20:41:30Z", tables=None, group=None,
        groups=(), calendar=Calendar(zone=ZoneInfo(zone)), max_days=92,
        now=START + timedelta(days=30),
    )  # fmt: skip
    spans = days(q.since, q.until, q.calendar)
    counts = deck_counts(store.db, spans)
    assert {k: dict(v) for k, v in counts.items()} == day_by_day(
        store, [d.period for d in spans], []
    )
    read = []
    for _ in range(2):  # the whole days tallied and kept, then read from what was kept
        found = shufflers.compute(store.db, q, head(shufflers.REPORT, q))
        read.append(found.read)
        for row in found.shufflers:
            decks = [
                str(c)
                for (c,) in store.db.all(
                    "SELECT cards FROM shuffler_decks WHERE table_id = ? AND device = ? "
                    "AND ts >= ? AND ts < ? ORDER BY ts, epoch, seq",
                    (row.table_id, row.device, q.since_text, q.until_text),
                )
            ]
            assert row.decks == len(decks)
            direct = rnd.checks(rnd.tally(decode_order(d) for d in decks))
            mine = [c for c in found.checks if (c.table_id, c.device) == (row.table_id, row.device)]
            assert [c.decks for c in mine] == [c.decks for c in direct]
            assert same_statistics(mine, direct)
        assert sorted((r.table_id, r.device) for r in found.shufflers) == [
            ("T1", "a"),
            ("T1", "b"),
            ("T2", "shuffler"),
            ("T3", "shuffler"),
        ]
    assert 0 < read[1] < read[0]  # the cut edges are read from their decks each time
