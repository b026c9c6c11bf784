"""The hands by quarter hour (controller/pit/reports/quarters.py), on SQLite and PostgreSQL:
what the ingest keeps is what a count from scratch gives, whatever order and however many times
the events come; pit schema 15 counts the hands stored before it; and a report read from the
quarters says what it says read from the hands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.pit.reports import dealers, drop
from controller.pit.reports.params import parse_query
from controller.pit.reports.periods import Calendar
from controller.pit.reports.quarters import (
    FIGURES,
    bounds,
    counted,
    dealt,
    quarter_of,
    whole_hours,
    whole_quarters,
)
from controller.pit.reports.registry import NAMES_ROLES, run
from controller.pit.schema import SCHEMA_VERSION
from controller.pit.store import Store
from tests.pit.reports_floor import events_in, seed
from tests.pit.test_reports_store import NOW


def integers(rows: list[Any]) -> list[tuple[Any, ...]]:
    return [tuple(v if isinstance(v, str) else int(v) for v in r) for r in rows]


Kept = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]


def kept(store: Store) -> Kept:
    """The drop's quarters, the dealers' and the drop's hours, as the store keeps them."""
    figures = ", ".join(FIGURES)
    return (
        integers(store.db.all(
            f"SELECT table_id, quarter, {figures} FROM hand_quarters ORDER BY 1, 2"
        )),
        integers(store.db.all(
            "SELECT table_id, quarter, dealer, started FROM dealer_quarters ORDER BY 1, 2, 3"
        )),
        integers(store.db.all(f"SELECT table_id, hour, {figures} FROM hand_hours ORDER BY 1, 2")),
    )  # fmt: skip


def from_scratch(store: Store) -> Kept:
    """The same, counted from the hands (the hours: summed from the quarters counted so)."""
    quarters = integers(store.db.all(f"SELECT * FROM ({counted()}) c ORDER BY 1, 2"))
    hours: dict[tuple[str, str], list[int]] = {}
    for table, quarter, *figures in quarters:
        sums = hours.setdefault((table, quarter[:13]), [0] * len(figures))
        hours[table, quarter[:13]] = [a + b for a, b in zip(sums, figures, strict=True)]
    return (
        quarters,
        integers(store.db.all(f"SELECT * FROM ({dealt()}) c ORDER BY 1, 2, 3")),
        [(table, hour, *sums) for (table, hour), sums in sorted(hours.items())],
    )


def test_quarters_are_named_by_the_times_in_them() -> None:
    assert quarter_of("2026-01-05T10:44:59.999Z") == "2026-01-05T10:2"
    assert quarter_of("2026-01-05T10:45:00.000Z") == "2026-01-05T10:3"
    assert quarter_of("not a time") is None
    assert bounds("2026-01-05T23:3") == ("2026-01-05T23:45", "2026-01-06T00:00")
    assert bounds("2026-01-05T10:0") == ("2026-01-05T10:00", "2026-01-05T10:15")


def test_the_ingest_keeps_each_quarter_as_counted_from_scratch(store: Store) -> None:
    seed(store)
    found = kept(store)
    assert found == from_scratch(store)
    drop_rows = {(r[0], r[1]): r[2:] for r in found[0]}
    dealt_rows = {(r[0], r[1], r[2]): r[3] for r in found[1]}
    # T2's hands from 12:00 (time collected: 20; pot 30) and 12:10 (rake 2, pot 20), both
    # started by Eli and ended in that quarter
    assert drop_rows[("T2", "2026-01-05T12:0")] == (2, 1, 2, 0, 2, 52, 20)
    assert dealt_rows[("T2", "2026-01-05T12:0", "Eli")] == 2
    # T1's hand from 23:50 on the 5th: started in one quarter, completed (rake 5) in another
    assert ("T1", "2026-01-05T23:3") not in drop_rows
    assert dealt_rows[("T1", "2026-01-05T23:3", "Dana")] == 1
    assert drop_rows[("T1", "2026-01-06T00:0")] == (1, 1, 5, 0, 1, 65, 0)
    # T3's hands name no dealer
    assert {r[2] for r in found[1] if r[0] == "T3"} == {""}


def test_events_late_twice_and_out_of_order_leave_the_count_from_scratch(store: Store) -> None:
    """The batches in reverse, each delivered twice, and the public views after the secure
    ones: each quarter counted again from the hands as they are after each batch."""
    events = [e for e in events_in() if e.stream == "public"]
    batches = [events[i : i + 5] for i in range(0, len(events), 5)]
    for batch in reversed(batches):
        store.ingest(batch)
        store.ingest(batch)
    assert kept(store) == from_scratch(store)
    query = drop_over("2026-01-05", "2026-01-06")
    assert whole_quarters(query)
    assert run(drop.REPORT, store.db, query, NAMES_ROLES).total.drop == 45  # as in order


def test_schemas_15_and_16_count_the_hands_stored_before_them(store: Store) -> None:
    seed(store)
    before = kept(store)
    assert all(before)
    store.db.execute("DROP TABLE shuffler_hours")  # pit schema 17's, which comes after them
    store.db.execute("DROP TABLE hand_hours")
    store.db.execute("DROP TABLE dealer_quarters")
    store.db.execute("DELETE FROM hand_quarters")
    store.db.execute("UPDATE pit_meta SET value = ? WHERE key = 'schema'", (str(14),))
    assert store.migrate() == SCHEMA_VERSION
    assert kept(store) == before


def drop_over(since: str, until: str) -> Any:
    """The drop report asked over ``[since, until)`` in UTC, every table, no grouping."""
    return parse_query(
        since=since,
        until=until,
        tables=None,
        group=None,
        groups=drop.REPORT.groups,
        calendar=Calendar(zone=UTC),
        max_days=92,
        now=NOW,
    )


def ask(report: Any, since: datetime, days: int, group: str | None, zone: str) -> Any:
    return parse_query(
        since=since.isoformat(),
        until=(since + timedelta(days=days)).isoformat(),
        tables=None,
        group=group,
        groups=report.groups,
        calendar=Calendar(zone=ZoneInfo(zone)),
        max_days=92,
        now=NOW,
    )


@pytest.fixture(scope="module")
def floors(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The seeded floor on SQLite, for many queries (PostgreSQL: below, one)."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('floor') / 'pit.sqlite'}")
    store.migrate()
    seed(store)
    return store


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    start=st.integers(min_value=0, max_value=4 * 24 * 3) | st.sampled_from((0, 4, 96, 100)),
    days=st.integers(min_value=1, max_value=3),
    group=st.sampled_from(("day", "shift", "month")),
    zone=st.sampled_from(("UTC", "Europe/Berlin", "Asia/Kolkata", "America/St_Johns")),
)
def test_a_report_from_the_quarters_is_the_report_from_the_hands(
    floors: Store, start: int, days: int, group: str, zone: str
) -> None:
    """For any span of whole quarter hours (in zones whole, half or three quarters of an hour
    from UTC), the drop and the dealers' hands read from the quarters (and the hours, for a span
    of whole hours) are those the hands give."""
    since = datetime(2026, 1, 4, tzinfo=UTC) + timedelta(minutes=15 * start)
    query = ask(drop.REPORT, since, days, group, zone)
    assert whole_quarters(query)
    db = floors.db
    quarters = db.all(*drop.by_quarters(db, query))
    hands = db.all(*drop.by_hands(db, query))
    # a sum of no value is NULL from the hands (no rake taken) and 0 from the quarters
    assert [tuple(v or 0 for v in r) for r in quarters] == [tuple(v or 0 for v in r) for r in hands]
    if whole_hours(query):  # and from the hours, where every edge is on the hour
        by_hours = db.all(*drop.by_hours(db, query))
        assert [tuple(v or 0 for v in r) for r in by_hours] == [
            tuple(v or 0 for v in r) for r in hands
        ]
    report = run(dealers.REPORT, db, ask(dealers.REPORT, since, days, None, zone), NAMES_ROLES)
    dealt = db.all(
        "SELECT COALESCE(dealer, ?), count(*) FROM hands WHERE started_ts >= ? "
        "AND started_ts < ? GROUP BY dealer",
        (dealers.NOBODY, query.since_text, query.until_text),
    )
    assert {d.dealer: d.hands for d in report.dealers if d.hands} == {
        str(name): int(n) for name, n in dealt
    }


def test_a_span_cut_inside_a_quarter_reads_the_hands(store: Store) -> None:
    seed(store)
    cut = drop_over("2026-01-05T10:01:00Z", "2026-01-05T12:11:00Z")
    assert not whole_quarters(cut)
    report = run(drop.REPORT, store.db, cut, NAMES_ROLES)
    # T1's two hands ended at 10:02 and 10:31 (rake 3 and jackpot 1; none); T2's first at
    # 12:05 (time 20: it started at 12:00, in the span); T2's second ended at 12:12, after it
    assert {r.table_id: (r.rake, r.jackpot, r.time_collected, r.hands) for r in report.rows} == {
        "T1": (3, 1, 0, 2),
        "T2": (0, 0, 20, 1),
    }
