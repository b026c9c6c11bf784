"""The reports over a month of a busy floor: how long each takes on PostgreSQL.

A throwaway PostgreSQL (the tests' cluster: ``tests/postgres.py``; or ``--url``) gets the pit's
schema, then a month of a floor of ``--tables`` tables generated and copied in with ``COPY …
FROM STDIN`` (nothing is played): each table deals around the clock, ``--hands-per-hour`` hands
an hour, each hand's row with its take (rake tables, one in ten a time-collection table), its
dealer (a dealer sits 20 minutes at a table), a push (``pot.awarded``, a ruling of every hand), a
hold now and then (1 % of the hands: its rule, evidence, ruling and who ruled, or still open), a
misdeal or void (0.6 %), the devices' ``device.status`` events of each day (a shuffler's health,
jams and lid faults, reboots, readers going stale and back) and each table's births and deaths
(a reconnection a day, a longer outage some days); with the shuffler audit's table there, each
hand's deck revealed. Then every report the pit serves is asked (as the API asks it: a
connection of its own, one snapshot) for the whole month of every table, by day and by shift,
for a random week and a random day of every table, and for the month of 10 random tables,
``--repeat`` times each in turn; median, 95th percentile and worst are printed, in seconds.

    .venv/bin/python benchmarks/reports.py [--tables 200] [--days 31] [--hands-per-hour 27]
        [--repeat 20] [--url postgresql://…] [--reuse] [--reports shufflers …]
        [--out benchmarks/reports-results.txt]

200 tables at 27 hands an hour for 31 days is 4.0 million hands. The events table holds the
device events only (the reports read no other event; a floor's other events would not change
what the device query reads through its index by type and time, only the index's depth).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.cards import card_from_code  # noqa: E402
from controller.pit.db import Db  # noqa: E402
from controller.pit.reports.catalogue import REPORTS  # noqa: E402
from controller.pit.reports.params import ReportQuery, parse_query  # noqa: E402
from controller.pit.reports.periods import Calendar  # noqa: E402
from controller.pit.reports.quarters import (  # noqa: E402
    BACKFILL,
    BACKFILL_DEALERS,
    BACKFILL_HOURS,
)
from controller.pit.reports.registry import NAMES_ROLES, Report, run  # noqa: E402
from controller.pit.reports.shuffler_hours import BACKFILL as BACKFILL_DECKS  # noqa: E402
from controller.pit.store import Store  # noqa: E402

MONTH = datetime(2026, 1, 1, tzinfo=UTC)
DEALERS = [f"dealer-{n:03d}" for n in range(400)]
FLOOR = [f"floor-{n:02d}" for n in range(12)]
#: Holds of the generated floor: (rule, evidence), the shuffler's and the readers' among them.
HOLDS = (
    ("SEAT-COUNT", '{"zone":"seat:{seat}","count":1,"expected":2}'),
    ("GRP-SIZE", '{"zone":"seat:{seat}","count":3,"expected":2}'),
    ("FLOP-PREM", '{"street":"flop","card":"Ah"}'),
    ("BOXED", '{"zone":"seat:{seat}"}'),
    ("SHF-MID-HAND", '{"code":"JAM_INPUT","groups":2}'),
    ("SHF-COUNT", '{"shuffle_id":7,"counted":51}'),
    ("BURN-MISS", '{"street":"turn"}'),
    ("EXP-FIRST", '{"zone":"seat:{seat}"}'),
)
HOW = (("confirm", 0.7), ("reject", 0.1), ("floor", 0.1), ("deck", 0.08), (None, 0.02))
CHUNK = 1 << 20


#: Each relation's columns, in the order the generated lines have them (COPY names them).
COLUMNS: dict[str, tuple[str, ...]] = {
    "hands": (
        "table_id", "epoch", "hand_id", "started_ts", "ended_ts", "outcome", "button", "seats",
        "blinds", "ante", "stacks_before", "stacks_after", "payouts", "pot", "rake", "first_seq",
        "last_seq", "rake_pots", "jackpot", "rake_waived", "time_collected", "runouts", "month",
        "dealer",
    ),
    "rulings": (
        "table_id", "epoch", "seq", "hand_id", "ts", "type", "rule", "hold", "decision",
        "person", "role",
    ),
    "holds": (
        "table_id", "epoch", "hold", "hand_id", "rule", "reason", "ruling", "seat", "evidence",
        "raised_ts", "raised_seq", "resolved_ts", "resolved_seq", "decision", "resolved_by",
        "person", "role", "month",
    ),
    "events": (
        "table_id", "epoch", "seq", "ts", "hand_id", "type", "severity", "public", "secure",
        "source", "committed_at", "fresh",
    ),
    "births": (
        "table_id", "journal", "bdseq", "state", "epoch", "ts", "body", "received_at",
    ),
    "shuffler_decks": (
        "table_id", "epoch", "seq", "ts", "device", "shuffle_id", "cards", "digest", "repeat_of",
    ),
    "shufflers": ("table_id", "device", "named_since", "decks", "last_ts", "checked"),
}  # fmt: skip
_START = MONTH.timestamp()
#: The card names by TSP/1 code, as the store writes an order.
_NAMES = [card_from_code(code) for code in range(52)]
#: The date part of a time, from two days before the month on.
_DAYS = [(MONTH + timedelta(days=d - 2)).strftime("%Y-%m-%dT") for d in range(70)]


def ts(stamp: float) -> str:
    """RFC 3339 UTC to the millisecond, as the tables write it (what datetime would write,
    several times faster: millions of them are made)."""
    ms = round((stamp - _START) * 1000) + 2 * 86_400_000
    day, ms = divmod(ms, 86_400_000)
    hour, ms = divmod(ms, 3_600_000)
    minute, ms = divmod(ms, 60_000)
    second, ms = divmod(ms, 1000)
    return f"{_DAYS[day]}{hour:02d}:{minute:02d}:{second:02d}.{ms:03d}Z"


def line(*values: Any) -> str:
    """A row in COPY's text format (the generated values hold no tab, newline or backslash)."""
    return "\t".join("\\N" if v is None else str(v) for v in values) + "\n"


class Floor:
    """The generated month, table by table (each table's rows in the order of its play)."""

    def __init__(self, tables: int, days: int, hands_per_hour: int, decks: bool) -> None:
        self.tables = [f"T{n:03d}" for n in range(1, tables + 1)]
        self.days = days
        self.hands_per_hour = hands_per_hour
        self.decks = decks

    def table(self, index: int) -> dict[str, str]:
        """Every row of one table, as COPY text per relation."""
        rng = random.Random(index)
        table = self.tables[index]
        epoch = f"{table}-e1"
        out: dict[str, list[str]] = {name: [] for name in COLUMNS}
        spacing = 3600 / self.hands_per_hour
        seats = "[1,2,3,4,5,6,7,8,9]"
        stacks = [
            json.dumps({str(s): rng.randint(200, 2000) for s in range(1, 10)}) for _ in range(8)
        ]
        time_table = index % 10 == 9
        seq = 0
        half_hour = -1
        hands = self.days * 24 * self.hands_per_hour
        begin = _START + index * 3.7
        hands_out, rulings_out = out["hands"], out["rulings"]
        for number in range(1, hands + 1):
            started = begin + (number - 1) * spacing + rng.uniform(0, spacing * 0.2)
            ended = started + rng.uniform(0.55, 0.8) * spacing
            hand = f"{table}-{number:06d}"
            dealer = DEALERS[(index * 3 + int((started - _START) // 1200)) % 400]
            luck = rng.random()
            outcome = "completed" if luck > 0.006 else "misdeal" if luck > 0.001 else "void"
            first = seq + 1
            seq += 40
            end_ts = ts(ended)
            pot = rake = jackpot = time_collected = None
            if outcome == "completed":
                pot = rng.randint(15, 400)
                if not time_table:
                    rake = 0 if pot < 20 else min(5, pot // 20)
                    jackpot = 1 if pot >= 100 else 0
            if time_table and int(started // 1800) != half_hour:  # HOUSE-TIME: each half hour
                half_hour = int(started // 1800)
                time_collected = 45
            hands_out.append(
                line(
                    table, epoch, hand, ts(started), end_ts, outcome, 1 + number % 9, seats,
                    "[1,2]", 0, stacks[number % 8],
                    stacks[(number + 1) % 8] if pot is not None else None,
                    f'{{"{1 + number % 9}":{pot}}}' if pot is not None else None,
                    pot, rake, first, seq, f"[{rake}]" if rake is not None else None, jackpot,
                    "minimum" if rake == 0 else None, time_collected, 1, "2026-01", dealer,
                )
            )  # fmt: skip
            if outcome == "completed":
                rulings_out.append(
                    line(table, epoch, seq - 1, hand, end_ts, "pot.awarded", "DE-1552", None,
                         None, dealer, "dealer")
                )  # fmt: skip
            else:
                kind, rule = (
                    ("hand.misdeal", "SEAT-COUNT") if outcome == "misdeal"
                    else ("hand.void", "FOUL-DUP")
                )  # fmt: skip
                rulings_out.append(
                    line(table, epoch, seq - 1, hand, end_ts, kind, rule, None, None,
                         FLOOR[number % len(FLOOR)], "floor")
                )  # fmt: skip
            if rng.random() < 0.01:
                self._hold(rng, out, table, epoch, first, hand, started, dealer)
            if self.decks:
                self._deck(rng, out, table, epoch, first + 1, started, number)
        self._devices(rng, out, table, epoch, seq)
        self._births(rng, out, table)
        return {name: "".join(lines) for name, lines in out.items()}

    def _deck(
        self,
        rng: random.Random,
        out: dict[str, list[str]],
        table: str,
        epoch: str,
        seq: int,
        at: float,
        number: int,
    ) -> None:
        """SHF-RAND: the hand's deck revealed, a uniform shuffle, as the ingest keeps it."""
        from controller.pit.reports.shuffler_decks import (  # noqa: PLC0415 (with the audit)
            DEFAULT_DEVICE,
            digest,
            encode_order,
        )

        # a uniform permutation: the cards sorted by independent uniform keys (a tie has a
        # chance of about 10⁻¹³), several times faster than shuffle() for millions of decks
        keys = [rng.random() for _ in range(52)]
        order = bytes(sorted(range(52), key=keys.__getitem__))
        names = "".join(map(_NAMES.__getitem__, order))
        if number == 1:
            assert names == encode_order(order)  # the store's own writing
        out["shuffler_decks"].append(
            line(table, epoch, seq, ts(at), DEFAULT_DEVICE, number, names, digest(order), None)
        )
        if number == 1:
            hands = self.days * 24 * self.hands_per_hour
            out["shufflers"].append(
                line(table, DEFAULT_DEVICE, ts(_START - 86400), hands,
                     ts(_START + self.days * 86400 - 60), 0)
            )  # fmt: skip

    def _hold(
        self,
        rng: random.Random,
        out: dict[str, list[str]],
        table: str,
        epoch: str,
        first: int,
        hand: str,
        started: float,
        dealer: str,
    ) -> None:
        rule, evidence = HOLDS[rng.randrange(len(HOLDS))]
        name = f"{hand}-h1"
        raised = started + rng.uniform(5, 40)
        how = rng.choices([h for h, _ in HOW], [w for _, w in HOW])[0]
        resolved = raised + rng.uniform(8, 240) if how is not None else None
        person, role = (
            (dealer, "dealer") if how == "confirm" and rng.random() < 0.3
            else (FLOOR[rng.randrange(len(FLOOR))], "floor")
            if how in ("confirm", "reject", "floor")
            else (None, None)
        )  # fmt: skip
        out["holds"].append(
            line(
                table, epoch, name, hand, rule, "held", "continue", rng.randint(1, 9),
                evidence.replace("{seat}", str(rng.randint(1, 9))), ts(raised), first + 5,
                ts(resolved) if resolved is not None else None,
                first + 6 if resolved is not None else None,
                "continue" if how is not None else None, how, person, role, "2026-01",
            )
        )  # fmt: skip
        out["rulings"].append(
            line(table, epoch, first + 5, hand, ts(raised), "hand.hold", rule, name, "continue",
                 None, None)
        )  # fmt: skip
        if resolved is not None:
            if how == "floor":
                out["rulings"].append(
                    line(table, epoch, first + 6, hand, ts(resolved), "floor.override", rule,
                         name, "continue", person, role)
                )  # fmt: skip
            out["rulings"].append(
                line(table, epoch, first + 7, hand, ts(resolved), "hand.resume", rule, name,
                     "continue", person, role)
            )  # fmt: skip

    def _devices(
        self, rng: random.Random, out: dict[str, list[str]], table: str, epoch: str, seq: int
    ) -> None:
        """A day's device events: the shuffler's health, now and then a jam, a lid, a reboot;
        the reader going stale and back twice."""
        for day in range(self.days):
            base = _START + day * 86400
            said: list[tuple[float, dict[str, Any]]] = [
                (base + 6 * 3600, {"device": "shuffler", "health": "online", "kind": "shuffler"}),
            ]
            for hour in (rng.uniform(0, 24), rng.uniform(0, 24)):
                at = base + hour * 3600
                said.append((at, {"device": "rfid", "health": "stale", "kind": "reader"}))
                said.append((at + 30, {"device": "rfid", "health": "online", "kind": "reader"}))
            if rng.random() < 0.3:
                jam = rng.choice(["JAM_INPUT", "JAM_PATH", "MISFEED"])
                said.append((base + rng.uniform(0, 86400), {"device": "shuffler", "fault": jam}))
            if rng.random() < 0.1:
                lid = {"device": "shuffler", "fault": "LID_OPEN"}
                said.append((base + rng.uniform(0, 86400), lid))
            if rng.random() < 0.05:
                boot = {"device": "shuffler", "rebooted": True, "boot_id": day}
                said.append((base + rng.uniform(0, 86400), boot))
            if rng.random() < 0.03:
                lost = {"device": "rfid", "health": "reconnecting", "kind": "reader"}
                said.append((base + rng.uniform(0, 86400), lost))
            for at, data in sorted(said, key=lambda s: s[0]):
                seq += 1
                severity = "warn" if "fault" in data else "info"
                body = {
                    "schema": "tablectl.event/1",
                    "table_id": table,
                    "epoch": epoch,
                    "seq": seq,
                    "event_id": f"{table}:{epoch}:{seq}",
                    "historical": False,
                    "ts": ts(at),
                    "hand_id": None,
                    "type": "device.status",
                    "rules": [],
                    "severity": severity,
                    "needs_confirm": False,
                    "data": data,
                }
                public = json.dumps(body, separators=(",", ":"))
                out["events"].append(
                    line(table, epoch, seq, body["ts"], None, "device.status", severity, public,
                         None, "live", at, 1)
                )  # fmt: skip

    def _births(self, rng: random.Random, out: dict[str, list[str]], table: str) -> None:
        """A reconnection a day at about five in the morning; now and then an outage of hours."""
        up = _START - 3600
        for day in range(self.days):
            bdseq = day + 1
            down = _START + day * 86400 + 5 * 3600 + rng.uniform(0, 600)
            gap = rng.uniform(3600, 4 * 3600) if rng.random() < 0.05 else rng.uniform(20, 120)
            for state, heard in (("online", up), ("offline", down)):
                body = json.dumps(
                    {"state": state, "bdseq": bdseq, "journal": f"{table}-j"},
                    separators=(",", ":"),
                )
                out["births"].append(
                    line(table, f"{table}-j", bdseq, state, f"{table}-e1", ts(up), body, heard)
                )
            up = down + gap


def _generate(args: tuple[Floor, int]) -> dict[str, str]:
    floor, index = args
    return floor.table(index)


#: What the ingest keeps of the hands and decks for the reports (counted after the copy).
QUARTERS = ("hand_quarters", "dealer_quarters", "hand_hours", "shuffler_hours")


def relations(db: Db) -> list[str]:
    """The relations of :data:`COLUMNS` the store has (the audit's: with its schema)."""
    return [
        name for name in COLUMNS if db.one("SELECT to_regclass(?) IS NOT NULL", (name,)) == (True,)
    ]


def fill(store: Store, floor: Floor, workers: int) -> tuple[dict[str, int], float]:
    """Every table's rows generated (by ``workers`` processes) and copied in, table by table;
    the rows per relation and the seconds."""
    db = store.db
    present = relations(db)
    if not ({"shuffler_decks", "shufflers"} <= set(present)):
        floor.decks = False
    counts = dict.fromkeys(present, 0)
    began = time.monotonic()
    with multiprocessing.Pool(workers) as pool:
        jobs = pool.imap(_generate, ((floor, i) for i in range(len(floor.tables))))
        for index, rows in enumerate(jobs):
            for name in present:
                text = rows.get(name, "")
                if not text:
                    continue
                counts[name] += text.count("\n")
                data = text.encode()
                db.copy_in(
                    f"COPY {name} ({', '.join(COLUMNS[name])}) FROM STDIN",
                    (data[i : i + CHUNK] for i in range(0, len(data), CHUNK)),
                )
            if (index + 1) % 20 == 0:
                print(
                    f"  {index + 1} tables, {counts['hands']:,} hands, "
                    f"{time.monotonic() - began:.0f} s",
                    flush=True,
                )
    # the hands by quarter hour and the decks by hour, which the ingest keeps as it stores each
    # batch, counted from the rows copied in as pit schemas 15-17 count those of a store they
    # migrate
    counting = time.monotonic()
    for statement in (BACKFILL, BACKFILL_DEALERS, BACKFILL_HOURS, BACKFILL_DECKS):
        db.execute(statement)
    for name in QUARTERS:
        counts[name] = int(db.one(f"SELECT count(*) FROM {name}")[0])  # type: ignore[index]
    print(f"  the quarters and hours counted in {time.monotonic() - counting:.1f} s", flush=True)
    db.execute("VACUUM ANALYZE")
    return counts, time.monotonic() - began


def sizes(db: Db, relations: Iterable[str]) -> dict[str, int]:
    """Bytes on disk of each relation with its partitions and indexes."""
    out: dict[str, int] = {}
    for name in relations:
        row = db.one(
            "SELECT COALESCE(sum(pg_total_relation_size(inhrelid)), 0) + "
            "pg_total_relation_size(?::regclass) FROM pg_inherits "
            "WHERE inhparent = ?::regclass",
            (name, name),
        )
        out[name] = int(row[0]) if row else 0
    return out


Case = Callable[[random.Random], dict[str, str | None]]


def cases(floor: Floor) -> dict[str, Case]:
    """What each report is asked: the month of every table by day and by shift, a week and a
    day of every table, the month of 10 tables (each run a random week, day, tables)."""
    last = floor.days - 1

    def day(offset: int) -> str:
        return (MONTH + timedelta(days=offset)).strftime("%Y-%m-%d")

    def week(rng: random.Random) -> dict[str, str | None]:
        start = rng.randint(0, max(0, last - 6))
        return {"since": day(start), "until": day(min(last, start + 6))}

    def one_day(rng: random.Random) -> dict[str, str | None]:
        start = rng.randint(0, last)
        return {"since": day(start), "until": day(start)}

    def tables(rng: random.Random) -> dict[str, str | None]:
        chosen = rng.sample(floor.tables, min(10, len(floor.tables)))
        return {"since": day(0), "until": day(last), "tables": ",".join(chosen)}

    return {
        "month, every table, by day": lambda rng: {"since": day(0), "until": day(last)},
        "month, every table, by shift": lambda rng: {
            "since": day(0),
            "until": day(last),
            "group": "shift",
        },
        "a week, every table": week,
        "a day, every table": one_day,
        "month, 10 tables": tables,
    }


def ask(report: Report[Any], given: dict[str, str | None]) -> ReportQuery | None:
    """The query, or None: a report not grouped by period is not asked by shift."""
    if given.get("group") and not report.groups:
        return None
    return parse_query(
        since=given.get("since"),
        until=given.get("until"),
        tables=given.get("tables"),
        group=given.get("group"),
        groups=report.groups,
        calendar=Calendar(zone=UTC),
        max_days=92,
        now=MONTH + timedelta(days=40),
    )


def timed(
    url: str, floor: Floor, repeat: int, reports: Iterable[Report[Any]] = REPORTS
) -> dict[tuple[str, str], list[float]]:
    """Each report and case, ``repeat`` times in turn, as the API runs it (a connection of its
    own, one snapshot); the first round, which fills the caches, not counted."""
    rng = random.Random(7)
    walls: dict[tuple[str, str], list[float]] = {}
    for round_ in range(repeat + 1):
        for report in reports:
            for name, case in cases(floor).items():
                query = ask(report, case(rng))
                if query is None:
                    continue
                began = time.perf_counter()
                db = Db(url)
                try:
                    answer = run(report, db, query, NAMES_ROLES)
                    answer.model_dump_json()  # the answer as the API sends it
                except Exception as exc:  # a report that fails is said, not timed
                    print(f"  {report.name}, {name}: {type(exc).__name__}: {exc}", flush=True)
                    continue
                finally:
                    db.close()
                if round_:
                    walls.setdefault((report.name, name), []).append(time.perf_counter() - began)
    return walls


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--days", type=int, default=31)
    parser.add_argument("--hands-per-hour", type=int, default=27)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-decks", action="store_true", help="no revealed decks")
    parser.add_argument("--url", help="an empty PostgreSQL database (default: a throwaway one)")
    parser.add_argument("--workers", type=int, default=2, help="processes generating the rows")
    parser.add_argument(
        "--reuse", action="store_true", help="with --url: time the floor the store holds already"
    )
    parser.add_argument(
        "--reports",
        nargs="+",
        choices=[r.name for r in REPORTS],
        help="time these reports only (default: every one)",
    )
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    chosen = [r for r in REPORTS if args.reports is None or r.name in args.reports]
    from tests.postgres import PostgresServer  # noqa: PLC0415

    server = None
    url = args.url
    if url is None:
        server = PostgresServer()
        server.start()
        url = server.new_database()
    floor = Floor(args.tables, args.days, args.hands_per_hour, not args.no_decks)
    lines = [
        f"reports: {args.tables} tables, {args.days} days, {args.hands_per_hour} hands a table "
        f"an hour around the clock; Python {platform.python_version()}, {os.cpu_count()} CPUs "
        f"(load {os.getloadavg()[0]:.1f}); PostgreSQL: "
        + (
            "the tests' cluster (fsync off, the server's defaults otherwise)"
            if server
            else "the server at --url"
        ),
    ]
    try:
        store = Store(url)
        store.migrate()
        store.prepare_months(MONTH.timestamp())
        version = store.db.one("SHOW server_version")
        settings = {
            name: store.db.one(f"SHOW {name}")[0]  # type: ignore[index]
            for name in ("shared_buffers", "work_mem", "max_parallel_workers_per_gather")
        }
        lines[0] += f" {version[0] if version else ''}"
        lines.append("server settings: " + ", ".join(f"{k} {v}" for k, v in settings.items()))
        print(lines[0], flush=True)
        stored = store.db.one("SELECT count(*) FROM hands")
        if args.reuse and stored is not None and int(stored[0]) > 0:
            counts = {
                name: int(store.db.one(f"SELECT count(*) FROM {name}")[0])  # type: ignore[index]
                for name in (*relations(store.db), *QUARTERS)
            }
            lines.append(
                "the floor already in the store (--reuse): "
                + ", ".join(f"{name} {n:,}" for name, n in counts.items())
            )
        else:
            counts, seconds = fill(store, floor, args.workers)
            rows = sum(counts.values())
            lines.append(
                f"generated and copied in {seconds:.0f} s ({rows / seconds:,.0f} rows/s): "
                + ", ".join(f"{name} {n:,}" for name, n in counts.items())
            )
        size = sizes(store.db, counts)
        lines.append(
            "on disk with indexes: "
            + ", ".join(f"{name} {b / 2**20:,.0f} MiB" for name, b in size.items())
            + f" (all {sum(size.values()) / 2**30:.2f} GiB)"
        )
        store.close()
        print("\n".join(lines[1:]), flush=True)
        loads = [os.getloadavg()[0]]
        walls = timed(url, floor, args.repeat, chosen)
        loads.append(os.getloadavg()[0])
        lines += [
            "",
            f"each report as the API runs it, {args.repeat} times each case in turn after a "
            "first round not counted (seconds; the machine's load "
            f"{loads[0]:.1f} when they began, {loads[1]:.1f} when they ended)",
            "",
            f"| {'report':<10} | {'asked':<30} | {'median':>7} | {'p95':>7} | {'worst':>7} |",
            f"|{'-' * 12}|{'-' * 32}|{'-' * 9}|{'-' * 9}|{'-' * 9}|",
        ]
        for (report, case), values in walls.items():
            lines.append(
                f"| {report:<10} | {case:<30} | {statistics.median(values):7.3f} | "
                f"{p95(values):7.3f} | {max(values):7.3f} |"
            )
        every: dict[str, list[float]] = {}
        for (report, _), values in walls.items():
            every.setdefault(report, []).extend(values)
        lines += [
            "",
            "every case together: "
            + ", ".join(
                f"{name} p95 {p95(v):.3f} s (worst {max(v):.3f})" for name, v in every.items()
            ),
        ]
        missed = [name for name, v in every.items() if p95(v) > 2.0]
        lines.append(
            "target (p95 ≤ 2 s for each report): "
            + ("met" if not missed else "NOT met by " + ", ".join(missed))
        )
    finally:
        if server is not None:
            server.stop()
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
