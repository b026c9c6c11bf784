"""One retention round against the number of segment records the journal holds.

A journal that lives for years keeps the record of every segment it ever wrote: those still on
the disk (about as many as the budget holds: ~3,700 at 1 GiB) and the pruned ones, which only
grow (~2,000 a year at 200,000 hands). This measures what one round costs as they pile up.

The records are made, not played: a short table is played into a journal and archived with
small segments, and its first segment's record is copied under new names and positions (before
the real ones, so nothing else changes) until the journal holds ``LOCAL`` local and ``PRUNED``
pruned records. Their files are not there: with an unlimited budget a round prunes nothing, so
what it costs is reading and keeping the records. Printed: the CPU time of one round (median of
``--repeat``, untraced) and the peak of Python memory during one round (tracemalloc).

    .venv/bin/python benchmarks/retention_round.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from the repository
    sys.path.insert(0, str(ROOT))

from controller.shell.journal import Journal  # noqa: E402
from controller.shell.retention import Retention, RetentionConfig  # noqa: E402
from simulators.table_journal import endless_dealer, journal_runner  # noqa: E402

#: (local, pruned) records: the budget's worth alone, then one, two and five years of pruning.
CASES = ((3700, 0), (3700, 2000), (3700, 4000), (3700, 10000))
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


def played(directory: Path) -> Path:
    """A table of 40 hands, its outbox acknowledged, archived into segments."""
    path = directory / "journal.sqlite"
    asyncio.run(_play(path, 40))
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM outbox")
    journal = Journal.open_existing(path)
    Retention(journal, ROUND).run_once(NOW)
    journal.close()
    return path


def with_records(template: Path, path: Path, local: int, pruned: int) -> None:
    """A copy of ``template`` whose segments table holds that many more records."""
    with sqlite3.connect(template) as source, sqlite3.connect(path) as conn:
        source.backup(conn)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(segments)")]
        first = dict(zip(columns, conn.execute("SELECT * FROM segments").fetchone(), strict=True))
        rows = []
        for n in range(local + pruned):
            state = "local" if n < local else "pruned"
            pos = -10 * (local + pruned - n)  # before the real segments, in order
            rows.append({**first, "name": f"made-{n}.seg", "first_pos": pos, "state": state})
        marks = ", ".join("?" * len(columns))
        conn.executemany(
            f"INSERT INTO segments ({', '.join(columns)}) VALUES ({marks})",
            [[row[c] for c in columns] for row in rows],
        )


def measure(path: Path, repeat: int) -> tuple[float, float]:
    """Median CPU seconds of a round, and the peak of Python memory in one."""
    journal = Journal.open_existing(path)
    retention = Retention(journal, RetentionConfig(**{**ROUND.__dict__, "max_bytes": None}))
    retention.run_once(NOW)  # the first round's one-off work (a snapshot, the reserve)
    times = []
    for _ in range(repeat):
        started = time.process_time()
        retention.run_once(NOW)
        times.append(time.process_time() - started)
    tracemalloc.start()
    retention.run_once(NOW)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    journal.close()
    return statistics.median(times), peak


def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="round") as name:
        directory = Path(name)
        (directory / "played").mkdir()
        template = played(directory / "played")
        print("| local records | pruned records | CPU ms a round | peak MB in a round |")
        print("|---:|---:|---:|---:|")
        for local, pruned in CASES:
            case = directory / f"{local}-{pruned}"
            case.mkdir()
            path = case / "journal.sqlite"
            with_records(template, path, local, pruned)
            cpu, peak = measure(path, args.repeat)
            print(f"| {local} | {pruned} | {cpu * 1000:.0f} | {peak / 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    main(parser.parse_args())
