"""A table's life in its journal, played by whichever tablectl is installed (run with a venv's
python, from outside the checkout: tests/packaging/test_upgrade.py runs it under an earlier
build and the current one in turn).

``python table_life.py JOURNAL HANDS BUDGET`` starts the table as the daemon does (the journal
opened, then recovered: from its newest snapshot, else from its genesis), then deals HANDS more
hands with the automatic dealer, ten simulated minutes apart, each through the table's runner
into the journal; every ten hands the broker takes the outbox, the pit confirms every event and
a retention round archives and prunes within BUDGET bytes. It prints one JSON line: what the
start found and what the journal holds at the end. A start that fails prints its one line on
stderr and exits 3.

Only what every build since the snapshot format's introduction has (the simulators' endless
dealer and journal runner, the retention round, ``confirm_stored``) is used, so that the same
file drives the earlier build and the current one.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import controller
from controller.shell.journal import JournalError
from controller.shell.maintenance import Stored
from controller.shell.retention import Retention, RetentionConfig, confirm_stored
from controller.table.codec import input_from_json
from simulators.table_journal import endless_dealer, journal_runner

GAP = timedelta(minutes=10)


async def play(path: Path, hands: int, budget: int) -> dict[str, Any]:
    dealer = endless_dealer("life", 7, stack=10**6)
    runner = journal_runner(path, dealer)
    journal = runner.journal
    epochs = [e.name for e in journal.epochs]
    last_seq = journal.last_seq()
    try:
        report = runner.recover()
    except JournalError as exc:
        journal.close()
        print(str(exc).splitlines()[0], file=sys.stderr)
        raise SystemExit(3) from None
    start = {
        "snapshot": report.snapshot,
        "snapshot_format": getattr(report, "snapshot_format", ""),
        "replayed": report.inputs,
        "diverged": report.diverged,
    }
    # the dealer goes on from the table as the start left it, after the last input's time
    last = None
    for row in journal.inputs(max(0, report.snapshot - 1)):
        last = row
    dealer.run.state = runner.state
    if last is not None:
        dealer.now = input_from_json(last.body).ts
    retention = Retention(
        journal, RetentionConfig(live_hands=5, max_bytes=budget, interval=0, inbox_seconds=60)
    )
    first_seq = None
    for hand in range(1, hands + 1):
        dealer.now += GAP
        assert dealer.play_hand()
        for item in dealer.run.inputs:
            appended = await runner.submit(item)
            if first_seq is None and appended is not None and appended.seqs:
                first_seq = appended.seqs[0]
        dealer.run.inputs.clear()
        dealer.run.events.clear()
        if hand % 10 == 0 or hand == hands:
            await runner.writer.call(_round, journal, retention, dealer.now)
    found = {
        "version": controller.__version__,
        "start": start,
        "epochs_before": epochs,
        "epochs": [e.name for e in journal.epochs],
        "last_seq_before": last_seq,
        "first_seq": first_seq,
        "last_seq": journal.last_seq(),
        "hands_started": runner.state.hands_started,
        "stacks": sum(runner.state.stacks.values()),
        # the chain's positions pruned so far (the records of pruned segments may be merged)
        "pruned_through": max((s.last_pos for s in journal.pruned()), default=0),
    }
    await runner.writer.close()
    return found


def _round(journal: Any, retention: Retention, now: datetime) -> None:
    journal.forget([row.id for row in journal.pending(1_000_000)])  # the broker took them
    journal.delete_outbox()
    epoch, seq = journal.event_id(journal.last_seq())
    confirm_stored(journal, Stored(datetime.now(UTC), "pit-1", epoch, seq))
    retention.run_once(now)


if __name__ == "__main__":
    journal_path, count, limit = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(asyncio.run(play(journal_path, count, limit))))
