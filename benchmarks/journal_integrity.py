"""The journal's integrity checks on a journal of a given size: what a start and a verify cost.

A journal of ``--hands`` hands is written (synthetic rows the size of a real hand's: inputs,
events with 1 KB bodies, inbox and dispatch rows, 210 chained rows a hand), then timed:

* ``verify (full)``  — ``tablectl journal verify``: the whole chain in one read transaction;
* ``verify (start)`` — what a start verifies: the rows written since the last verified head
  (the daemon moves that head on every minute, so a start sees about a minute of rows);
* ``salvage``        — every row read back, checked and written into a new file.

CPU seconds of this process (load on a shared machine stretches the wall clock, not these),
and rows a second.

    .venv/bin/python benchmarks/journal_integrity.py [--hands 1000] [--recent 600]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.shell.journal import Journal, NewCommand, NewDispatch, NewEvent
from controller.shell.salvage import salvage

ROWS_A_HAND = (60, 80, 20, 10)  # inputs, events, commands, dispatches
BODY = "x" * 1000


def write_hands(journal: Journal, hands: int, first: int = 0) -> None:
    inputs, events, commands, dispatches = ROWS_A_HAND
    for hand in range(first, first + hands):
        for n in range(inputs):
            command = None
            if n < commands:
                command = NewCommand(f"{hand}-{n}", "action", "{}", lambda seqs: {"seqs": seqs})
            journal.append(
                input_row=("2026-01-01T00:00:00+00:00", "Tick", f'{{"hand":{hand},"n":{n}}}'),
                events=[NewEvent("x.happened", f"T1-{hand:05d}", BODY)] * (events // inputs + 1),
                dispatches=[NewDispatch("shuffler", "{}")] if n < dispatches else [],
                command=command,
            )


def cpu(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    result = action()
    return time.process_time() - start, result


def main(hands: int, recent: int) -> None:
    with tempfile.TemporaryDirectory(prefix="integrity") as name:
        path = Path(name) / "journal.sqlite"
        journal = Journal.open(path, table_id="T1", genesis={"table_id": "T1"})
        journal._conn.execute("PRAGMA synchronous=OFF")  # only the checks are measured
        write_hands(journal, hands)
        total = journal.head.pos
        journal.checkpoint()
        size = path.stat().st_size
        full_s, full = cpu(journal.verify)
        assert full.ok, full.problems[:3]
        rows = 0
        for table in ("inputs", "events", "commands", "dispatches"):
            rows += journal.counts()[table]
        since = full.head
        write_hands(journal, max(1, recent // 170), first=hands)
        start_s, start = cpu(lambda: journal.verify(since))
        assert start.ok
        journal.close()
        salvage_s, report = cpu(lambda: salvage(path, Path(name) / "salvaged.sqlite"))
        assert report.complete
    print(
        f"journal integrity: {hands} hands, {total} chained rows, "
        f"{size / 1e6:.0f} MB (CPU seconds of one process)\n"
    )
    print("| check | rows | CPU s | rows/s |")
    print("|---|---:|---:|---:|")
    for label, count, seconds in (
        ("verify (full)", rows, full_s),
        ("verify (start)", start.rows, start_s),
        ("salvage", sum(report.kept.values()), salvage_s),
    ):
        print(f"| {label} | {count} | {seconds:.3f} | {count / max(seconds, 1e-9):,.0f} |")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hands", type=int, default=1000)
    parser.add_argument("--recent", type=int, default=600, help="rows written since the head")
    args = parser.parse_args()
    main(args.hands, args.recent)


if __name__ == "__main__":
    cli()
