"""A simulated year of one table: hands through the core into the journal, with retention on.

The automatic dealer (simulators/autoplay.py; checks and calls only, so the stacks last for
ever) makes up each hand's inputs; the table's own runner (controller/shell/table.py) applies
them to the core and journals them through the journal's writer thread, as the daemon does,
with no devices and no broker. One hand begins every ``year / hands`` of simulated time, so the
inputs' times span a year. Every ``--round`` hands, as the daemon's minute would:

* the broker "acknowledges" the outbox (its rows are deleted, as after PUBACK);
* the pit "confirms" every event so far (:func:`controller.shell.retention.confirm_stored`,
  what its signed ``stored`` request runs), unless ``--pit-down`` covers those hands;
* the integrity check verifies the rows written since and moves the verified head;
* a retention round archives, prunes within ``--budget`` and reports.

Printed: a row every ``--every`` hands (hands, events, wall and CPU seconds, the journal's
bytes: live database + WAL, local segments, against the budget, segments by state, the records
of the ``segments`` table (a run of pruned segments is one), RSS); then the full verify over the
archive, the export of every event, and a start (open the journal, verify from the verified
head, replay from the snapshot) as the daemon does before READY.

With ``--trace``, tracemalloc follows the Python memory from the start (one frame a block; it
slows the run, so its CPU figures are not the untraced ones): after the table, the lines of code
whose memory changed the most between one row and the next, and the memory traced at each row.

    .venv/bin/python benchmarks/journal_year.py [--hands 200000] [--budget 2147483648] [--trace]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from the repository
    sys.path.insert(0, str(ROOT))

from controller.shell.chain import Head  # noqa: E402
from controller.shell.export import export_events  # noqa: E402
from controller.shell.journal import Journal  # noqa: E402
from controller.shell.maintenance import Stored  # noqa: E402
from controller.shell.retention import (  # noqa: E402
    Retention,
    RetentionConfig,
    RoundReport,
    confirm_stored,
)
from controller.shell.segments import STATES  # noqa: E402
from simulators.table_journal import endless_dealer, journal_runner  # noqa: E402

YEAR = timedelta(days=365)


def rss_mb() -> float:
    """The resident set now (not the peak)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 1e6


class Year:
    """The simulated year's state and its measurements."""

    def __init__(self, args: argparse.Namespace, path: Path) -> None:
        self.args = args
        self.path = path
        self.dealer = endless_dealer("year", args.seed, stack=10**9)
        self.runner = journal_runner(path, self.dealer)
        self.journal = self.runner.journal
        self.retention = Retention(
            self.journal,
            RetentionConfig(
                live_hands=args.live_hands,
                max_bytes=args.budget,
                interval=0,
                inbox_seconds=args.inbox_seconds,
            ),
        )
        self.events = 0
        self.verified = self.journal.verified_head()
        self.started = time.perf_counter()
        self.cpu = time.process_time()
        self.rows: list[str] = []
        self.alarms = 0
        self.most = 0
        self.snapshot: tracemalloc.Snapshot | None = None
        self.growth: list[str] = []  # with --trace: what grew between rows

    async def play(self) -> None:
        args = self.args
        gap = YEAR / args.hands
        first = self.dealer.now
        for hand in range(1, args.hands + 1):
            # one hand every `gap` of simulated time: the inputs' times span the year
            self.dealer.now = max(self.dealer.now, first + gap * hand)
            assert self.dealer.play_hand()
            for item in self.dealer.run.inputs:
                await self.runner.submit(item)
            self.events += len(self.dealer.run.events)
            self.dealer.run.inputs.clear()  # the dealer keeps nothing of past hands
            self.dealer.run.events.clear()
            if hand % args.round == 0:
                report = await self.round(hand)
                if hand % args.every == 0:
                    self.row(hand, report)
        await self.runner.writer.close()

    async def round(self, hand: int) -> RoundReport:
        writer = self.runner.writer
        journal = self.journal
        pending = await writer.call(journal.pending, 1_000_000)
        journal.forget([row.id for row in pending])  # the broker took them all
        await writer.call(journal.delete_outbox)
        down = self.args.pit_down
        if not (down and down[0] <= hand < down[1]):
            epoch, seq = journal.event_id(journal.last_seq())
            stored = Stored(datetime.now(UTC), "pit-1", epoch, seq)
            await writer.call(confirm_stored, journal, stored)
        self.verified = await writer.call(self._verify_new)
        now = self.dealer.now
        report = await writer.call(self.retention.run_once, now)
        self.alarms += report.alarm() is not None
        self.most = max(self.most, report.total_bytes)
        return report

    def _verify_new(self) -> Head:
        report = self.journal.verify(self.verified)
        assert report.ok, report.problems[:3]
        self.journal.set_meta(
            {"verified_pos": str(report.head.pos), "verified_hash": report.head.hash}
        )
        return report.head

    def row(self, hand: int, report: RoundReport) -> None:
        wall = time.perf_counter() - self.started
        cpu = time.process_time() - self.cpu
        states = "/".join(str(report.by_state[s]) for s in STATES)
        records = self.journal.read("SELECT COUNT(*) FROM segments")[0][0]
        self.rows.append(
            f"| {hand} | {self.events} | {wall:.0f} | {cpu:.0f} | "
            f"{report.live_bytes / 1e6:.1f} | {report.segment_bytes / 1e6:.1f} | "
            f"{report.total_bytes / 1e6:.1f} | {states} | {records} | "
            f"{report.waiting_bytes / 1e6:.1f} | {rss_mb():.0f} |"
        )
        print(self.rows[-1], flush=True)
        if tracemalloc.is_tracing():
            self.trace(hand)

    def trace(self, hand: int) -> None:
        """What changed most since the last row (tracemalloc, by line of code)."""
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        traced = tracemalloc.get_traced_memory()[0]
        self.growth.append(f"{hand} hands: {traced / 1e6:.1f} MB traced")
        if self.snapshot is not None:
            for stat in snapshot.compare_to(self.snapshot, "lineno")[: self.args.trace_top]:
                frame = stat.traceback[0]
                self.growth.append(
                    f"    {stat.size_diff / 1e3:+9.1f} kB {stat.count_diff:+7d} blocks  "
                    f"{frame.filename}:{frame.lineno}"
                )
        self.snapshot = snapshot


def timed(action: Any) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def start(path: Path, seed: int) -> tuple[int, Any]:
    """What the daemon does before READY: open, verify from the verified head, replay."""
    dealer = endless_dealer("year", seed, stack=10**9)
    runner = journal_runner(path, dealer)
    report = runner.journal.verify(runner.journal.verified_head())
    assert report.ok, report.problems[:3]
    recovered = runner.recover()
    assert recovered.diverged == []
    runner.journal.close()
    return report.rows, recovered


def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="year", dir=args.dir) as name:
        path = Path(name) / "journal.sqlite"
        year = Year(args, path)
        print(
            f"journal year: {args.hands} hands, budget {args.budget / 1e6:.0f} MB, "
            f"live_hands {args.live_hands}, a round every {args.round} hands\n"
        )
        print(
            "| hands | events | wall s | CPU s | live MB | segments MB | total MB | "
            "segments local/archived/pruned | segment records | waiting MB | RSS MB |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
        if args.trace:
            tracemalloc.start()
        asyncio.run(year.play())
        tracemalloc.stop()
        wall = time.perf_counter() - year.started
        cpu = time.process_time() - year.cpu
        journal = Journal.open_existing(path)
        verify_wall, verify_cpu, verified = timed(lambda: journal.verify(segments=True))
        assert verified.ok, verified.problems[:3]
        export_wall, export_cpu, exported = timed(lambda: sum(1 for _ in export_events(journal)))
        pruned = len(verified.pruned)
        journal.close()
        start_wall, start_cpu, (start_rows, recovered) = timed(lambda: start(path, args.seed))
        print()
        print(
            f"{args.hands} hands, {year.events} events in {wall:.0f} s wall, {cpu:.0f} s CPU: "
            f"{args.hands / wall:.1f} hands/s, {year.events / wall:.0f} events/s; "
            f"the most the journal held: {year.most / 1e6:.1f} MB of a "
            f"{args.budget / 1e6:.0f} MB budget; rounds over budget waiting: {year.alarms}"
        )
        print()
        print("| at the end | wall s | CPU s | what |")
        print("|---|---:|---:|---|")
        print(
            f"| verify (segments + live) | {verify_wall:.2f} | {verify_cpu:.2f} | "
            f"{verified.rows} rows in {verified.segments} segments and the live database, "
            f"{pruned} run(s) of pruned segments checked by their records |"
        )
        print(
            f"| export (every event) | {export_wall:.2f} | {export_cpu:.2f} | "
            f"{exported} events (the pruned ones are not there) |"
        )
        print(
            f"| start to READY | {start_wall:.2f} | {start_cpu:.2f} | open, verify "
            f"{start_rows} rows from the verified head, replay {recovered.inputs} inputs "
            f"from the snapshot |"
        )
        if year.growth:
            print(
                "\nPython memory between rows (tracemalloc: traced; the lines that changed most):"
            )
            print("\n".join(year.growth))


def _range(text: str) -> tuple[int, int]:
    first, last = text.split(":")
    return int(first), int(last)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=200_000)
    parser.add_argument("--budget", type=int, default=2 * 1024**3, help="max_bytes")
    parser.add_argument("--live-hands", type=int, default=50)
    parser.add_argument("--inbox-seconds", type=float, default=3600.0)
    parser.add_argument("--round", type=int, default=100, help="hands between rounds")
    parser.add_argument("--every", type=int, default=20_000, help="hands between rows")
    parser.add_argument("--pit-down", type=_range, default=None, help="FROM:TO hands")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=None, help="where the journal is written")
    parser.add_argument("--trace", action="store_true", help="tracemalloc between rows")
    parser.add_argument("--trace-top", type=int, default=5, help="lines shown a row")
    main(parser.parse_args())
