"""The store for years: a year of a floor's projections, and the console's queries on this month.

A throwaway PostgreSQL (the tests' cluster: ``tests/postgres.py``) gets the pit's schema (pit
schema 11: what grows with play partitioned by month), then rows generated for a floor of
``--tables`` tables and copied in with ``COPY … FROM STDIN`` (nothing is played): each table a
hand every few minutes (``--hands-per-day``), each hand ``--events-per-hand`` events, its rule
IDs, a ruling, hold and alarm now and then (the alarms of past months acknowledged), each month
its own epoch. First this month alone (all of it: the queries read the same rows in both
passes); the console's main queries are timed (each ``--repeat`` times, on a connection of
their own, as the API's reader runs them); then the eleven months before it are added and the
same queries timed again. Last, one month is archived (detached, written to a gzip'd COPY file,
dropped) and restored, timed; with ``--migration``, pit schema 11 over a year of the floor stored
unpartitioned (the schema before it), timed.

    .venv/bin/python benchmarks/pit_years.py [--tables 50] [--hands-per-day 48]
        [--events-per-hand 6] [--repeat 30] [--migration] [--out FILE]

A real table deals ~30 hands an hour with ~55 events each; the defaults are a fraction of that
(say so when quoting the figures), so that a year fills in minutes on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.pit.archive import Archive, Retention  # noqa: E402
from controller.pit.partitions import (  # noqa: E402
    BY_MONTH,
    Partitions,
    add_months,
    month_start,
    months,
)
from controller.pit.store import Store  # noqa: E402

#: Seconds between two events of a hand.
EVENT_GAP = 8


def _line(values: tuple[Any, ...]) -> str:
    """A row in COPY's text format (the generated values hold no tab, newline or backslash)."""
    return "\t".join("\\N" if v is None else str(v) for v in values) + "\n"


def _ts(stamp: float) -> str:
    moment = datetime.fromtimestamp(stamp, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Floor:
    """The generated rows of a floor, month by month."""

    def __init__(self, tables: int, hands_per_day: int, events_per_hand: int) -> None:
        self.tables = [f"T{n:02d}" for n in range(1, tables + 1)]
        self.hands_per_day = hands_per_day
        self.events_per_hand = events_per_hand

    def epoch(self, table: str, month: str) -> str:
        return f"{table}-{month}"

    def month(self, month: str, *, now: bool = False) -> dict[str, list[str]]:
        """Every row of ``month`` by table (``now``: the month the floor plays in, with a few
        holds still open)."""
        out: dict[str, list[str]] = {
            name: []
            for name in ("events", "event_rules", "hands", "hand_rules", "rulings", "holds")
        }
        out["alarms"] = []
        out["alarm_acks"] = []
        begin = month_start(month)
        end = month_start(add_months(month, 1))
        days = int((end - begin) // 86400) + 1
        spacing = 8 * 3600 / self.hands_per_day  # dealt over eight hours of each day
        seats = json.dumps([1, 2, 3, 4, 5, 6])
        stacks = json.dumps({str(s): 1000 + 10 * s for s in range(1, 7)})
        for t, table in enumerate(self.tables):
            epoch = self.epoch(table, month)
            seq = 0
            number = 0
            for day in range(days):
                opens = begin + day * 86400 + 16 * 3600 + t * 7  # 16:00, the tables a little apart
                for h in range(self.hands_per_day):
                    started = opens + h * spacing
                    if started + self.events_per_hand * EVENT_GAP >= end:
                        break
                    number += 1
                    hand = f"{table}-{number:06d}"
                    first = seq + 1
                    for k in range(self.events_per_hand):
                        seq += 1
                        ts = _ts(started + k * EVENT_GAP)
                        kind = (
                            "hand.started"
                            if k == 0
                            else "hand.completed"
                            if k == self.events_per_hand - 1
                            else "betting.action"
                        )
                        body = {
                            "schema": "tablectl.event/1",
                            "table_id": table,
                            "epoch": epoch,
                            "seq": seq,
                            "event_id": f"{table}:{epoch}:{seq}",
                            "ts": ts,
                            "hand_id": hand,
                            "type": kind,
                            "rules": ["BET-ORDER"] if kind == "betting.action" else [],
                            "severity": "info",
                            "data": {"seat": 1 + k % 6, "action": "call", "amount": 20},
                        }
                        out["events"].append(
                            _line(
                                (
                                    table,
                                    epoch,
                                    seq,
                                    ts,
                                    hand,
                                    kind,
                                    "info",
                                    json.dumps(body, separators=(",", ":")),
                                    None,
                                    "live",
                                    started,
                                    1,
                                )
                            )
                        )
                        if kind == "betting.action" and k == 1:
                            out["event_rules"].append(_line((table, epoch, seq, "BET-ORDER", ts)))
                    begun, ended = (
                        _ts(started),
                        _ts(started + (self.events_per_hand - 1) * EVENT_GAP),
                    )
                    out["hands"].append(
                        _line(
                            (
                                table,
                                epoch,
                                hand,
                                begun,
                                ended,
                                "completed",
                                1 + number % 6,
                                seats,
                                "[5,10]",
                                0,
                                stacks,
                                stacks,
                                '{"1":120}',
                                120,
                                5,
                                first,
                                seq,
                                month,
                            )
                        )
                    )
                    out["hand_rules"].append(_line((table, epoch, hand, "BET-ORDER", month)))
                    if number % 20 == 0:
                        out["hand_rules"].append(_line((table, epoch, hand, "BURN-MISS", month)))
                        out["rulings"].append(
                            _line(
                                (
                                    table,
                                    epoch,
                                    first + 1,
                                    hand,
                                    _ts(started + EVENT_GAP),
                                    "hand.resume",
                                    "BURN-MISS",
                                    f"h{number}",
                                    "confirm",
                                    "ann",
                                    "floor",
                                )
                            )
                        )
                        resolved = (
                            (_ts(started + EVENT_GAP), first + 1, "confirm", "confirm", "ann")
                            if number % 400 or not now
                            else (None, None, None, None, None)  # a few open this month
                        )
                        out["holds"].append(
                            _line(
                                (
                                    table,
                                    epoch,
                                    f"h{number}",
                                    hand,
                                    "BURN-MISS",
                                    "no burn",
                                    "confirm",
                                    None,
                                    "{}",
                                    begun,
                                    first,
                                    *resolved,
                                    "floor",
                                    month,
                                )
                            )
                        )
                    if number % 100 == 0:
                        out["alarms"].append(
                            _line(
                                (
                                    table,
                                    epoch,
                                    first,
                                    begun,
                                    hand,
                                    "integrity.alarm",
                                    "critical",
                                    "CARD-FOREIGN",
                                    "a card of another deck",
                                )
                            )
                        )
                        if not now:  # the floor acknowledged the alarms of the months before
                            out["alarm_acks"].append(
                                _line((table, epoch, first, "ann", '["floor"]', started, begun))
                            )
        return out


#: The columns each table's generated rows fill, in their order.
COLUMNS = {
    "events": "table_id, epoch, seq, ts, hand_id, type, severity, public, secure, source, "
    "committed_at, fresh",
    "event_rules": "table_id, epoch, seq, rule, ts",
    "hands": "table_id, epoch, hand_id, started_ts, ended_ts, outcome, button, seats, blinds, "
    "ante, stacks_before, stacks_after, payouts, pot, rake, first_seq, last_seq, month",
    "hand_rules": "table_id, epoch, hand_id, rule, month",
    "rulings": "table_id, epoch, seq, hand_id, ts, type, rule, hold, decision, person, role",
    "holds": "table_id, epoch, hold, hand_id, rule, reason, ruling, seat, evidence, raised_ts, "
    "raised_seq, resolved_ts, resolved_seq, decision, resolved_by, person, role, month",
    "alarms": "table_id, epoch, seq, ts, hand_id, type, severity, rule, reason",
    "alarm_acks": "table_id, epoch, seq, person, roles, acked_at, ts",
}


def _chunks(lines: list[str], size: int = 4000) -> Iterator[bytes]:
    for i in range(0, len(lines), size):
        yield "".join(lines[i : i + size]).encode()


#: The column each table gained with pit schema 11 (the last of its generated rows).
FILED = {
    "event_rules": "ts",
    "hands": "month",
    "hand_rules": "month",
    "holds": "month",
    "alarm_acks": "ts",
}


def fill(
    store: Store, floor: Floor, month: str, *, now: bool = False, before: bool = False
) -> tuple[int, float]:
    """One month of the floor copied in: rows, seconds (``before``: into a store of the schema
    before pit schema 11, without the columns it added)."""
    rows = floor.month(month, now=now)
    began = time.perf_counter()
    with store.db.transaction():
        for table, generated in rows.items():
            columns, lines = COLUMNS[table], generated
            if before and table in FILED:
                columns = columns.removesuffix(f", {FILED[table]}")
                lines = [line.rsplit("\t", 1)[0] + "\n" for line in generated]
            store.db.copy_in(f"COPY {table} ({columns}) FROM STDIN", _chunks(lines))
    return sum(len(v) for v in rows.values()), time.perf_counter() - began


def migration(url: str, floor: Floor, this: str) -> list[str]:
    """A year of the floor in a store of the schema before pit schema 11 (nothing partitioned),
    then migrated in place, timed."""
    from controller.pit.schema import AUTO_ID, BY_MONTH, MIGRATIONS  # noqa: PLC0415

    store = Store(url)
    try:
        number = MIGRATIONS.index(BY_MONTH) + 1
        for text in MIGRATIONS[: number - 1]:
            with store.db.transaction():
                store.db.script(text.replace("{id}", AUTO_ID["postgresql"]))
        store.db.execute(
            "INSERT INTO pit_meta (key, value) VALUES ('schema', ?)", (str(number - 1),)
        )
        total = 0
        for back in range(11, -1, -1):
            total += fill(store, floor, add_months(this, -back), now=back == 0, before=True)[0]
        store.db.execute("ANALYZE")
        began = time.perf_counter()
        store.migrate()
        took = time.perf_counter() - began
    finally:
        store.close()
    return [
        "",
        f"pit schema 11 over a store of the schema before, a year of this floor ({total:,} rows, "
        f"nothing partitioned): migrated in place in {took:.1f} s ({total / took:,.0f} rows/s)",
    ]


def current(store: Store, floor: Floor, month: str) -> None:
    """The tables' rows, as the pit keeps them: each on this month's epoch."""
    with store.db.transaction():
        for table in floor.tables:
            epoch = floor.epoch(table, month)
            last = store.db.one(
                "SELECT max(seq) FROM events WHERE table_id = ? AND epoch = ?", (table, epoch)
            )
            top = int(last[0]) if last and last[0] is not None else 0
            store.db.execute(
                "INSERT INTO tables (table_id, online, epoch, updated_at) VALUES (?, 1, ?, ?) "
                "ON CONFLICT (table_id) DO UPDATE SET epoch = excluded.epoch",
                (table, epoch, time.time()),
            )
            store.db.execute(
                "INSERT INTO streams (table_id, epoch, stream, contiguous, max_seq) "
                "VALUES (?, ?, 'public', ?, ?) ON CONFLICT DO NOTHING",
                (table, epoch, top, top),
            )


def queries(store: Store, floor: Floor, month: str) -> dict[str, Callable[[], Any]]:
    """The console's main reads (what its pages and the API ask), on this month's data."""
    table = floor.tables[len(floor.tables) // 2]
    epoch = floor.epoch(table, month)
    hand = store.hands(table=table, limit=1)[0]
    since = f"{month}-01T00:00:00Z"
    return {
        "floor: tables": store.tables,
        "floor: open holds": lambda: store.holds(open_only=True),
        "floor: alarms unacknowledged": lambda: store.alarms(limit=1000, unacknowledged=True),
        "holds: resolved, last 10": lambda: store.resolved_holds(10),
        "table: its last 60 events": lambda: store.recent_events(table, epoch, 60),
        "hands: newest 200": lambda: store.hands(limit=200),
        "hands: a table's newest 200": lambda: store.hands(table=table, limit=200),
        "hands: by rule, newest 200": lambda: store.hands(rule="BURN-MISS", limit=200),
        "hands: since this month began": lambda: store.hands(since=since, limit=200),
        "hand: its row": lambda: store.hands_named(hand["hand_id"], table=table, epoch=epoch),
        "hand: its events": lambda: store.hand_events(
            table, epoch, hand["hand_id"], "public", hand["started_ts"]
        ),
        "alarms: newest 200": lambda: store.alarms(limit=200),
    }


def timed(
    calls: dict[str, tuple[Callable[[], Any], Callable[[], Any]]], repeat: int
) -> dict[str, tuple[list[float], list[float]]]:
    """The wall seconds of each pair of calls (one month's store, the year's), taken in turn so
    that the machine's other work weighs on both alike; each warmed first (psycopg prepares a
    statement at its fifth run)."""
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in calls}
    for one, year in calls.values():
        for _ in range(6):
            one()
            year()
    for _ in range(repeat):
        for name, pair in calls.items():
            for call, walls in zip(pair, out[name], strict=True):
                began = time.perf_counter()
                call()
                walls.append(time.perf_counter() - began)
    return out


def quantiles(walls: list[float]) -> tuple[float, float]:
    """p50 and p95, ms."""
    ordered = sorted(walls)
    return (
        statistics.median(ordered) * 1e3,
        ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1e3,
    )


def sizes(store: Store) -> dict[str, int]:
    """Bytes of each partitioned table, its indexes with it."""
    return {
        str(name): int(size)
        for name, size in store.db.all(
            "SELECT p.relname, sum(pg_total_relation_size(c.oid)) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent "
            "WHERE c.relkind = 'r' GROUP BY p.relname ORDER BY 1"
        )
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--hands-per-day", type=int, default=48)
    parser.add_argument("--events-per-hand", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--migration",
        action="store_true",
        help="also time pit schema 11 over a year of the floor stored unpartitioned",
    )
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    from tests.postgres import PostgresServer  # noqa: PLC0415

    now = time.time()
    this = datetime.fromtimestamp(now, UTC).strftime("%Y-%m")
    floor = Floor(args.tables, args.hands_per_day, args.events_per_hand)
    report = [
        f"pit_years: {args.tables} tables, {args.hands_per_day} hands a table a day, "
        f"{args.events_per_hand} events a hand; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs (load {os.getloadavg()[0]:.1f}); PostgreSQL: the tests' cluster "
        "(fsync off)",
        f"(a real table deals ~30 hands an hour of ~55 events: this floor is "
        f"{args.hands_per_day * args.events_per_hand / (30 * 10 * 55):.0%} of a 10-hour day's "
        "events, to fill on a shared machine)",
        "",
    ]
    server = PostgresServer()
    server.start()
    try:
        # two stores side by side: this month alone, and the same month after eleven others
        url_one, url = server.new_database(), server.new_database()
        one, writer = Store(url_one), Store(url)
        for store in (one, writer):
            store.migrate()
            Partitions(store.db).ensure(months(add_months(this, -11), this))
            rows, seconds = fill(store, floor, this, now=True)
            current(store, floor, this)
        report.append(f"this month ({this}, all of it): {rows:,} rows copied in {seconds:.1f} s")
        total, spent = 0, 0.0
        for back in range(11, 0, -1):
            rows, seconds = fill(writer, floor, add_months(this, -back))
            total, spent = total + rows, spent + seconds
        for store in (one, writer):
            store.db.execute("ANALYZE")
        report.append(
            f"the 11 months before: {total:,} rows copied in {spent:.1f} s "
            f"({total / spent:,.0f} rows/s)"
        )
        counted = {
            spec.table: int(writer.db.one(f"SELECT count(*) FROM {spec.table}")[0])  # type: ignore[index]
            for spec in BY_MONTH
        }
        report.append("a year: " + ", ".join(f"{name} {n:,}" for name, n in counted.items()))
        size = sizes(writer)
        report.append(
            "on disk with indexes: "
            + ", ".join(f"{name} {b / 2**20:,.0f} MiB" for name, b in size.items())
            + f" (all {sum(size.values()) / 2**30:.2f} GiB)"
        )
        one.close()
        readers = (Store(url_one), Store(url))  # as the API's reader: a connection of its own
        pairs = dict(
            zip(
                queries(readers[0], floor, this),
                zip(
                    queries(readers[0], floor, this).values(),
                    queries(readers[1], floor, this).values(),
                    strict=True,
                ),
                strict=True,
            )
        )
        walls = timed(pairs, args.repeat)
        report += [
            "",
            f"the console's queries on this month, {args.repeat} times each, the two stores in "
            "turn (ms)",
            "",
            "| query | 1 month p50 | p95 | 12 months p50 | p95 |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, (alone, after) in walls.items():
            (a50, a95), (b50, b95) = quantiles(alone), quantiles(after)
            report.append(f"| {name} | {a50:.2f} | {a95:.2f} | {b50:.2f} | {b95:.2f} |")
        for reader in readers:
            reader.close()
        with tempfile.TemporaryDirectory() as scratch:
            archive = Archive(url, Path(scratch))
            oldest = add_months(this, -11)
            try:
                began = time.perf_counter()
                kept = dict.fromkeys(("events", "hands", "rulings", "holds", "alarms"), 10)
                done = archive.run(Retention(months=kept, directory=Path(scratch)), now=now)
                archived = time.perf_counter() - began
                began = time.perf_counter()
                archive.restore(oldest, now=now)
                restored = time.perf_counter() - began
            finally:
                archive.close()
            moved = sum(e.rows for e in done.archived)
            written = sum(e.bytes for e in done.archived)
            report += [
                "",
                f"archive {oldest} (every table, {moved:,} rows): {archived:.1f} s, "
                f"{written / 2**20:.1f} MiB gzip'd; restore: {restored:.1f} s",
            ]
        writer.close()
        if args.migration:
            report += migration(server.new_database(), floor, this)
    finally:
        server.stop()
    report.append(f"(load average at the end: {os.getloadavg()[0]:.1f})")
    text = "\n".join(report)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
