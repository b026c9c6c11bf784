"""The store for years over the reports' tables (pit schema 18): hand_quarters, dealer_quarters,
hand_hours (kind ``quarters``) and shuffler_decks, shuffler_hours, shuffler_rollups (kind
``decks``) partitioned by month on PostgreSQL, converted with every row; a month archived, its
reports saying so, restored to the same answers; the decks' three leaving and coming back as
one, so that the hours online count the decks (SHF-RAND); SQLite keeps them whole."""

from __future__ import annotations

import gzip
import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.pit.archive import Archive, ArchiveError, Retention
from controller.pit.db import Db
from controller.pit.partitions import (
    REPORTS,
    Partitions,
    default_name,
    of_kind,
    partition_name,
)
from controller.pit.reports import drop, shufflers
from controller.pit.reports.params import ReportQuery, parse_query
from controller.pit.reports.periods import Calendar
from controller.pit.reports.registry import Report, run
from controller.pit.reports.shuffler_decks import decode_order
from controller.pit.schema import AUTO_ID, MIGRATIONS, REPORTS_BY_MONTH, SCHEMA_VERSION
from controller.pit.store import Store
from tests.pit import reports_floor
from tests.pit.test_shuffler_store import START, deal, fair, revealed, stamp
from tests.pit.test_store import event_in
from tests.pit.test_years import assert_filed_by_month, dump, opened
from tests.postgres import PostgresServer

TABLES = [spec.table for spec in REPORTS]
NOW = reports_floor.stamp("2026-05-15T12:00:00Z")
#: Every month before April archived: the floor's January and the decks' March.
KEEP = {"quarters": 1, "decks": 1}
ROLES = frozenset({"floor"})


def kept_hours(db: Db) -> list[tuple[str, str, str, int]]:
    rows = db.all("SELECT table_id, device, hour, decks FROM shuffler_hours ORDER BY 1, 2, 3")
    return [(str(t), str(d), str(h), int(n)) for t, d, h, n in rows if int(n)]


def counted_hours(db: Db) -> list[tuple[str, str, str, int]]:
    rows = db.all(
        "SELECT table_id, device, substr(ts, 1, 13), count(*) FROM shuffler_decks "
        "GROUP BY table_id, device, substr(ts, 1, 13) ORDER BY 1, 2, 3"
    )
    return [(str(t), str(d), str(h), int(n)) for t, d, h, n in rows]


def ask(since: str, until: str, group: str | None, groups: tuple[Any, ...]) -> ReportQuery:
    return parse_query(
        since=since, until=until, tables=None, group=group, groups=groups,
        calendar=Calendar(), max_days=92, now=START + timedelta(days=60),
    )  # fmt: skip


DROP = ask("2026-01-05T00:00:00Z", "2026-01-07T00:00:00Z", "day", drop.REPORT.groups)
DECKS = ask("2026-03-02T00:00:00Z", "2026-03-06T00:00:00Z", None, ())


def answer(report: Report[Any], db: Db, query: ReportQuery) -> dict[str, Any]:
    """A report's answer as JSON, without what says where older data is."""
    out: dict[str, Any] = run(report, db, query, ROLES).model_dump(mode="json")
    out.pop("archived")
    return out


def seed(store: Store) -> int:
    """The reports' small floor (January) and a shuffler's decks of four days of March, its
    days' tallies kept by a report; the next seq of the decks."""
    store.prepare_months(reports_floor.stamp("2026-01-01T00:00:00Z"))
    reports_floor.seed(store)
    after = deal(store, "S1", fair(4 * 24 * 3, 5), step=timedelta(minutes=20))
    run(shufflers.REPORT, store.db, DECKS, ROLES)  # keeps its whole days' tallies
    return after


# --------------------------------------------------------------------------- the migration


def test_schema_18_partitions_the_reports_tables_keeping_every_row(
    store_url: str, postgres: PostgresServer
) -> None:
    """A store of schema 17 with rows in each of the reports' tables: after 18 every row is
    there, on PostgreSQL in its month's partition (none in the default), the decks' key holding
    their ts, and a deck delivered again is not stored or counted twice; SQLite's tables are
    as they were."""
    sqlite = store_url.startswith("sqlite")
    reference = store_url.replace("pit.sqlite", "reference.sqlite") if sqlite else None
    with opened(reference or postgres.new_database()) as fresh:
        seed(fresh)
        expected = {table: dump(fresh, table) for table in TABLES}
    assert all(expected.values())
    number = MIGRATIONS.index(REPORTS_BY_MONTH) + 1
    assert number == SCHEMA_VERSION == 18
    db = Db(store_url)
    try:
        for at, text in enumerate(MIGRATIONS[: number - 1], start=1):
            with db.transaction():
                db.script(text.replace("{id}", AUTO_ID[db.dialect]))
                if at == 11 and not sqlite:
                    Partitions(db).convert(time.time())
        with db.transaction():
            db.execute("INSERT INTO pit_meta (key, value) VALUES ('schema', ?)", (str(number - 1),))
            db.execute("DELETE FROM pit_meta WHERE key = 'derive_shuffler_decks'")
            for table, rows in expected.items():
                names = list(rows[0])
                db.many(
                    f"INSERT INTO {table} ({', '.join(names)}) "
                    f"VALUES ({', '.join('?' for _ in names)})",
                    [tuple(row[n] for n in names) for row in rows],
                )
        sql_before = {
            str(r[0]): str(r[1])
            for r in (db.all("SELECT name, sql FROM sqlite_master") if sqlite else [])
        }
    finally:
        db.close()
    started = time.monotonic()
    with opened(store_url) as store:
        migrated_in = time.monotonic() - started
        for table, rows in expected.items():
            assert dump(store, table) == rows, table
        assert kept_hours(store.db) == counted_hours(store.db)
        if sqlite:
            after = {
                str(r[0]): str(r[1]) for r in store.db.all("SELECT name, sql FROM sqlite_master")
            }
            assert {t: after[t] for t in TABLES} == {t: sql_before[t] for t in TABLES}
        else:
            for spec in REPORTS:
                assert_filed_by_month(store, spec, expected[spec.table])
            key = store.db.one(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                "to_regclass('shuffler_decks') AND contype = 'p'"
            )
            assert key == ("PRIMARY KEY (table_id, epoch, seq, ts)",)
            indexes = {
                str(r[0])
                for r in store.db.all(
                    "SELECT indexname FROM pg_indexes WHERE tablename = ANY(?)", (TABLES,)
                )
            }
            assert {"shuffler_decks_digest", "shuffler_hours_hour", "hand_quarters_quarter"} <= (
                indexes
            )
        # a deck delivered again (its event's secure view, as a replay brings it) is stored
        first = expected["shuffler_decks"][0]
        again = revealed("S1", int(first["seq"]), str(first["ts"]), decode_order(first["cards"]))
        store.ingest(again)
        assert len(dump(store, "shuffler_decks")) == len(expected["shuffler_decks"])
        assert kept_hours(store.db) == counted_hours(store.db)
    print(f"schema 18 on {store.db.dialect}: {migrated_in:.2f} s")


# --------------------------------------------------------------------------- archive, restore


def test_a_month_of_the_reports_tables_is_archived_said_and_restored_to_the_same_answers(
    pg_url: str, tmp_path: Path
) -> None:
    with opened(pg_url) as store:
        seed(store)
        before = {table: dump(store, table) for table in TABLES}
        drop_before, decks_before = (
            answer(drop.REPORT, store.db, DROP),
            answer(shufflers.REPORT, store.db, DECKS),
        )
        assert drop_before["total"]["drop"] > 0
        assert decks_before["shufflers"]
        assert before["shuffler_rollups"]
        archive = Archive(pg_url, tmp_path)
        try:
            done = archive.run(Retention(months=KEEP, directory=tmp_path), now=NOW)
            archived = {(e.relation, e.month) for e in done.archived}
            assert archived == {(t, m) for t in TABLES for m in ("2026-01", "2026-02", "2026-03")}
            # gone online, in the archive's files with their rows
            for spec in REPORTS:
                assert not [r for r in dump(store, spec.table) if r[spec.column] < "2026-04"]
                for month in ("2026-01", "2026-03"):
                    manifest = json.loads((tmp_path / month / "manifest.json").read_text())
                    entry = manifest["tables"][spec.table]
                    assert entry["kind"] == spec.kind
                    lines = gzip.decompress((tmp_path / month / entry["file"]).read_bytes())
                    month_rows = [r for r in before[spec.table] if r[spec.column][:7] == month]
                    assert lines.count(b"\n") == entry["rows"] == len(month_rows)
            assert kept_hours(store.db) == counted_hours(store.db) == []
            # the reports over the archived months say so, not silently zero
            emptied = run(drop.REPORT, store.db, DROP, ROLES)
            assert emptied.total.drop == 0
            assert [(a.kind, a.months) for a in emptied.archived] == [("quarters", ["2026-01"])]
            cut = ask("2026-01-05T00:10:00Z", "2026-01-06T00:00:00Z", "day", drop.REPORT.groups)
            by_hands = run(drop.REPORT, store.db, cut, ROLES)
            assert [a.kind for a in by_hands.archived] == []  # hands_months not set: online
            gone = run(shufflers.REPORT, store.db, DECKS, ROLES)
            assert not gone.shufflers
            assert [(a.kind, a.months) for a in gone.archived] == [("decks", ["2026-03"])]
            state = {k["kind"]: k for k in store.archive_state()["kinds"]}
            assert (
                state["decks"]["archived"]
                == state["quarters"]["archived"]
                == [
                    "2026-01",
                    "2026-02",
                    "2026-03",
                ]
            )
            assert state["decks"]["online_from"] == "2026-04"
            # restored: every row, and the same answers
            for month in ("2026-01", "2026-03"):
                back = archive.restore(month, now=NOW)
                assert sorted(e.relation for e, what in back if what == "restored") == sorted(
                    TABLES
                )
            for table in TABLES:
                assert dump(store, table) == before[table], table
            assert kept_hours(store.db) == counted_hours(store.db)
            assert answer(drop.REPORT, store.db, DROP) == drop_before
            assert answer(shufflers.REPORT, store.db, DECKS) == decks_before
            assert run(shufflers.REPORT, store.db, DECKS, ROLES).archived == []
        finally:
            archive.close()


def test_shf_rand_a_decks_month_waits_whole_when_one_of_its_tables_is_busy(
    pg_url: str, tmp_path: Path, postgres: PostgresServer
) -> None:
    """A query holding the hours: the decks, their hours and tallies of the month all wait for
    the next round (none leaves alone), and the hours online still count the decks."""
    with opened(pg_url) as store:
        seed(store)
        archive = Archive(pg_url, tmp_path)
        reader = psycopg.connect(pg_url)
        try:
            # March's hours read and the transaction left open: its lock held
            reader.execute(f"SELECT count(*) FROM {partition_name('shuffler_hours', '2026-03')}")
            done = archive.run(
                Retention(months={"decks": 1}, directory=tmp_path, lock_timeout=0.2), now=NOW
            )
            assert {(t, m) for t, m, _ in done.deferred} == {
                (t.table, "2026-03") for t in of_kind("decks")
            }
            assert {(e.relation, e.month) for e in done.archived} == {
                (t.table, m) for t in of_kind("decks") for m in ("2026-01", "2026-02")
            }
            for spec in of_kind("decks"):
                assert "2026-03" in Partitions(store.db).attached(spec.table)
            assert kept_hours(store.db) == counted_hours(store.db) != []
            reader.rollback()
            done = archive.run(Retention(months={"decks": 1}, directory=tmp_path), now=NOW)
            assert {(e.relation, e.month) for e in done.archived} == {
                (t.table, "2026-03") for t in of_kind("decks")
            }
            assert kept_hours(store.db) == counted_hours(store.db) == []
        finally:
            reader.close()
            archive.close()


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    again=st.lists(st.integers(0, 4 * 24 * 3 - 1), max_size=6, unique=True),
    late=st.lists(st.integers(0, 30 * 24 * 3 - 1), max_size=6, unique=True),
)
def test_shf_rand_a_restored_month_counts_its_decks_whatever_came_while_it_was_archived(
    postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory, again: list[int],
    late: list[int],
) -> None:  # fmt: skip
    """While March is archived, decks of March come: some delivered again (the archive holds
    them), some new (a repair's). They wait in the default partitions, counted there; restored,
    March's hours count its decks once each: each hour = the decks in it."""
    url, directory = postgres.new_database(), tmp_path_factory.mktemp("archive")
    with opened(url) as store:
        store.prepare_months(reports_floor.stamp("2026-03-01T00:00:00Z"))
        decks = fair(4 * 24 * 3, 9)
        step = timedelta(minutes=20)
        after = deal(store, "S1", decks, step=step)
        archive = Archive(url, directory)
        try:
            # the events too: a deck's event delivered again is new to the store, and so is
            # its deck (the archive holds it)
            kept = {"decks": 1, "events": 1}
            archive.run(Retention(months=kept, directory=directory), now=NOW)
            assert counted_hours(store.db) == []
            events = []
            for i in again:  # the same event: its seq and ts
                events += revealed("S1", 10 + i, stamp(START + i * step), decks[i])
            for n, i in enumerate(late):
                moment = START + timedelta(minutes=10) + i * step
                events += revealed("S1", after + n, stamp(moment), fair(1, 100 + i)[0])
            if events:
                store.ingest(events)
            assert kept_hours(store.db) == counted_hours(store.db)  # in the default ones
            archive.restore("2026-03", now=NOW)
            assert kept_hours(store.db) == counted_hours(store.db)
            total = store.db.one("SELECT count(*) FROM shuffler_decks")
            assert total == (len(decks) + len(late),)
            for spec in of_kind("decks"):
                assert store.db.one(
                    f"SELECT count(*) FROM {default_name(spec.table)} "
                    f"WHERE {spec.column} < '2026-04'"
                ) == (0,)
        finally:
            archive.close()


def test_shf_rand_an_archive_of_the_decks_without_their_hours_is_not_restored(
    pg_url: str, tmp_path: Path
) -> None:
    with opened(pg_url) as store:
        store.prepare_months(reports_floor.stamp("2026-03-01T00:00:00Z"))
        deal(store, "S1", fair(10, 3))
        archive = Archive(pg_url, tmp_path)
        try:
            archive.run(Retention(months={"decks": 1}, directory=tmp_path), now=NOW)
            path = tmp_path / "2026-03" / "manifest.json"
            manifest = json.loads(path.read_text())
            del manifest["tables"]["shuffler_hours"]
            path.write_text(json.dumps(manifest))
            with pytest.raises(ArchiveError, match="without the other"):
                archive.restore("2026-03", now=NOW)
            assert store.db.one("SELECT count(*) FROM shuffler_decks") == (0,)
            assert not Partitions(store.db).exists(partition_name("shuffler_decks", "2026-03"))
        finally:
            archive.close()


def test_a_sqlite_store_keeps_the_reports_tables_whole_and_archives_nothing(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'pit.sqlite'}"
    with opened(url) as store:
        seed(store)
        assert run(drop.REPORT, store.db, DROP, ROLES).archived == []
        assert kept_hours(store.db) == counted_hours(store.db)
    with pytest.raises(ArchiveError, match="SQLite store keeps every row"):
        Archive(url, tmp_path)


def test_a_late_hand_of_a_month_whose_hands_are_archived_leaves_its_quarters_as_they_were(
    pg_url: str, tmp_path: Path
) -> None:
    """Quarters kept online longer than the hands (``quarters_months`` > ``hands_months``): an
    event arriving late for a quarter of an archived hands month does not count that quarter
    again from the one hand online, which would overwrite the month's figures."""
    with opened(pg_url) as store:
        seed(store)
        before = dump(store, "hand_quarters")
        assert any(r["quarter"].startswith("2026-01-05") and r["hands"] for r in before)
        archive = Archive(pg_url, tmp_path)
        try:
            done = archive.run(Retention(months={"hands": 1}, directory=tmp_path), now=NOW)
            hands = {e.month for e in done.archived if e.relation == "hands"}
            assert hands == {"2026-01", "2026-02", "2026-03"}
        finally:
            archive.close()
        # a hand of T1's, ending in the quarter of the floor's hand that ended at 00:10
        ingest_hand(store, "late", "2026-01-06T00:01:00.000Z", "2026-01-06T00:05:00.000Z", 999, 7)
        assert dump(store, "hand_quarters") == before
        # a hand of a month still online is counted, though the month before it is archived
        ingest_hand(store, "now", "2026-04-01T00:01:00.000Z", "2026-04-01T00:05:00.000Z", 40, 2)
        counted = [r for r in dump(store, "hand_quarters") if r["quarter"] == "2026-04-01T00:0"]
        assert [(r["hands"], r["rake"], r["pot_total"]) for r in counted] == [(1, 2, 42)]


def ingest_hand(store: Store, epoch: str, start: str, end: str, pot: int, rake: int) -> None:
    """One hand of T1's, in an epoch of its own, as the ingest stores it."""
    table = reports_floor.Table("T1")
    table.hand(start, end, pot=pot, rake=rake)
    for body in table.events:
        body.update(epoch=epoch, event_id=f"T1:{epoch}:{body['seq']}")
        body["hand_id"] = body["hand_id"] and f"T1-{epoch}-1"
    store.ingest([event_in(body) for body in table.events])
