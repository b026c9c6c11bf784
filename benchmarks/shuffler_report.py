"""SHF-RAND in the store: what the shufflers report and the audit cost on a floor's month of
revealed decks, with and without the kept tallies of each shuffler's floor days, on SQLite and
PostgreSQL (the tests' cluster, fsync off).

The decks are made, not played: ``--tables`` shufflers (one a table) each reveal
``--decks-per-day`` uniformly shuffled decks a day, spread over a 10-hour day, for ``--days``
days, written straight into ``shuffler_decks`` and ``shufflers`` (the ingest's rows; then counted
by hour into ``shuffler_hours`` as pit schema 17 counts a store's decks). Timed, each
the median of ``--repeat`` (CPU and wall):

* the ingest's part: the statement a batch with reveals costs (``Store._shuffler_decks`` over 500
  events with 9 reveals, ~one a hand of 55 events), in its transaction;
* one table's report over the month and the floor's over a week and over the month: the first
  time (every day tallied from its decks and kept) and again (from the kept tallies);
* the audit: one check of a shuffler (its last 1,000 decks, the three tests) and keeping the last
  two floor days when nothing changed;
* the rows' bytes on disk.

    .venv/bin/python benchmarks/shuffler_report.py [--tables 100] [--days 30] \
        [--stores sqlite postgresql]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from controller.cards import card_from_code
from controller.pit.batches import EventIn
from controller.pit.reports import shufflers
from controller.pit.reports.audit_rule import Rule
from controller.pit.reports.params import parse_query
from controller.pit.reports.periods import Calendar
from controller.pit.reports.registry import head
from controller.pit.reports.shuffler_audit import check_shuffler, keep_days
from controller.pit.reports.shuffler_decks import digest, encode_order
from controller.pit.reports.shuffler_hours import BACKFILL
from controller.pit.store import Store

START = datetime(2026, 5, 1, tzinfo=UTC)
FLOOR = Calendar(zone=UTC)


def fill(store: Store, tables: int, days: int, per_day: int, seed: int) -> int:
    """The floor's decks, written as the ingest writes them; the decks."""
    rng = random.Random(seed)
    db = store.db
    columns = (
        ("table_id", "text"),
        ("epoch", "text"),
        ("seq", "bigint"),
        ("ts", "text"),
        ("device", "text"),
        ("shuffle_id", "bigint"),
        ("cards", "text"),
        ("digest", "text"),
        ("repeat_of", "text"),
    )
    step = timedelta(hours=10) / per_day
    total = 0
    for t in range(tables):
        table = f"T{t:03d}"
        rows: list[tuple[Any, ...]] = []
        for day in range(days):
            opened = START + timedelta(days=day, hours=12)
            for i in range(per_day):
                codes = bytes(rng.sample(range(52), 52))
                ts = (opened + i * step).isoformat(timespec="milliseconds")
                seq = day * per_day + i + 1
                rows.append(
                    (table, "e1", seq, ts.replace("+00:00", "Z"), "shuffler", seq,
                     encode_order(codes), digest(codes), None)
                )  # fmt: skip
        with db.transaction():
            for at in range(0, len(rows), 5000):
                db.insert("shuffler_decks", columns, rows[at : at + 5000])
            db.execute(
                "INSERT INTO shufflers (table_id, device, decks, last_ts) VALUES (?, ?, ?, ?)",
                (table, "shuffler", len(rows), rows[-1][3]),
            )
        total += len(rows)
    with db.transaction():  # their count by hour, as the ingest keeps it (pit schema 17)
        db.execute(BACKFILL)
    return total


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Median CPU and wall seconds of ``fn`` over ``repeat`` runs, and its last result."""
    cpu, wall, result = [], [], None
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        result = fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu), statistics.median(wall), result


def report_of(
    store: Store, since: str, until: str, tables: str | None
) -> shufflers.ShufflersReport:
    query = parse_query(
        since=since, until=until, tables=tables, group=None, groups=(), calendar=FLOOR,
        max_days=92, now=START + timedelta(days=40),
    )  # fmt: skip
    return shufflers.compute(store.db, query, head(shufflers.REPORT, query))


def ingest_events(seed: int) -> list[EventIn]:
    """500 events of a busy batch: 9 reveals (secure views) among betting actions."""
    import json  # noqa: PLC0415

    from controller.pit.ingest import Route, parse_event  # noqa: PLC0415

    rng = random.Random(seed)
    out = []
    for seq in range(1, 501):
        body: dict[str, Any] = {
            "schema": "tablectl.event/1", "table_id": f"X{seq % 20}", "epoch": "e9", "seq": seq,
            "event_id": f"X{seq % 20}:e9:{seq}", "historical": False,
            "ts": f"2026-06-01T10:00:{seq % 60:02d}.000Z", "hand_id": None, "rules": [],
            "severity": "info", "needs_confirm": False,
        }  # fmt: skip
        if seq % 55 == 0:
            order = [card_from_code(c) for c in rng.sample(range(52), 52)]
            body |= {"type": "deck.revealed", "secure": True,
                     "data": {"shuffle_id": seq, "cards": 52, "order": order}}  # fmt: skip
            stream = "secure"
        else:
            check = {"seat": 1, "action": "check", "stack": 100, "all_in": False}
            body |= {"type": "betting.action", "data": check}
            stream = "public"
        route = Route("event", body["table_id"], stream, "live")  # type: ignore[arg-type]
        out.append(parse_event(json.dumps(body).encode(), route))
    return out


def size(store: Store) -> str:
    db = store.db
    names = ("shuffler_decks", "shufflers", "shuffler_hours", "shuffler_rollups")
    if db.dialect == "postgresql":
        sql = "SELECT pg_total_relation_size(?::regclass), ?"
    else:  # the table and its indexes
        sql = (
            "SELECT sum(d.pgsize), ? FROM dbstat d JOIN sqlite_master m ON m.name = d.name "
            "WHERE m.tbl_name = ?"
        )
    parts = []
    for n in names:
        found = db.one(sql, (n, n))
        parts.append((n, int(found[0] or 0) if found else 0))
    return ", ".join(f"{n} {b / 2**20:.1f} MiB" for n, b in parts)


def measure(store: Store, args: argparse.Namespace) -> list[str]:
    started = time.perf_counter()
    decks = fill(store, args.tables, args.days, args.decks_per_day, args.seed)
    lines = [f"{decks:,} decks written in {time.perf_counter() - started:.0f} s"]
    events = ingest_events(args.seed)

    def ingest_part() -> None:
        with store.db.transaction():
            store._shuffler_decks(events)  # the ingest's own step, timed alone
            raise _RollbackError

    cpu, wall, _ = timed(lambda: _undone(ingest_part), args.repeat)
    lines.append(row("the ingest's part of a batch of 500 events, 9 reveals", cpu, wall))
    last_day = (START + timedelta(days=args.days - 1)).date().isoformat()
    week = (START + timedelta(days=args.days - 7)).date().isoformat()
    first = START.date().isoformat()
    cases = [
        ("one table, the month, first time", first, last_day, "T000", 1),
        ("one table, the month, again", first, last_day, "T000", args.repeat),
        ("the floor, a week, first time", week, last_day, None, 1),
        ("the floor, a week, again", week, last_day, None, args.repeat),
        ("the floor, the month, first time (the week kept)", first, last_day, None, 1),
        ("the floor, the month, again", first, last_day, None, args.repeat),
    ]
    for name, since, until, tables, repeat in cases:

        def one(s: str = since, u: str = until, t: str | None = tables) -> int:
            return report_of(store, s, u, t).read

        cpu, wall, read = timed(one, repeat)
        lines.append(row(f"report: {name}", cpu, wall, f"{read:,} decks read"))
    rule = Rule()
    cpu, wall, _ = timed(
        lambda: check_shuffler(store.db, "T000", "shuffler", rule, 0.0), args.repeat
    )
    lines.append(row(f"audit: one shuffler's check (its last {rule.window} decks)", cpu, wall))
    now = (START + timedelta(days=args.days - 1, hours=20)).timestamp()
    keep_days(store.db, FLOOR, now)
    cpu, wall, read = timed(lambda: keep_days(store.db, FLOOR, now), args.repeat)
    lines.append(row("audit: the last two days kept, nothing new", cpu, wall, f"{read} read"))
    lines.append("")
    lines.append(f"on disk: {size(store)}")
    return lines


def row(what: str, cpu: float, wall: float, note: str = "") -> str:
    """A line of the table: seconds, or milliseconds below one."""

    def shown(seconds: float) -> str:
        return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"

    return f"| {what} | {shown(cpu)} | {shown(wall)} | {note} |"


class _RollbackError(Exception):
    """Ends a timed transaction without its writes."""


def _undone(fn: Callable[[], None]) -> None:
    with contextlib.suppress(_RollbackError):
        fn()


def main(args: argparse.Namespace) -> None:
    print(
        f"shuffler_report: {args.tables} shufflers × {args.days} days × {args.decks_per_day} "
        f"decks; Python {platform.python_version()}, {os.cpu_count()} CPUs (load "
        f"{os.getloadavg()[0]:.1f}); median of {args.repeat} where repeated"
    )
    for kind in args.stores:
        print()
        print(f"## {kind}")
        print()
        if kind == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                store = Store(f"sqlite:///{Path(tmp) / 'pit.sqlite'}")
                store.migrate()
                lines = measure(store, args)
                store.close()
        else:
            from tests.postgres import PostgresServer  # noqa: PLC0415

            server = PostgresServer()
            server.start()
            try:
                store = Store(server.new_database())
                store.migrate()
                lines = measure(store, args)
                store.close()
            finally:
                server.stop()
        print(lines[0])
        print()
        print("| what | CPU | wall | |")
        print("|---|---:|---:|---|")
        for line in lines[1:]:
            print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--decks-per-day", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    main(parser.parse_args())
