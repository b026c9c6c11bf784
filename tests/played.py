"""Journals written by the table's runner with the automatic dealer, and the one the retention
tests start from: forty hands whose events the broker acknowledged (an empty outbox).

That journal takes seconds to write (some 6,000 inputs, each a transaction of the journal's
writer thread) and four modules start from it (tests/shell/test_retention.py and
test_pruned_runs.py, tests/integration/test_retention_daemon.py and test_pit_failover.py): the
``played_journal`` fixture of tests/conftest.py writes it once a run (tests/once.py) and each
test copies the file.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from controller.table.inputs import Input
from simulators.table_journal import endless_dealer, journal_runner

HANDS = 40
#: The journal's file in the directory :func:`write_played` fills.
JOURNAL = "journal.sqlite"


def inputs_of(hands: int) -> list[Input]:
    """The inputs of ``hands`` hands of the automatic dealer (the same every time)."""
    auto = endless_dealer("retention")
    for _ in range(hands):
        assert auto.play_hand()
    return list(auto.run.inputs)


async def write(path: Path, inputs: list[Input]) -> None:
    """A new journal at ``path`` holding ``inputs``, written by the table's runner."""
    runner = journal_runner(path, endless_dealer("retention"))
    for item in inputs:
        await runner.submit(item)
    await runner.writer.close()


def write_played(directory: Path) -> None:
    """The journal of :data:`HANDS` hands, every event acknowledged, in ``directory``."""
    path = directory / JOURNAL
    asyncio.run(write(path, inputs_of(HANDS)))
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM outbox")
    conn.commit()
    conn.close()  # (its WAL checkpointed: the tests copy the database file alone)
