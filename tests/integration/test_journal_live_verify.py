"""``tablectl journal verify`` on a journal a real daemon is writing: no false alarm.

Each verify reads the whole chain in one read transaction, so rows committed while it reads are
either all in its snapshot or all out of it. Before that, each table was read in its own
statement and a commit between two of them looked like a deleted row (or a lost end).

The verifies run back to back in a process of their own while an automatic console plays hands
through the daemon, until there were at least ``VERIFIES`` of them and they saw the journal at
``COMMITS`` different lengths (so they did meet the daemon writing).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt import Client
from controller.shell.journal import Journal
from simulators.dealer_console import AutoConsole
from tests.integration.conftest import REPO

# a daemon playing while a hundred verifies run: minutes when every core is busy
pytestmark = [pytest.mark.broker, pytest.mark.timeout(600)]

VERIFIES = 100
COMMITS = 20

LOOP = """
import json, sys
from controller.shell.journal import Journal
path, verifies, commits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows, problems = [], []
while len(rows) < verifies or len(set(rows)) < commits:
    journal = Journal.open_existing(__import__("pathlib").Path(path))
    try:
        report = journal.verify()
    finally:
        journal.close()
    rows.append(report.rows)
    problems += report.problems
    if problems or len(rows) > 100_000:
        break
print(json.dumps({"rows": rows, "problems": problems}))
"""


def rows_of(path: Path) -> int:
    journal = Journal.open_existing(path)
    try:
        return sum(journal.counts()[t] for t in ("inputs", "events", "commands", "dispatches"))
    finally:
        journal.close()


async def test_verify_while_the_daemon_writes_never_reports_tampering(
    daemon_factory: Any, broker: Any
) -> None:
    daemon = daemon_factory("live", table="TV", stacks="{ 1 = 100000, 2 = 100000, 3 = 100000 }")
    daemon.start()
    async with Client("127.0.0.1", broker.port) as c:
        console = AutoConsole(c, daemon.topics, retry=1.0, sign=daemon.sign)
        await console.start()
        playing = asyncio.create_task(console.play(hands=1000, timeout=500))
        try:
            while rows_of(daemon.journal) < 300:  # a few hands in: each verify takes a while
                await console.wait_snapshot((console.snapshot or {"seq": 0})["seq"] + 1, 60.0)
            verifier = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                LOOP,
                str(daemon.journal),
                str(VERIFIES),
                str(COMMITS),
                cwd=REPO,
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await asyncio.wait_for(verifier.communicate(), 400)
            assert verifier.returncode == 0
            # the command line too, as an operator runs it
            cli = await asyncio.create_subprocess_exec(
                sys.executable,
                *("-m", "controller.cli", "journal", "verify", "--journal", str(daemon.journal)),
                cwd=REPO,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(cli.communicate(), 120)
            assert cli.returncode == 0, err.decode()
        finally:
            playing.cancel()
            await asyncio.gather(playing, return_exceptions=True)
            await console.stop()
    result = json.loads(out)
    assert result["problems"] == [], result["problems"][:5]
    assert len(result["rows"]) >= VERIFIES
    assert len(set(result["rows"])) >= COMMITS
    assert daemon.kill(signal.SIGTERM) == 0
