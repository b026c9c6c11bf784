"""SHF-RAND in the pit's store, on SQLite and PostgreSQL: each whole deck revealed kept once with
the shuffler that dealt it, repeated orders found, the decks stored before the audit read once,
the shufflers report from kept day tallies, and the audit's alarm raised, shown with the table's
alarms and cleared."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.cards import card_from_code
from controller.config import ConfigError
from controller.pit.batches import EventIn
from controller.pit.config import parse_pit_config
from controller.pit.reports import randomness as rnd
from controller.pit.reports import shufflers
from controller.pit.reports.audit_rule import Rule
from controller.pit.reports.params import ReportQuery, parse_query
from controller.pit.reports.periods import Calendar
from controller.pit.reports.registry import head
from controller.pit.reports.shuffler_audit import (
    ALARM,
    audit_of,
    audit_round,
    keep_days,
    store_rule,
    stored_rule,
)
from controller.pit.reports.shuffler_decks import BACKFILL_MARK, last_shuffler_decks
from controller.pit.reports.shuffler_tallies import days
from controller.pit.store import Store
from controller.pit.worker import StoreWorker
from tests.pit.test_store import event_in
from tests.waiting import until

START = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
UTC_FLOOR = Calendar(zone=UTC)


def stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def body(table: str, seq: int, ts: str, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": "tablectl.event/1",
        "table_id": table,
        "epoch": "e1",
        "seq": seq,
        "event_id": f"{table}:e1:{seq}",
        "historical": False,
        "ts": ts,
        "hand_id": None,
        "type": type_,
        "rules": [],
        "severity": "info",
        "needs_confirm": False,
        "data": data,
    }


def named(table: str, seq: int, ts: str, device: str) -> EventIn:
    data = {"device": device, "health": "online", "kind": "shuffler"}
    return event_in(body(table, seq, ts, "device.status", data))


def revealed(table: str, seq: int, ts: str, codes: bytes, stream: str = "secure") -> list[EventIn]:
    """Both views of a deck.revealed (the public one has no order)."""
    secret = {"shuffle_id": 1000 + seq, "cards": len(codes)}
    out = [event_in(body(table, seq, ts, "deck.revealed", secret))]
    if stream == "secure":  # the surveillance view: the secret fields merged in
        whole = body(table, seq, ts, "deck.revealed", {**secret, "order": []})
        whole["data"]["order"] = [card_from_code(c) for c in codes]
        whole["secure"] = True
        out.append(event_in(whole, "secure"))
    return out


def fair(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [bytes(rng.sample(range(52), 52)) for _ in range(count)]


def stuck(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [bytes([7, *rng.sample([c for c in range(52) if c != 7], 51)]) for _ in range(count)]


def deal(
    store: Store,
    table: str,
    decks: list[bytes],
    *,
    first_seq: int = 10,
    start: datetime = START,
    step: timedelta = timedelta(minutes=10),
) -> int:
    """Reveal ``decks`` on ``table``, one every ``step``; the next seq."""
    events: list[EventIn] = []
    seq = first_seq
    for i, codes in enumerate(decks):
        events += revealed(table, seq, stamp(start + i * step), codes)
        seq += 1
    for at in range(0, len(events), 400):
        store.ingest(events[at : at + 400])
    return seq


def query(since: str, until: str, tables: str | None = None) -> ReportQuery:
    return parse_query(
        since=since,
        until=until,
        tables=tables,
        group=None,
        groups=(),
        calendar=UTC_FLOOR,
        max_days=92,
        now=START + timedelta(days=30),
    )


def same_statistics(rows: list[shufflers.CheckRow], checks: tuple[rnd.Check, ...]) -> bool:
    """The report's tests are those of a tally of the same decks (its statistics are rounded
    to 6 decimals)."""
    assert [r.test for r in rows] == [c.test for c in checks]
    for row, check in zip(rows, checks, strict=True):
        assert (row.statistic is None) == (check.statistic is None)
        if check.statistic is not None:
            assert row.statistic == pytest.approx(check.statistic, abs=1e-6)
            assert row.p_value == pytest.approx(check.p_value, rel=1e-5, abs=1e-300)
    return True


def report(store: Store, since: str, until: str) -> shufflers.ShufflersReport:
    q = query(since, until)
    return shufflers.compute(store.db, q, head(shufflers.REPORT, q))


# --------------------------------------------------------------------------- the decks


def test_shf_rand_a_whole_deck_is_kept_once_with_the_shuffler_its_table_named(
    store: Store,
) -> None:
    store.ingest([named("T1", 1, stamp(START), "shuffler-a")])
    decks = fair(3, 1)
    deal(store, "T1", decks)
    again = revealed("T1", 10, stamp(START), decks[0])
    applied = store.ingest(again)  # a redelivery: both views stored already
    assert applied.duplicates == 2
    store.ingest(revealed("T1", 20, stamp(START + timedelta(hours=1)), bytes(range(51))))  # stub
    store.ingest(revealed("T1", 21, stamp(START + timedelta(hours=2)), decks[2], "public"))
    rows = store.db.all("SELECT seq, device, cards, digest, repeat_of FROM shuffler_decks")
    assert [(int(r[0]), r[1]) for r in sorted(rows)] == [
        (10, "shuffler-a"),
        (11, "shuffler-a"),
        (12, "shuffler-a"),
    ]
    first = sorted(rows)[0]
    assert first[2] == "".join(card_from_code(c) for c in decks[0])
    assert len(first[3]) == 32
    assert first[4] is None
    (count,) = store.db.all("SELECT decks FROM shufflers WHERE device = 'shuffler-a'")
    assert int(count[0]) == 3
    kept = last_shuffler_decks(store.db, "T1", "shuffler-a", 10)
    assert [d.order for d in kept] == decks


def test_shf_rand_a_deck_is_the_shuffler_named_last_before_it(store: Store) -> None:
    deal(store, "T2", fair(1, 2), first_seq=5)  # before any name: the default id
    store.ingest([named("T1", 1, stamp(START + timedelta(hours=1)), "a")])
    store.ingest([named("T1", 2, stamp(START + timedelta(hours=5)), "b")])
    store.ingest([named("T1", 3, stamp(START + timedelta(hours=6)), "a")])  # a seen again
    deal(store, "T1", fair(8, 3), start=START, step=timedelta(hours=1))
    rows = store.db.all("SELECT seq, device FROM shuffler_decks WHERE table_id = 'T1'")
    by_seq = {int(seq): str(device) for seq, device in rows}
    # hours 0 (before any: the first named), 1-4: a, 5 on: b (a's first name is its since)
    assert [by_seq[s] for s in range(10, 18)] == ["a", "a", "a", "a", "a", "b", "b", "b"]
    assert store.db.all("SELECT device FROM shuffler_decks WHERE table_id = 'T2'") == [
        ("shuffler",)
    ]


def test_shf_rand_a_repeated_order_names_the_deck_it_repeats(store: Store) -> None:
    decks = fair(4, 4)
    deal(store, "T1", decks)
    deal(store, "T2", [decks[1]], first_seq=40)  # another table's shuffler: a repeat too
    deal(store, "T1", [decks[3], decks[3]], first_seq=50, start=START + timedelta(days=1))
    rows = store.db.all(
        "SELECT table_id, seq, repeat_of FROM shuffler_decks WHERE repeat_of IS NOT NULL"
    )
    assert sorted((r[0], int(r[1]), r[2]) for r in rows) == [
        ("T1", 50, "T1:e1:13"),
        ("T1", 51, "T1:e1:13"),
        ("T2", 40, "T1:e1:11"),
    ]


def test_shf_rand_the_decks_stored_before_the_audit_are_read_once(store: Store) -> None:
    store.ingest([named("T1", 1, stamp(START), "a")])
    decks = fair(5, 5)
    deal(store, "T1", decks)
    # as a store of pit schema 12 had them: the events, no decks
    with store.db.transaction():
        store.db.execute("DELETE FROM shuffler_decks")
        store.db.execute("DELETE FROM shuffler_hours")
        store.db.execute("DELETE FROM shufflers")
    # (a store migrated to pit schema 13 has the mark until the audit's first round)
    assert store.db.one("SELECT value FROM pit_meta WHERE key = ?", (BACKFILL_MARK,)) == ("to do",)
    assert store.backfill_shuffler_decks() == 5
    assert [d.order for d in last_shuffler_decks(store.db, "T1", "a", 10)] == decks
    assert store.db.one("SELECT 1 FROM pit_meta WHERE key = ?", (BACKFILL_MARK,)) is None
    assert store.backfill_shuffler_decks() == 0  # the mark is gone: nothing read again
    (count,) = store.db.all("SELECT decks FROM shufflers")
    assert int(count[0]) == 5


# --------------------------------------------------------------------------- the report


def test_shf_rand_the_report_fails_a_stuck_shuffler_and_passes_a_fair_one(store: Store) -> None:
    deal(store, "T1", fair(300, 6))  # 10 minutes apart: 50 hours, three days
    deal(store, "T2", stuck(300, 7))
    found = report(store, "2026-03-01", "2026-03-05")
    by_table = {row.table_id: row for row in found.shufflers}
    assert by_table["T1"].result == "passes"
    assert by_table["T2"].result == "fails"
    assert by_table["T1"].decks == by_table["T2"].decks == 300
    assert by_table["T2"].positions_p is not None
    assert by_table["T2"].positions_p < 1e-50
    t2_checks = {c.test: c for c in found.checks if c.table_id == "T2"}
    assert t2_checks["positions"].result == "fails"
    assert t2_checks["positions"].df == 51 * 51
    # the same tests as a tally of the decks in order
    direct = rnd.checks(rnd.tally(stuck(300, 7)))
    assert [t2_checks[c.test].p_value for c in direct] == pytest.approx(
        [c.p_value for c in direct], rel=1e-9, abs=1e-300
    )
    # the stuck one's heat map first: the 2c's … no, card 7 (9c) always on top
    assert found.heat[0].table_id == "T2"
    assert found.heat[0].counts[7][0] == 300
    assert found.alpha == Rule().alpha
    assert found.tests == 3


def test_shf_rand_too_few_decks_are_said_not_enough_yet(store: Store) -> None:
    deal(store, "T1", fair(30, 8))
    found = report(store, "2026-03-01", "2026-03-05")
    (row,) = found.shufflers
    assert row.result == "not enough decks yet"
    assert row.positions_p is None
    positions = next(c for c in found.checks if c.test == "positions")
    assert positions.result == "not enough decks yet (30 of 260)"


def test_shf_rand_a_report_reads_kept_day_tallies_and_sees_a_late_deck(store: Store) -> None:
    deal(store, "T1", fair(300, 9))
    first = report(store, "2026-03-01", "2026-03-05")
    assert first.read == 300  # every day tallied once, and kept
    again = report(store, "2026-03-01", "2026-03-05")
    assert again.read == 0
    assert again.checks == first.checks
    # a deck of the first day that came late (a repair), and one more of the last day
    late = fair(2, 10)
    store.ingest(revealed("T1", 900, stamp(START + timedelta(minutes=5)), late[0]))
    store.ingest(revealed("T1", 901, stamp(START + timedelta(hours=60)), late[1]))
    later = report(store, "2026-03-01", "2026-03-05")
    assert later.shufflers[0].decks == 302
    assert 0 < later.read < 302  # the first day again, the last one extended
    decks = [d.order for d in last_shuffler_decks(store.db, "T1", "shuffler", 1000)]
    assert same_statistics(later.checks, rnd.checks(rnd.tally(decks)))
    assert report(store, "2026-03-01", "2026-03-05").read == 0


def test_shf_rand_a_span_cut_in_a_day_is_tallied_from_its_decks(store: Store) -> None:
    deal(store, "T1", fair(300, 11))
    cut = report(store, "2026-03-01T12:00:00Z", "2026-03-03T12:00:00Z")
    inside = [
        d.order
        for d in last_shuffler_decks(store.db, "T1", "shuffler", 1000)
        if "2026-03-01T12" <= d.key.ts < "2026-03-03T12"
    ]
    assert cut.shufflers[0].decks == len(inside)
    assert same_statistics(cut.checks, rnd.checks(rnd.tally(inside)))
    spans = days(
        datetime(2026, 3, 1, 12, tzinfo=UTC), datetime(2026, 3, 3, 12, tzinfo=UTC), UTC_FLOOR
    )
    assert [d.whole for d in spans] == [False, True, False]


def test_the_report_shows_the_rule_the_audit_runs_with(store: Store) -> None:
    assert stored_rule(store.db) == Rule()
    store_rule(store.db, Rule(1e-3, 500, 25))
    assert stored_rule(store.db) == Rule(1e-3, 500, 25)
    deal(store, "T1", fair(10, 12))
    found = report(store, "2026-03-01", "2026-03-05")
    assert (found.alpha, found.window) == (1e-3, 500)


# --------------------------------------------------------------------------- the audit


def test_shf_rand_the_audit_raises_the_alarm_on_the_table_and_clears_it(store: Store) -> None:
    rule = Rule(alpha=1e-5, window=200, every=40)
    seq = deal(store, "T1", stuck(200, 13))
    deal(store, "T2", fair(200, 14))
    assert audit_round(store.db, rule, 1000.0) == 1
    tables = {t["table_id"]: t for t in store.tables()}
    (alarm,) = tables["T1"]["alarms"]
    assert alarm["alarm"] == ALARM
    assert "shuffler T1/shuffler: position changes p = " in alarm["detail"]
    assert "over its last 200 decks" in alarm["detail"]
    assert alarm["since"] == "1970-01-01T00:16:40Z"
    assert tables["T2"]["alarms"] == []
    kept = store.db.one("SELECT result FROM shufflers WHERE table_id = 'T1'")
    assert kept is not None
    result = json.loads(kept[0])
    assert result["decks"] == 200
    assert [c["test"] for c in result["checks"]] == ["positions", "changes", "suits"]
    assert result["checks"][0]["p"] is None  # 200 decks: not enough for card × position
    # not due again until 40 more decks: nothing changes
    assert audit_round(store.db, rule, 1060.0) == 0
    # 40 more of the same: checked again, still up, since it was first raised
    seq = deal(store, "T1", stuck(40, 18), first_seq=seq, start=START + timedelta(days=1))
    assert audit_round(store.db, rule, 1100.0) == 0
    (still,) = store.tables("T1")[0]["alarms"]
    assert still["since"] == "1970-01-01T00:16:40Z"
    assert store.db.one("SELECT checked FROM shufflers WHERE table_id = 'T1'") == (240,)
    # the shuffler repaired: 200 fair decks push the evidence out of the window
    deal(store, "T1", fair(200, 15), first_seq=seq, start=START + timedelta(days=2))
    assert audit_round(store.db, rule, 2000.0) == 1
    assert store.tables("T1")[0]["alarms"] == []
    row = store.db.one("SELECT alarm, alarm_since, checked FROM shufflers WHERE table_id = 'T1'")
    assert row == (None, None, 440)


def test_shf_rand_a_repeated_order_raises_the_alarm_whatever_the_p_values(store: Store) -> None:
    decks = fair(60, 16)
    decks.append(decks[0])
    deal(store, "T1", decks)
    assert audit_round(store.db, Rule(alpha=1e-5, window=100, every=50), 1.0) == 1
    (alarm,) = store.tables("T1")[0]["alarms"]
    assert "1 deck order(s) repeated" in alarm["detail"]


def test_the_audit_keeps_the_last_two_floor_days_for_the_report(store: Store) -> None:
    deal(store, "T1", fair(200, 17), start=START, step=timedelta(minutes=10))
    now = (START + timedelta(days=1, hours=12)).timestamp()
    assert keep_days(store.db, UTC_FLOOR, now) == 200 - 0  # both days read once
    assert keep_days(store.db, UTC_FLOOR, now) == 0
    assert report(store, "2026-03-02", "2026-03-03").read == 0


async def test_shf_rand_the_pits_audit_reads_the_old_decks_keeps_its_rule_and_raises_the_alarm(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'pit.sqlite'}"
    store = Store(url)
    store.migrate()
    deal(store, "T1", stuck(200, 19))
    with store.db.transaction():  # as if stored before pit schema 13: to be read again
        store.db.execute("DELETE FROM shuffler_decks")
        store.db.execute("DELETE FROM shuffler_hours")
        store.db.execute("DELETE FROM shufflers")
    config = parse_pit_config(
        {"store": {"url": url}, "reports": {"alpha": 1e-4, "window": 200, "every": 50}}
    )
    worker = StoreWorker(url, "repair")
    await worker.open()
    audit = audit_of(config, worker)
    assert audit.rule == Rule(1e-4, 200, 50)
    audit.interval = 0.05
    running = asyncio.create_task(audit.run())
    try:
        await until(lambda: store.tables("T1")[0]["alarms"], 30.0, "the audit's alarm")
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await worker.close()
    (alarm,) = store.tables("T1")[0]["alarms"]
    assert alarm["alarm"] == ALARM
    assert store.db.one("SELECT 1 FROM pit_meta WHERE key = ?", (BACKFILL_MARK,)) is None
    assert stored_rule(store.db) == Rule(1e-4, 200, 50)
    store.close()


@pytest.mark.parametrize(
    ("reports", "named"),
    [
        ({"alpha": 0}, "reports.alpha"),
        ({"alpha": 0.5}, "reports.alpha"),
        ({"window": 40}, "reports.window"),
        ({"every": 0}, "reports.every"),
    ],
)
def test_an_audit_setting_that_cannot_be_is_refused_naming_it(
    reports: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        parse_pit_config({"reports": reports})
