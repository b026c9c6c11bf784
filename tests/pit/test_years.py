"""The store for years: what grows with play partitioned by month on PostgreSQL (made ahead, a
default partition behind), each event stored once across a month's end, a month detached,
archived, dropped and read back, an unpartitioned store migrated in place, the retention
config checked; SQLite keeps its tables whole and says so."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from controller.cli import main
from controller.config import ConfigError
from controller.envelope import envelope
from controller.pit.archive import Archive, ArchiveError, DamagedError, Retention
from controller.pit.batches import EventIn
from controller.pit.config import parse_pit_config
from controller.pit.db import Db
from controller.pit.partitions import (
    BY_MONTH,
    KINDS,
    REPORTS,
    SCHEMA_11,
    ByMonth,
    Partitions,
    add_months,
    default_name,
    month_start,
    partition_name,
)
from controller.pit.schema import AUTO_ID, MIGRATIONS
from controller.pit.schema import BY_MONTH as BY_MONTH_MIGRATION
from controller.pit.store import Store
from controller.pit.users import add_user
from tests.helpers import run_file
from tests.pit import test_store
from tests.pit.test_store import event_in
from tests.pit.web import PASSWORD, serve
from tests.postgres import PostgresServer

#: Scenarios with what grows with play: hands, rule IDs, holds raised and resolved (one left
#: open), rulings, an integrity alarm, the house's money.
SCENARIOS = (
    "rule-CARD-FROM-MUCK.toml",
    "rule-SHF-DOOR-dispense-before-recount.toml",
    "house-rake-cap.toml",
    "board-turn-two-no-burn.toml",
)
EVERY_KIND = dict.fromkeys(KINDS, 1)


@contextlib.contextmanager
def opened(url: str, *, migrate: bool = True) -> Iterator[Store]:
    store = Store(url)
    try:
        if migrate:
            store.migrate()
        yield store
    finally:
        store.close()


def stamp(text: str) -> float:
    """The Unix time of an RFC 3339 UTC time."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def at(body: dict[str, Any], ts: str) -> dict[str, Any]:
    """``body`` with its ``ts``."""
    return {**body, "ts": ts}


def shifted(body: dict[str, Any], delta: timedelta) -> dict[str, Any]:
    """``body`` ``delta`` later (its ``ts``, milliseconds as the tables write them)."""
    moved = datetime.fromisoformat(body["ts"].replace("Z", "+00:00")) + delta
    return at(body, moved.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moved.microsecond // 1000:03d}Z")


def floor_events(starts: dict[str, str]) -> list[EventIn]:
    """Both views of every event of :data:`SCENARIOS`, each run its own epoch starting at the
    time ``starts`` gives it (one per scenario), in order."""
    views = []
    for name, start in zip(SCENARIOS, starts.values(), strict=True):
        run = run_file(name)
        first = run.events[0].ts
        delta = datetime.fromisoformat(start.replace("Z", "+00:00")) - first
        for seq, e in enumerate(run.events, start=1):
            for secure, stream in ((False, "public"), (True, "secure")):
                body = envelope(e, table_id="T1", epoch=name, seq=seq, secure=secure)
                views.append(event_in(shifted(body, delta), stream))
    return views


#: Runs in four months, one of them over the end of January.
STARTS = {
    "nov": "2025-11-14T20:00:00.000Z",
    "dec": "2025-12-24T03:00:00.000Z",
    "jan-feb": "2026-01-31T23:59:50.000Z",
    "feb": "2026-02-10T12:00:00.000Z",
}


def ingest_floor(store: Store, now: float) -> None:
    views = floor_events(STARTS)
    for i in range(0, len(views), 9):
        store.ingest(views[i : i + 9], now=now)
    for alarm in store.alarms(limit=1000)[:1]:
        store.ack_alarm(alarm["table_id"], alarm["epoch"], alarm["seq"], "ann", ["floor"], now)


def dump(store: Store, table: str) -> list[dict[str, Any]]:
    """Every row of ``table`` as a dict, sorted."""
    cursor = store.db.execute(f"SELECT * FROM {table}")
    names = [d[0] for d in cursor.description]
    return sorted((dict(zip(names, r, strict=True)) for r in cursor.fetchall()), key=repr)


def month_of_row(spec: ByMonth, row: dict[str, Any]) -> str:
    """The month a row is filed under."""
    return str(row[spec.column])[:7]


def assert_filed_by_month(store: Store, spec: ByMonth, rows: list[dict[str, Any]]) -> None:
    """PostgreSQL: ``spec.table`` is partitioned, each of ``rows`` is in its month's
    partition, and nothing waits in the default one."""
    partitions = Partitions(store.db)
    assert partitions.partitioned(spec.table), spec.table
    filed = {month_of_row(spec, r) for r in rows}
    assert filed <= set(partitions.attached(spec.table)), spec.table
    assert store.db.one(f"SELECT count(*) FROM {default_name(spec.table)}") == (0,)
    misfiled = store.db.one(
        f"SELECT count(*) FROM {spec.table} WHERE tableoid::regclass::text <> "
        f"'{spec.table}_p' || replace(substr({spec.column}, 1, 7), '-', '_')"
    )
    assert misfiled == (0,), spec.table


# --------------------------------------------------------------------------- partitions


def test_every_table_that_grows_with_play_is_partitioned_by_month_ahead_of_time(
    pg_url: str,
) -> None:
    with opened(pg_url) as store:
        partitions = Partitions(store.db)
        now = datetime.now(UTC).strftime("%Y-%m")
        ahead = [add_months(now, n) for n in range(4)]
        for spec in BY_MONTH:
            assert partitions.partitioned(spec.table), spec.table
            assert sorted(partitions.attached(spec.table)) == ahead, spec.table
            assert partitions.has_default(spec.table), spec.table
            key = store.db.one(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                "to_regclass(?) AND contype = 'p'",
                (spec.table,),
            )
            assert key == (f"PRIMARY KEY ({', '.join(spec.primary)})",)
        # the pit makes the next months as a month begins: the ingest checks once a month
        later = month_start(add_months(now, 2)) + 60
        store.ingest([event_in(test_store.envelope(1))], now=later)
        assert add_months(now, 5) in partitions.attached("events")
        assert add_months(now, 5) in partitions.attached("alarm_acks")


def test_rows_of_a_month_without_a_partition_wait_in_the_default_one_and_move_in(
    pg_url: str,
) -> None:
    with opened(pg_url) as store:
        late = at(test_store.envelope(1, rules=["X-1"]), "2031-05-02T10:00:00.000Z")
        store.ingest([event_in(late)])  # a table's clock years ahead of the pit's
        assert store.db.one(f"SELECT count(*) FROM {default_name('events')}") == (1,)
        # the month's partition made later takes the rows waiting for it
        assert "events_p2031_05" in Partitions(store.db).ensure(["2031-05"])
        assert store.db.one(f"SELECT count(*) FROM {default_name('events')}") == (0,)
        assert store.db.one("SELECT count(*) FROM events_p2031_05") == (1,)
        assert store.db.one("SELECT count(*) FROM event_rules_p2031_05") == (1,)
        again = store.ingest([event_in(late)])
        assert (dict(again.stored), again.duplicates) == ({}, 1)


@pytest.mark.parametrize("made", [True, False], ids=["partitions", "default-partition"])
def test_an_event_delivered_twice_across_a_month_boundary_is_stored_once(
    store_url: str, made: bool
) -> None:
    last_of_january = "2026-01-31T23:59:59.999Z"
    with opened(store_url) as store:
        if made:
            store.prepare_months(month_start("2026-01"))
        body = at(test_store.envelope(7, "betting.action", rules=["BET-1"]), last_of_january)
        first = store.ingest([event_in(body)], now=stamp("2026-01-31T23:59:59.999Z"))
        # the broker delivers it again after the month turned, and a table replays it
        again = store.ingest(
            [event_in(body), event_in(body, source="replay")], now=stamp("2026-02-01T00:00:02Z")
        )
        secure = store.ingest([event_in(body, "secure")], now=stamp("2026-02-01T00:00:03Z"))
        assert dict(first.stored) == {"T1": 1}
        assert (dict(again.stored), again.duplicates) == ({}, 2)
        assert [e.stream for e in secure.stored_events] == ["secure"]
        assert store.event_keys() == [("T1", "e1", 7)]
        assert store.db.one("SELECT count(*) FROM event_rules") == (1,)
        if store.db.dialect == "postgresql" and made:
            where = store.db.one("SELECT tableoid::regclass::text FROM events")
            assert where == (partition_name("events", "2026-01"),)


def test_one_seq_published_again_with_another_time_is_not_stored_twice(store_url: str) -> None:
    """The key has the event's ts, which every delivery of an event carries the same; a table
    that publishes a seq again with another time (across the month's end) does not get a
    second row of it: the first stands."""
    with opened(store_url) as store:
        store.prepare_months(month_start("2026-01"))
        first = at(test_store.envelope(3, rules=["R-1"]), "2026-01-31T23:59:59.000Z")
        other = at(test_store.envelope(3, rules=["R-2"]), "2026-02-01T00:00:01.000Z")
        store.ingest([event_in(first)], now=stamp("2026-02-01T00:00:00Z"))
        again = store.ingest(
            [event_in(other), event_in(other, "secure")], now=stamp("2026-02-01T00:00:02Z")
        )
        assert (dict(again.stored), again.duplicates) == ({}, 2)
        assert store.db.all("SELECT seq, ts FROM events") == [(3, first["ts"])]
        assert store.db.all("SELECT rule FROM event_rules") == [("R-1",)]


def test_a_hand_and_a_hold_over_the_turn_of_a_month_are_one_row_each(store_url: str) -> None:
    with opened(store_url) as store:
        store.prepare_months(month_start("2026-01"))
        start = {"button": 1, "seats": [1, 2], "blinds": [1, 2], "ante": 0, "stacks": {"1": 9}}
        hold = {"hold": "h1", "rule": "BURN-MISS", "reason": "no burn", "ruling": "confirm"}
        evs = [
            at(test_store.envelope(1, "hand.started", data=start), "2026-01-31T23:59:58.000Z"),
            at(
                test_store.envelope(2, "hand.hold", data=hold, rules=["BURN-MISS"]),
                "2026-01-31T23:59:59.000Z",
            ),
            at(
                test_store.envelope(
                    3,
                    "hand.resume",
                    data={"hold": "h1", "decision": "confirm", "by": "confirm"},
                    rules=["BURN-MISS"],
                    by={"person": "ann", "role": "floor"},
                ),
                "2026-02-01T00:03:00.000Z",
            ),
            at(
                test_store.envelope(4, "hand.completed", data={"stacks": {"1": 9}}, rules=["X-2"]),
                "2026-02-01T00:04:00.000Z",
            ),
        ]
        # the end of the hand first (out of order), then its start, a batch each
        for body in (evs[3], evs[2], evs[0], evs[1]):
            store.ingest([event_in(body)], now=stamp(body["ts"]))
        (hand,) = store.hands()
        assert (hand["started_ts"], hand["outcome"]) == (evs[0]["ts"], "completed")
        assert (hand["first_seq"], hand["last_seq"]) == (1, 4)
        assert hand["rules"] == ["BURN-MISS", "X-2"]
        (row,) = store.holds(open_only=False)
        assert row["raised_seq"] == 2
        assert row["resolution"] is not None
        assert row["resolution"]["decision"] == "confirm"
        months = {
            r[0] for r in store.db.all("SELECT month FROM hands UNION SELECT month FROM holds")
        }
        assert months == {"2026-02"}  # the month of the first of its events stored


# --------------------------------------------------------------------------- archive


def retention(directory: Path, **kw: Any) -> Retention:
    return Retention(months=dict(EVERY_KIND), directory=directory, **kw)


def test_a_month_is_detached_archived_dropped_then_restored_and_readable(
    pg_url: str, tmp_path: Path
) -> None:
    now = stamp("2026-02-20T12:00:00Z")
    with opened(pg_url) as store:
        store.prepare_months(stamp("2025-11-01T00:00:00Z"))
        ingest_floor(store, now)
        before = {spec.table: dump(store, spec.table) for spec in BY_MONTH}
        keys, hands = store.event_keys(), store.hands(limit=1000)
        archive = Archive(pg_url, tmp_path)
        try:
            # this month and the one before stay online: November and December go
            done = archive.run(retention(tmp_path), now=now)
            assert {(e.relation, e.month) for e in done.archived} == {
                (spec.table, month) for spec in BY_MONTH for month in ("2025-11", "2025-12")
            }
            assert not done.deferred
            for spec in BY_MONTH:
                attached = Partitions(store.db).attached(spec.table)
                assert "2025-11" not in attached
                assert "2026-01" in attached
                assert not Partitions(store.db).exists(partition_name(spec.table, "2025-11"))
            for month in ("2025-11", "2025-12"):
                manifest = json.loads((tmp_path / month / "manifest.json").read_text())
                for spec in BY_MONTH:
                    entry = manifest["tables"][spec.table]
                    data = (tmp_path / month / entry["file"]).read_bytes()
                    assert hashlib.sha256(data).hexdigest() == entry["sha256"]
                    rows = gzip.decompress(data).count(b"\n")
                    assert rows == entry["rows"]
                    month_rows = [r for r in before[spec.table] if month_of_row(spec, r) == month]
                    assert rows == len(month_rows)
                    assert rows > 0 or spec.table == "alarm_acks" or spec in REPORTS
            online = {str(h["started_ts"])[:7] for h in store.hands(limit=1000)}
            assert online == {"2026-01", "2026-02"}
            # the hands over the end of January are January's
            over = store.hands(epoch=SCENARIOS[2], limit=1000)
            assert over
            assert {str(h["started_ts"])[:7] for h in over} == {"2026-01"}
            assert {str(h["ended_ts"])[:7] for h in over} == {"2026-02"}
            state = store.archive_state()
            (hands_kind,) = [k for k in state["kinds"] if k["kind"] == "hands"]
            assert hands_kind == {
                "kind": "hands",
                "online_from": "2026-01",
                "archived": ["2025-11", "2025-12"],
                "restored": [],
            }
            # a month read back for an audit: every row as it was, readable as before
            restored = archive.restore("2025-11", now=now)
            assert {(e.relation, what) for e, what in restored} == {
                (spec.table, "restored") for spec in BY_MONTH
            }
            assert archive.restore("2025-11", now=now)[0][1] == "online"
            for spec in BY_MONTH:
                assert dump(store, spec.table) == sorted(
                    (r for r in before[spec.table] if month_of_row(spec, r) != "2025-12"), key=repr
                )
            nov = [h for h in hands if str(h["started_ts"]).startswith("2025-11")]
            assert nov
            assert all(h in store.hands(limit=1000) for h in nov)
            one = nov[0]
            events = store.hand_events(one["table_id"], one["epoch"], one["hand_id"])
            assert [e["seq"] for e in events] == list(range(one["first_seq"], one["last_seq"] + 1))
            assert set(store.event_keys()) < set(keys)
            # kept online for restored_days, then archived again
            assert archive.run(retention(tmp_path), now=now + 86400).kept_restored
            again = archive.run(retention(tmp_path), now=now + 8 * 86400)
            assert {(e.relation, e.month) for e in again.archived} == {
                (spec.table, "2025-11") for spec in BY_MONTH
            }
            assert "2025-11" not in Partitions(store.db).attached("events")
        finally:
            archive.close()


def test_a_damaged_archive_is_not_restored_and_a_round_cut_short_is_finished(
    pg_url: str, tmp_path: Path
) -> None:
    now = stamp("2026-03-05T00:00:00Z")
    with opened(pg_url) as store:
        store.prepare_months(stamp("2026-01-01T00:00:00Z"))
        body = at(test_store.envelope(1, rules=["R-1"]), "2026-01-10T10:00:00.000Z")
        store.ingest([event_in(body)], now=now)
        # a round stopped right after its detach: the next one archives and drops the table
        store.db.execute("ALTER TABLE events DETACH PARTITION events_p2026_01")
        archive = Archive(pg_url, tmp_path)
        try:
            done = archive.run(Retention(months={"events": 1}, directory=tmp_path), now=now)
            assert [(e.relation, e.month, e.rows) for e in done.archived] == [
                ("events", "2026-01", 1),
                ("event_rules", "2026-01", 1),
            ]
            assert not Partitions(store.db).exists("events_p2026_01")
            assert "2026-01" in Partitions(store.db).attached("hands")  # kept: no hands_months
            # a late delivery of an archived month's event waits in the default partition …
            store.ingest([event_in(body, "secure")], now=now)
            assert store.db.one(f"SELECT count(*) FROM {default_name('events')}") == (1,)
            # … a file not as archived is refused, nothing of that table restored
            path = tmp_path / "2026-01" / "events.copy.gz"
            good = path.read_bytes()
            path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
            with pytest.raises(DamagedError, match="SHA-256"):
                archive.restore("2026-01", now=now)
            assert "2026-01" not in Partitions(store.db).attached("events")
            path.write_bytes(good)
            archive.restore("2026-01", now=now)
            # the late view joined its row: one event, both views
            assert store.event_keys() == [("T1", "e1", 1)]
            row = store.db.one("SELECT public IS NOT NULL, secure IS NOT NULL FROM events")
            assert row in ((True, True), (True, False))
            assert store.db.one(f"SELECT count(*) FROM {default_name('events')}") == (0,)
            with pytest.raises(ArchiveError, match="no archive of 2025-07"):
                archive.restore("2025-07")
            with pytest.raises(ArchiveError, match="not a month"):
                archive.restore("2026-13")
        finally:
            archive.close()


# --------------------------------------------------------------------------- the migration


def test_an_unpartitioned_store_is_migrated_in_place_keeping_every_row(
    store_url: str, postgres: PostgresServer
) -> None:
    """Pit schema 11 over a store of the schema before, with a floor's rows in four months:
    every row kept, each filed under the month the ingest files it under, and each event still
    stored once."""
    now = stamp("2026-02-20T12:00:00Z")
    sqlite = store_url.startswith("sqlite")
    reference = store_url.replace("pit.sqlite", "reference.sqlite") if sqlite else None
    with opened(reference or postgres.new_database()) as fresh:
        fresh.prepare_months(stamp("2025-11-01T00:00:00Z"))
        ingest_floor(fresh, now)
        # (the reports' tables are made after it: tests/pit/test_years_reports.py)
        tables = [spec.table for spec in SCHEMA_11] + ["streams", "epochs", "tables"]
        expected = {table: dump(fresh, table) for table in tables}
    number = MIGRATIONS.index(BY_MONTH_MIGRATION) + 1
    new = {"event_rules": "ts", "alarm_acks": "ts", "hands": "month", "hand_rules": "month"}
    new["holds"] = "month"
    db = Db(store_url)
    try:
        for text in MIGRATIONS[: number - 1]:
            with db.transaction():
                db.script(text.replace("{id}", AUTO_ID[db.dialect]))
        with db.transaction():
            db.execute("INSERT INTO pit_meta (key, value) VALUES ('schema', ?)", (str(number - 1),))
            for table, rows in expected.items():
                # nor the columns of the migrations after it (12: hands.dealer)
                names = [n for n in rows[0] if n != new.get(table) and n != "dealer"]
                marks = ", ".join("?" for _ in names)
                db.many(
                    f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",
                    [tuple(row[n] for n in names) for row in rows],
                )
    finally:
        db.close()
    assert {month_of_row(BY_MONTH[0], r) for r in expected["events"]} == {
        "2025-11",
        "2025-12",
        "2026-01",
        "2026-02",
    }
    with opened(store_url) as store:
        for table, rows in expected.items():
            assert dump(store, table) == rows, table
        if not sqlite:
            for spec in SCHEMA_11:
                assert_filed_by_month(store, spec, expected[spec.table])
            indexes = {
                r[0]
                for r in store.db.all(
                    "SELECT indexname FROM pg_indexes WHERE tablename = ANY(?)",
                    ([spec.table for spec in SCHEMA_11],),
                )
            }
            assert {"events_hand", "events_type", "hands_started", "holds_resolved"} <= indexes
        # every event of the floor again: each one is stored already
        views = floor_events(STARTS)
        repeated = store.ingest(views, now=now)
        assert (dict(repeated.stored), repeated.duplicates) == ({}, len(views))


# --------------------------------------------------------------------------- config, CLI, API


@pytest.mark.parametrize(
    ("retention", "store", "problem"),
    [
        ({"events_months": 0}, None, "retention.events_months: Input should be greater"),
        ({"hands_months": "a year"}, None, "retention.hands_months: Input should be a valid"),
        ({"events_months": 12}, None, "archive_dir: where archived months go is needed"),
        ({"chips_months": 12, "archive_dir": "/a"}, None, "retention.chips_months: Extra"),
        ({"holds_months": 3, "archive_dir": "/a", "restored_days": 0}, None, "restored_days"),
        ({"alarms_months": 3, "archive_dir": "/a"}, "sqlite:///p.sqlite", "a SQLite store keeps"),
    ],
)
def test_a_retention_config_of_the_wrong_shape_is_refused_with_a_clear_error(
    retention: dict[str, Any], store: str | None, problem: str
) -> None:
    document: dict[str, Any] = {
        "retention": retention,
        "store": {"url": store or "postgresql://pit@db/pit"},
    }
    with pytest.raises(ConfigError, match=problem.replace(".", r"\.")):
        parse_pit_config(document)
    good = {"events_months": 13, "hands_months": 37, "archive_dir": "/var/lib/a"}
    config = parse_pit_config({**document, "retention": good, "store": {"url": "postgresql://x"}})
    assert config.retention.kept() == {"events": 13, "hands": 37}


def test_the_example_config_names_the_retention_keys() -> None:
    text = (Path(__file__).resolve().parents[2] / "config" / "pit.example.toml").read_text()
    for kind in KINDS:
        assert f"{kind}_months" in text
    assert "archive_dir" in text
    assert "restored_days" in text


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


def test_tablectl_pit_archive_runs_lists_and_restores(
    pg_url: str, tmp_path: Path, postgres: PostgresServer
) -> None:
    archive_dir = tmp_path / "archive"
    archive_dir.mkdir()
    config = tmp_path / "pit.toml"
    config.write_text(
        f'[store]\nurl = "{pg_url}"\n[retention]\nevents_months = 1\narchive_dir = "archive"\n'
    )
    with opened(pg_url) as store:
        store.prepare_months(stamp("2020-01-01T00:00:00Z"))
        old = at(test_store.envelope(1), "2020-01-15T10:00:00.000Z")
        store.ingest([event_in(old)], now=stamp("2020-01-15T10:00:00Z"))
    status, out, err = _cli("pit", "archive", "run", "--config", str(config))
    assert (status, err) == (0, "")
    assert "archived events 2020-01: 1 rows, 2020-01/events.copy.gz" in out
    status, out, _ = _cli("pit", "archive", "list", "--json", "--config", str(config))
    listed = [json.loads(line) for line in out.splitlines()]
    assert {(e["relation"], e["month"], e["rows"]) for e in listed} >= {("events", "2020-01", 1)}
    status, out, _ = _cli("pit", "archive", "restore", "2020-01", "--config", str(config))
    assert status == 0
    assert "restored events 2020-01: 1 rows" in out
    status, _, err = _cli("pit", "archive", "restore", "1999-01", "--config", str(config))
    assert (status, err.strip()) == (
        2,
        f"tablectl pit archive restore: no archive of 1999-01 in {archive_dir}",
    )
    empty = tmp_path / "empty.toml"
    empty.write_text(f'[store]\nurl = "{postgres.new_database()}"\n')
    status, _, err = _cli("pit", "archive", "list", "--config", str(empty))
    assert (status, err.strip()) == (
        2,
        "tablectl pit archive list: the store holds no pit schema (`tablectl pit run` makes it)",
    )
    sqlite = tmp_path / "sqlite.toml"
    sqlite.write_text('[store]\nurl = "sqlite:///pit.sqlite"\n')
    status, _, err = _cli("pit", "archive", "list", "--config", str(sqlite))
    assert status == 2
    assert "a SQLite store keeps every row" in err


async def test_the_api_and_the_hands_page_say_where_older_hands_are(
    pg_url: str, tmp_path: Path
) -> None:
    now = stamp("2026-02-20T12:00:00Z")
    with opened(pg_url) as store:
        store.prepare_months(stamp("2025-11-01T00:00:00Z"))
        ingest_floor(store, now)
        add_user(store, "ann", ["floor"], PASSWORD)
    archive = Archive(pg_url, tmp_path)
    try:
        archive.run(retention(tmp_path), now=now)
    finally:
        archive.close()
    async with serve(pg_url) as served, httpx.AsyncClient(base_url=served.url) as client:
        auth = ("ann", PASSWORD)
        state = (await client.get("/api/archive", auth=auth)).json()
        assert state["store"] == "postgresql"
        assert state["partitioned"]
        archived = {k["kind"]: k["archived"] for k in state["kinds"]}
        assert archived == {kind: ["2025-11", "2025-12"] for kind in KINDS}
        await client.post("/login", data={"username": "ann", "password": PASSWORD})
        page = (await client.get("/hands")).text
        assert "Hands of 2 months are archived and not searched here: 2025-11 to 2025-12" in page
        assert "tablectl pit archive restore MONTH" in page


async def test_a_sqlite_store_says_it_keeps_every_row(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pit.sqlite'}"
    with opened(url) as store:
        add_user(store, "ann", ["floor"], PASSWORD)
        assert store.prepare_months() == []
    async with serve(url) as served, httpx.AsyncClient(base_url=served.url) as client:
        state = (await client.get("/api/archive", auth=("ann", PASSWORD))).json()
        assert (state["store"], state["partitioned"]) == ("sqlite", False)
        assert all(k["archived"] == [] and k["online_from"] is None for k in state["kinds"])
    with pytest.raises(ArchiveError, match="a SQLite store keeps every row"):
        Archive(url, tmp_path)
