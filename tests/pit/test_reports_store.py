"""The reports computed in the store, SQLite and PostgreSQL alike, over the small floor of
tests/pit/reports_floor.py: every figure as counted by hand; the drop as `tablectl journal export
--drop` counts it from the tables' own journals; who dealt a played hand from its events."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.authority import Authority, Role
from controller.pit.reports import dealers, devices, drop, rulings
from controller.pit.reports.params import ReportQuery, parse_query
from controller.pit.reports.periods import Calendar, Group
from controller.pit.reports.registry import NAMES_ROLES, Report, run
from controller.pit.store import Store
from controller.shell.export import export_drop, export_events
from controller.shell.journal import Journal
from controller.table.inputs import Confirm, DealerInput
from tests.pit.reports_floor import seed
from tests.pit.test_phh import HOUSE_SCENARIOS
from tests.pit.test_store import event_in
from tests.shell.test_export import journal_of

UTC_FLOOR = Calendar(zone=UTC)
BERLIN = Calendar(zone=ZoneInfo("Europe/Berlin"))
NOW = datetime(2026, 2, 1, tzinfo=UTC)


def ask(
    report: Report[Any],
    *,
    since: str = "2026-01-05",
    until: str = "2026-01-06",
    group: Group | None = None,
    tables: str | None = None,
    calendar: Calendar = UTC_FLOOR,
) -> ReportQuery:
    return parse_query(
        since=since,
        until=until,
        tables=tables,
        group=group,
        groups=report.groups,
        calendar=calendar,
        max_days=92,
        now=NOW,
    )


@pytest.fixture
def seeded(store: Store) -> Store:
    seed(store)
    return store


def figures(row: Any) -> tuple[Any, ...]:
    """A drop row's figures: rake, jackpot, time, drop, hands, raked, hours, per hour, pots,
    pot total, average pot."""
    return (
        row.rake,
        row.jackpot,
        row.time_collected,
        row.drop,
        row.hands,
        row.raked,
        row.hours,
        row.hands_per_hour,
        row.pots,
        row.pot_total,
        row.average_pot,
    )


def test_the_drop_per_table_and_day_as_counted_by_hand(seeded: Store) -> None:
    """HOUSE-RAKE and HOUSE-DROP-JACKPOT in the period the hand ended (T1's hand from 23:50 is
    the 6th's), HOUSE-TIME in the period of the hand it came before, a misdeal no hand."""
    report = run(drop.REPORT, seeded.db, ask(drop.REPORT), NAMES_ROLES)
    assert [p.name for p in report.periods] == ["2026-01-05", "2026-01-06"]
    grid = {(r.table_id, r.period): figures(r) for r in report.rows}
    assert grid == {
        ("T1", "2026-01-05"): (3, 1, 0, 4, 2, 1, 1, 2.0, 2, 54, 27.0),
        ("T1", "2026-01-06"): (5, 0, 0, 5, 1, 1, 1, 1.0, 1, 65, 65.0),
        ("T2", "2026-01-05"): (2, 0, 20, 22, 2, 1, 1, 2.0, 2, 52, 26.0),
        ("T2", "2026-01-06"): (4, 2, 0, 6, 1, 1, 1, 1.0, 1, 106, 106.0),
        ("T3", "2026-01-05"): (7, 0, 0, 7, 1, 1, 1, 1.0, 1, 77, 77.0),
        ("T3", "2026-01-06"): (1, 0, 0, 1, 1, 1, 1, 1.0, 1, 9, 9.0),
    }
    floor = {r.period: figures(r) for r in report.periods_total}
    assert floor == {
        "2026-01-05": (12, 1, 20, 33, 5, 3, 3, 1.67, 5, 183, 36.6),
        "2026-01-06": (10, 2, 0, 12, 3, 3, 3, 1.0, 3, 180, 60.0),
    }
    assert {r.table_id: r.drop for r in report.tables_total} == {"T1": 9, "T2": 28, "T3": 8}
    assert figures(report.total) == (22, 3, 20, 45, 8, 6, 6, 1.33, 8, 363, 45.38)


def test_the_drop_in_the_floor_s_time_zone_shifts_and_months(seeded: Store) -> None:
    """In Berlin (UTC+1 in January) T3's hand that ended at 23:20 UTC on the 5th is the 6th's;
    by shift, T1's hand from 23:50 to 00:10 is the grave shift begun on the 5th; by month, one."""
    berlin = run(drop.REPORT, seeded.db, ask(drop.REPORT, calendar=BERLIN), NAMES_ROLES)
    assert berlin.since == "2026-01-04T23:00:00.000Z"
    assert berlin.until == "2026-01-06T23:00:00.000Z"
    assert {(r.table_id, r.period): r.drop for r in berlin.rows if r.table_id == "T3"} == {
        ("T3", "2026-01-06"): 8
    }
    shifts = run(drop.REPORT, seeded.db, ask(drop.REPORT, group="shift"), NAMES_ROLES)
    assert [p.name for p in shifts.periods] == [
        "2026-01-04 grave",
        "2026-01-05 day",
        "2026-01-05 swing",
        "2026-01-05 grave",
        "2026-01-06 day",
        "2026-01-06 swing",
        "2026-01-06 grave",
    ]
    assert {(r.table_id, r.period): r.drop for r in shifts.rows} == {
        ("T1", "2026-01-05 day"): 4,
        ("T1", "2026-01-05 grave"): 5,
        ("T2", "2026-01-05 day"): 22,
        ("T2", "2026-01-06 day"): 6,
        ("T3", "2026-01-05 grave"): 7,
        ("T3", "2026-01-06 swing"): 1,
    }
    months = run(drop.REPORT, seeded.db, ask(drop.REPORT, group="month"), NAMES_ROLES)
    assert [(p.name, p.start, p.end) for p in months.periods] == [
        ("2026-01", "2026-01-05T00:00:00.000Z", "2026-01-07T00:00:00.000Z")
    ]
    assert months.total.drop == 45
    only = run(drop.REPORT, seeded.db, ask(drop.REPORT, tables="T2,T3"), NAMES_ROLES)
    assert {r.table_id for r in only.rows} == {"T2", "T3"}
    assert only.total.drop == 36


def test_irregularities_by_rule_device_and_ruler_with_the_time_to_ruling(seeded: Store) -> None:
    report = run(rulings.REPORT, seeded.db, ask(rulings.REPORT), NAMES_ROLES)
    by_rule = {
        r.rule: (
            r.holds,
            r.confirmed,
            r.rejected,
            r.overridden,
            r.open,
            r.average_seconds,
            r.longest_seconds,
            r.misdeals,
            r.overrides,
        )
        for r in report.rules
    }
    assert by_rule == {
        "SEAT-COUNT": (1, 1, 0, 0, 0, 20.0, 20.0, 1, 0),
        "SHF-MID-HAND": (1, 1, 0, 0, 0, 30.0, 30.0, 0, 0),
        "FLOP-PREM": (1, 0, 0, 1, 0, 60.0, 60.0, 0, 1),
        # its hand ended 30 s after it was raised, nobody named: settled by the end
        "BOXED": (1, 0, 0, 0, 0, 30.0, 30.0, 0, 0),
    }
    assert {(d.table_id, d.device, d.rule, d.holds) for d in report.devices} == {
        ("T1", "reader seat:3", "SEAT-COUNT", 1),
        ("T2", "shuffler", "SHF-MID-HAND", 1),
        ("T3", "reader seat:5", "BOXED", 1),
    }
    assert [
        (r.person, r.role, r.confirmed, r.overridden, r.rulings, r.average_seconds)
        for r in report.rulers
    ] == [
        ("Fay", "floor", 1, 1, 2, 40.0),
        ("Eli", "dealer", 1, 0, 1, 30.0),
    ]
    assert report.holds_total == 4
    assert [(h.hold, h.how, h.seconds) for h in report.holds] == [
        ("T3-00002-h1", "hand end", 30.0),
        ("T2-00003-h1", "override", 60.0),
        ("T1-00004-h1", "confirm", 20.0),
        ("T2-00002-h1", "confirm", 30.0),
    ]


def test_a_reader_who_is_not_the_floor_or_surveillance_reads_no_dealer_s_name(
    seeded: Store,
) -> None:
    report = run(rulings.REPORT, seeded.db, ask(rulings.REPORT), frozenset({"pit"}))
    text = report.model_dump_json()
    assert "Eli" not in text
    assert "Fay" in text  # the floor's names are not hidden
    assert [(r.person, r.rulings) for r in report.rulers] == [("Fay", 2), ("a dealer", 1)]
    assert {h.person for h in report.holds} == {None, "Fay", "a dealer"}


def test_each_dealer_s_holds_per_hundred_hands_beside_the_floor_s(seeded: Store) -> None:
    report = run(dealers.REPORT, seeded.db, ask(dealers.REPORT), NAMES_ROLES)
    assert [
        (d.dealer, d.hands, d.holds, d.rate, d.floor_rate, d.rules) for d in report.dealers
    ] == [
        ("Dana", 4, 1, 25.0, 44.444, "SEAT-COUNT×1"),
        ("Eli", 3, 2, 66.667, 44.444, "FLOP-PREM×1, SHF-MID-HAND×1"),
        ("(no dealer named)", 2, 1, 50.0, 44.444, "BOXED×1"),
    ]
    assert (report.floor.hands, report.floor.holds, report.floor.rate) == (9, 4, 44.444)


def test_device_faults_jams_stale_readers_and_uptime_per_day(seeded: Store) -> None:
    """GLI29-ERR-JAM counts a jam among the faults, SHF-POWER a reboot; uptime is the union of
    a table's connections as the pit heard them."""
    report = run(devices.REPORT, seeded.db, ask(devices.REPORT), NAMES_ROLES)
    rows = {
        (r.table_id, r.device, r.period): (r.kind, r.faults, r.jams, r.stale, r.lost, r.reboots)
        for r in report.devices
    }
    assert rows == {
        ("T1", "rfid-board", "2026-01-05"): ("reader", 0, 0, 1, 0, 0),
        ("T1", "rfid-board", "2026-01-06"): ("reader", 0, 0, 1, 0, 0),
        ("T1", "shuffler", "2026-01-05"): ("shuffler", 1, 1, 0, 0, 0),
        ("T1", "shuffler", "2026-01-06"): (None, 1, 0, 0, 0, 1),
        ("T2", "rfid", "2026-01-06"): ("reader", 0, 0, 0, 1, 0),
    }
    totals = {(r.table_id, r.device): (r.kind, r.faults, r.jams) for r in report.devices_total}
    assert totals[("T1", "shuffler")] == ("shuffler", 2, 1)
    uptime = {(u.table_id, u.period): u.uptime for u in report.uptime}
    assert uptime == {
        ("T1", "2026-01-05"): 75.0,
        ("T1", "2026-01-06"): 100.0,
        ("T2", "2026-01-05"): 100.0,
        ("T2", "2026-01-06"): 25.0,
        ("T3", "2026-01-05"): 0.0,
        ("T3", "2026-01-06"): 75.0,
    }
    assert {u.table_id: u.uptime for u in report.uptime_total} == {
        "T1": 87.5,
        "T2": 62.5,
        "T3": 37.5,
    }


def test_a_period_without_anything_is_empty_not_an_error(seeded: Store) -> None:
    every: tuple[Report[Any], ...] = (drop.REPORT, rulings.REPORT, dealers.REPORT, devices.REPORT)
    for report in every:
        query = ask(report, since="2025-06-01", until="2025-06-03")
        answer = run(report, seeded.db, query, NAMES_ROLES)
        dumped = answer.model_dump()
        assert all(not dumped[k] for k in ("rows", "rules", "holds", "devices") if k in dumped)


#: Every scenario of the house's money (HOUSE-RAKE, HOUSE-DROP-JACKPOT, HOUSE-TIME), and one of
#: no take at all.
HOUSE = (*(n for n in HOUSE_SCENARIOS if "house" in n.lower()), "rule-STRADDLE.toml")


def test_the_drop_is_the_export_s_on_the_same_hands_house_rake_jackpot_and_time(
    store: Store, tmp_path: Path
) -> None:
    """Each scenario played into a table's journal (the shell's runner): what `tablectl journal
    export --drop` counts from the journal, per day and in all, is what the drop report counts
    from the same events in the pit (HOUSE-RAKE, HOUSE-DROP-JACKPOT, HOUSE-TIME)."""
    exported: dict[str, list[list[str]]] = {}
    for index, name in enumerate(HOUSE):
        table = f"X{index}"
        (tmp_path / table).mkdir()
        path, _ = journal_of(name, tmp_path / table)
        journal = Journal.open_existing(path)
        try:
            lines = [line.split() for line in export_drop(journal, "day")]
            envelopes = [json.loads(line) for line in export_events(journal)]
        finally:
            journal.close()
        exported[table] = lines[1:]  # the header off
        for body in envelopes:  # the journal's table as another table of the floor
            body["table_id"] = table
            body["event_id"] = f"{table}:{body['epoch']}:{body['seq']}"
        store.ingest([event_in(body, "secure") for body in envelopes])
        store.ingest([event_in(body, "public") for body in envelopes])
    query = ask(drop.REPORT, since="2025-12-31", until="2026-01-02")
    report = run(drop.REPORT, store.db, query, NAMES_ROLES)

    def take(figures: list[str]) -> bool:  # a line with rake, jackpot, time or a raked hand
        return any(int(f) for f in figures)

    mine = {
        (r.table_id, r.period): [str(v) for v in (r.rake, r.jackpot, r.time_collected, r.drop)]
        + [str(r.raked)]
        for r in [*report.rows, *report.tables_total]
    }
    theirs = {(table, line[1]): line[2:] for table, lines in exported.items() for line in lines}
    assert {k: v for k, v in mine.items() if take(v)} == {
        k: v for k, v in theirs.items() if take(v)
    }
    totals = {r.table_id: r for r in report.tables_total}
    assert any(r.rake for r in totals.values())  # a rake among them
    assert any(r.time_collected for r in totals.values())  # and time collected


def test_a_hand_s_dealer_is_the_person_who_started_it_as_a_dealer(
    store: Store, tmp_path: Path
) -> None:
    """From a played hand's own events: its hand.started's by names the dealer."""
    dealer = Authority("Ann", Role.DEALER, "ann")

    floor = Authority("Bob Floor", Role.FLOOR, "bob")

    def signed(item: Any) -> Any:  # the dealer deals, the floor confirms the hold
        if isinstance(item, DealerInput):
            return dataclasses.replace(
                item, authority=floor if isinstance(item, Confirm) else dealer
            )
        return item

    path, _ = journal_of("T03-seat-reads-one-card.toml", tmp_path, signed)
    journal = Journal.open_existing(path)
    try:
        envelopes = [json.loads(line) for line in export_events(journal)]
    finally:
        journal.close()
    store.ingest([event_in(body) for body in envelopes])
    query = ask(dealers.REPORT, since="2025-12-31", until="2026-01-02")
    report = run(dealers.REPORT, store.db, query, NAMES_ROLES)
    assert [(d.dealer, d.hands, d.holds) for d in report.dealers] == [("Ann", 1, 1)]
    assert run(dealers.REPORT, store.db, query, NAMES_ROLES).floor.rules == "SEAT-COUNT×1"


def test_shifts_that_begin_before_the_floor_s_day_belong_to_the_day_before(seeded: Store) -> None:
    """With the day beginning at 06:00, a shift from 02:00 is the last of the day before."""
    calendar = Calendar(
        zone=UTC, day_start=time(6), shifts=(("early", time(2)), ("late", time(14)))
    )
    report = run(
        drop.REPORT, seeded.db, ask(drop.REPORT, group="shift", calendar=calendar), NAMES_ROLES
    )
    names = [p.name for p in report.periods]
    assert names[:3] == ["2026-01-04 early", "2026-01-05 late", "2026-01-05 early"]
    assert report.periods[0].start == "2026-01-05T06:00:00.000Z"
    assert report.total.drop == 45
