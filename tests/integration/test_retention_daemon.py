"""Retention in a real daemon process: closed hands archived, the budget waiting for the pit,
and the pit's signed ``stored`` request (through the broker and the gate) letting it prune.

The daemon starts on a journal of 40 hands (written by the table's runner, every event
acknowledged) with ``live_hands = 3`` and a 1 MiB budget: its first rounds archive most hands
into segments and, with nothing confirmed, raise ``journal.retention`` on the status topic and
in ``STATUS=``. Bad ``stored`` requests are refused and the daemon goes on; the pit's good one
lets the next round prune, the alarm clears, ``tablectl journal verify`` checks segments and
live rows as one chain and names the pruned range, and the daemon starts again on it.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.authority import Role
from controller.shell.journal import Journal
from controller.signing import load_private_key, sign_request
from tests.integration.conftest import REPO, Collector, DaemonProcess
from tests.integration.requester import Requester
from tests.waiting import until

pytestmark = [pytest.mark.broker, pytest.mark.timeout(600)]

WAITING = "bytes waiting for the pit/archive"


def prebuilt(played: Path, directory: Path) -> Path:
    """A copy of the run's journal of 40 hands, every event acknowledged (the
    ``played_journal`` fixture), in ``directory``: the daemon's journal."""
    path = directory / "journal.sqlite"
    directory.mkdir(parents=True)
    shutil.copyfile(played, path)
    return path


def epoch_and_last(path: Path) -> tuple[str, int]:
    journal = Journal.open_existing(path)
    try:
        return journal.epoch, journal.epoch_last(journal.epoch) or 0
    finally:
        journal.close()


def signed(daemon: DaemonProcess, role: Role, body: dict[str, Any]) -> bytes:
    private = load_private_key(daemon.keys.key_file(role))
    key = f"rig-{role.value}"
    return json.dumps(sign_request(private, key, "stored", daemon.table, body)).encode()


def retention_alarm(collector: Collector) -> dict[str, Any] | None:
    if not collector.status:
        return None
    alarms = collector.status[-1].get("alarms", [])
    return next((a for a in alarms if a["alarm"] == "journal.retention"), None)


def pruned(path: Path) -> list[str]:
    journal = Journal.open_existing(path)
    try:
        return [s.name for s in journal.pruned()]
    finally:
        journal.close()


async def test_the_daemon_archives_waits_for_the_pit_then_prunes(
    daemon_factory: Any, broker: Any, played_journal: Path, tmp_path: Path
) -> None:
    path = prebuilt(played_journal, tmp_path / "prebuilt")
    extra = "live_hands = 3\nmax_bytes = 1048576\nretention_interval = 0.2\n"
    daemon: DaemonProcess = daemon_factory("retention", journal=path, journal_extra=extra)
    async with Collector(broker, daemon.topics, identifier="retention-watch") as collector:
        daemon.start()
        daemon.wait_status(WAITING, 120)
        await until(
            lambda: retention_alarm(collector) is not None,
            60,
            "the retention alarm on the status topic",
            every=0.1,
        )
        alarm = retention_alarm(collector)
        assert alarm is not None
        assert alarm["detail"].startswith("retention: ")
        assert WAITING in alarm["detail"]
        segments = sorted((path.parent / "journal.segments").glob("*.seg"))
        assert segments  # (the 2,048 inputs before the snapshot stay live)
        assert pruned(path) == []  # nothing is deleted before the pit has it
        epoch, last = epoch_and_last(path)
        body = {"transaction": "s-1", "pit": "pit-1", "epoch": epoch, "seq": last}
        async with (
            aiomqtt.Client("127.0.0.1", broker.port, protocol=aiomqtt.ProtocolVersion.V5) as c,
            Requester(c, daemon.topics) as requests,
        ):
            refused = {
                "unsigned": await requests.request("stored", {**body, "transaction": "u"}),
                "may not give stored": await requests.request_raw(
                    "stored", signed(daemon, Role.DEALER, {**body, "transaction": "d"})
                ),
                "is not this journal's": await requests.request_raw(
                    "stored", signed(daemon, Role.PIT, {**body, "epoch": "x", "transaction": "e"})
                ),
                "beyond the last event": await requests.request_raw(
                    "stored", signed(daemon, Role.PIT, {**body, "seq": 10**9, "transaction": "f"})
                ),
                "seq": await requests.request_raw("stored", b'{"transaction": "g", "seq": "1"}'),
            }
            for reason, answer in refused.items():
                assert answer["status"] == "error", reason
            for reason in ("may not give stored", "is not this journal's", "beyond the last"):
                assert any(reason in a["error"] for a in refused.values()), reason
            assert pruned(path) == []
            ok = await requests.request_raw("stored", signed(daemon, Role.PIT, body))
            assert ok["status"] == "ok", ok
            assert ok["data"] == {"epoch": epoch, "seq": last}
        await until(
            lambda: pruned(path) != [],
            60,
            "a pruned segment after the pit's confirmation",
            every=0.1,
        )
        await until(
            lambda: retention_alarm(collector) is None,
            60,
            "the retention alarm to clear",
            every=0.1,
        )
    assert daemon.kill(signal.SIGTERM) == 0
    verify = subprocess.run(
        [sys.executable, "-m", "controller.cli", "journal", "verify", "--journal", str(path)],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stderr
    assert "pruned (1 segment): confirmed stored by the pit" in verify.stdout
    assert "archive segment(s)" in verify.stdout
    daemon.start()  # a start on the pruned journal: from its snapshot, READY
    assert daemon.kill(signal.SIGTERM) == 0
