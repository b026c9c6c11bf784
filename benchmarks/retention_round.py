"""One retention round against the number of segment records the journal holds.

A journal that lives for years keeps the record of every segment it ever wrote: those still on
the disk (about as many as the budget holds: ~3,700 at 1 GiB) and the pruned ones, which only
grow (~2,000 a year at 200,000 hands). This measures what one round costs as they pile up.

The records are made, not played: a short table is played into a journal and archived with
small segments, and its first segment's record is copied under new names and positions (before
the real ones, so nothing else changes; the pruned ones oldest, each linked to the one before
it as a real chain's records are) until the journal holds ``LOCAL`` local and ``PRUNED`` pruned
records, as a journal written before pruned records were compacted left them. Their files are
not there: with an unlimited budget a round prunes nothing, so what it costs is reading and
keeping the records. Printed: the CPU time (untraced, on a copy) and the peak of Python memory
(tracemalloc) of the first round on the journal (which compacts such pruned records, once),
then the CPU time of a round after it (median of ``--repeat``, untraced) and its peak, and the
segment records the journal holds after them; then one round that archives (the played table's
5,000-row segments, the default size; its CPU time traced).

With ``--top N``: where the largest memory a round held was allocated, the ``N`` lines of code
with the most (tracemalloc, a snapshot each time the round's journal calls return, the largest
kept).

    .venv/bin/python benchmarks/retention_round.py [--repeat 5] [--top 5]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import logging
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from the repository
    sys.path.insert(0, str(ROOT))

import structlog  # noqa: E402

from controller.shell.journal import Journal  # noqa: E402
from controller.shell.retention import Retention, RetentionConfig  # noqa: E402
from simulators.table_journal import endless_dealer, journal_runner  # noqa: E402

#: (local, pruned) records: the budget's worth alone, then one, two and five years of pruning,
#: and a budget's worth of 10,000 local segments.
CASES = ((3700, 0), (3700, 2000), (3700, 4000), (3700, 10000), (10000, 0))
NOW = datetime.now(UTC) + timedelta(days=3650)  # every input is older than any window
ROUND = RetentionConfig(
    live_hands=3, inbox_seconds=0, segment_rows=1500, recent_inputs=100, interval=0
)


async def _play(path: Path, hands: int) -> None:
    dealer = endless_dealer("retention-round")
    runner = journal_runner(path, dealer)
    for _ in range(hands):
        assert dealer.play_hand()
        for item in dealer.run.inputs:
            await runner.submit(item)
        dealer.run.inputs.clear()
    await runner.writer.close()


def played(directory: Path, hands: int = 40) -> Path:
    """A table of ``hands`` hands, its outbox acknowledged (not archived yet)."""
    path = directory / "journal.sqlite"
    asyncio.run(_play(path, hands))
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM outbox")
    return path


def archived(directory: Path) -> Path:
    """A table of 40 hands archived into small segments."""
    path = played(directory)
    journal = Journal.open_existing(path)
    Retention(journal, ROUND).run_once(NOW)
    journal.close()
    return path


def _link(n: int) -> str:
    return hashlib.sha256(f"made-{n}".encode()).hexdigest()


def with_records(template: Path, path: Path, local: int, pruned: int) -> None:
    """A copy of ``template`` whose segments table holds that many more records: the pruned
    ones first (the oldest), each linked to the one before it, then the local ones."""
    with sqlite3.connect(template) as source, sqlite3.connect(path) as conn:
        source.backup(conn)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(segments)")]
        query = "SELECT * FROM segments ORDER BY first_pos LIMIT 1"
        first = dict(zip(columns, conn.execute(query).fetchone(), strict=True))
        rows = []
        total = local + pruned
        for n in range(total):
            state = "pruned" if n < pruned else "local"
            pos = -10 * (total - n)  # before the real segments, in order
            rows.append(
                {
                    **first,
                    "name": f"{pos + 10**9:012d}-{pos + 10**9 + 9:012d}.seg",
                    "first_pos": pos,
                    "last_pos": pos + 9,
                    "prev_hash": _link(n - 1),
                    "last_hash": _link(n),
                    "state": state,
                    "reason": "confirmed stored by the pit (made)" if state == "pruned" else None,
                }
            )
        marks = ", ".join("?" * len(columns))
        conn.executemany(
            f"INSERT INTO segments ({', '.join(columns)}) VALUES ({marks})",
            [[row[c] for c in columns] for row in rows],
        )


class Peak:
    """Where the most memory a round held was allocated: a tracemalloc snapshot each time one
    of the round's journal calls returns (what it returned still held), the largest kept."""

    def __init__(self) -> None:
        self.most = 0
        self.snapshot: tracemalloc.Snapshot | None = None

    def wrap(self, retention: Retention) -> None:
        inner = retention.write

        def write(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
            result = inner(fn, *args, **kwargs)
            current = tracemalloc.get_traced_memory()[0]
            if current > self.most:
                self.most = current
                self.snapshot = tracemalloc.take_snapshot()
            return result

        retention.write = write

    def top(self, count: int) -> list[str]:
        if self.snapshot is None:
            return []
        here = tracemalloc.Filter(False, tracemalloc.__file__)
        stats = self.snapshot.filter_traces([here]).statistics("lineno")
        return [
            f"    {s.size / 1e6:6.2f} MB {s.count:7d} blocks  {s.traceback[0].filename}:"
            f"{s.traceback[0].lineno}"
            for s in stats[:count]
        ]


def traced(retention: Retention, peak: Peak | None) -> tuple[float, float]:
    """One round: its CPU seconds and its peak of Python memory."""
    inner = retention.write
    if peak is not None:
        peak.wrap(retention)
    tracemalloc.start()
    started = time.process_time()
    retention.run_once(NOW)
    cpu = time.process_time() - started
    most = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    retention.write = inner
    return cpu, most


def first_round(path: Path) -> float:
    """The CPU seconds of the first round on a copy of the journal, untraced."""
    copy = path.with_name("first.sqlite")
    with sqlite3.connect(path) as source, sqlite3.connect(copy) as conn:
        source.backup(conn)
    journal = Journal.open_existing(copy)
    retention = Retention(journal, RetentionConfig(**{**ROUND.__dict__, "max_bytes": None}))
    started = time.process_time()
    retention.run_once(NOW)
    cpu = time.process_time() - started
    journal.close()
    return cpu


def measure(path: Path, repeat: int, top: int) -> tuple[list[str], list[str]]:
    """The table's cells for one journal, and where the steady round's peak was allocated."""
    first_cpu = first_round(path)
    journal = Journal.open_existing(path)
    retention = Retention(journal, RetentionConfig(**{**ROUND.__dict__, "max_bytes": None}))
    _, first_peak = traced(retention, None)
    retention.run_once(NOW)  # the reserve, made once
    times = []
    for _ in range(repeat):
        started = time.process_time()
        retention.run_once(NOW)
        times.append(time.process_time() - started)
    peak = Peak() if top else None
    _, steady_peak = traced(retention, peak)
    records = journal.read("SELECT COUNT(*) FROM segments")[0][0]
    journal.close()
    cells = [
        f"{first_cpu * 1000:.0f}",
        f"{first_peak / 1e6:.1f}",
        f"{statistics.median(times) * 1000:.0f}",
        f"{steady_peak / 1e6:.1f}",
        str(records),
    ]
    return cells, peak.top(top) if peak is not None else []


def archiving(directory: Path, top: int) -> None:
    """One round that archives a played table's rows into 5,000-row segments."""
    path = played(directory, 120)
    journal = Journal.open_existing(path)
    config = RetentionConfig(**{**ROUND.__dict__, "segment_rows": 5000})
    retention = Retention(journal, config)
    peak = Peak() if top else None
    rows = journal.read("SELECT COUNT(*) FROM events")[0][0]
    cpu, most = traced(retention, peak)
    segments = journal.read("SELECT COUNT(*), SUM(rows) FROM segments")[0]
    journal.close()
    print()
    print(
        f"A round that archives {segments[0]} segments ({segments[1]} rows; the table had "
        f"{rows} events): {cpu * 1000:.0f} ms CPU (traced), peak {most / 1e6:.1f} MB"
    )
    for line in peak.top(top) if peak is not None else []:
        print(line)


def main(args: argparse.Namespace) -> None:
    # the rounds' log lines (each segment archived) are not what is measured
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory(prefix="round") as name:
        directory = Path(name)
        (directory / "played").mkdir()
        template = archived(directory / "played")
        print(
            "| local records | pruned records | first round CPU ms | first round peak MB | "
            "CPU ms a round | peak MB in a round | records after |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|")
        tops = []
        for local, pruned in CASES:
            case = directory / f"{local}-{pruned}"
            case.mkdir()
            path = case / "journal.sqlite"
            with_records(template, path, local, pruned)
            cells, top = measure(path, args.repeat, args.top)
            print(f"| {local} | {pruned} | {' | '.join(cells)} |", flush=True)
            tops.append((local, pruned, top))
        for local, pruned, top in tops:
            if top:
                print(f"\nThe largest a round held, {local} local and {pruned} pruned records:")
                print("\n".join(top))
        (directory / "archiving").mkdir()
        archiving(directory / "archiving", args.top)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--top", type=int, default=0, help="allocation sites to show")
    main(parser.parse_args())
