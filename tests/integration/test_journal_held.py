"""A journal edited while the daemon was stopped: the table is held until maintenance decides.

The daemon verifies the chain at start (from the last verified head), finds the edit, and does
not go READY: systemd hears the alarm in STATUS and start-timeout extensions, the pit sees the
alarm on the retained status and as a critical event, and every request is answered with the
alarm. Maintenance's signed ``journal_accept`` (``tablectl dealer --signing-key …``) accepts
the journal as it is: READY=1, a new epoch from seq 1, the break listed as accepted by
``journal verify``, and the next start goes READY without a hold.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

from controller.authority import Role
from controller.mqtt import Client
from controller.shell.client import DealerClient
from simulators.dealer_console import AutoConsole
from tests.integration.conftest import REPO, Collector, DaemonProcess

# several daemons and whole hands: minutes when every core is busy
pytestmark = [pytest.mark.broker, pytest.mark.timeout(600), pytest.mark.slow]

STACKS = "{ 1 = 10000, 2 = 10000, 3 = 10000 }"
HELD = "EXTEND_TIMEOUT_USEC=30000000"


def held_alarm(status: dict[str, Any]) -> dict[str, Any] | None:
    """The integrity alarm holding the table, on a status message (None: none)."""
    return next(
        (a for a in status.get("alarms", []) if a["alarm"] == "journal.integrity" and a["held"]),
        None,
    )


async def play(daemon: DaemonProcess, port: int, hands: int) -> dict[str, Any]:
    async with Client("127.0.0.1", port) as client:
        console = AutoConsole(client, daemon.topics, retry=1.0, sign=daemon.sign)
        await console.start()
        assert await console.play(hands=hands, timeout=240) == hands
        await console.stop()
        assert console.snapshot is not None
        return console.snapshot


def tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


async def test_an_edited_journal_holds_the_table_until_maintenance_accepts_it(
    daemon_factory: Any, broker: Any
) -> None:
    daemon = daemon_factory("held", table="TH", stacks=STACKS)
    daemon.start()
    before = await play(daemon, broker.port, hands=1)
    assert daemon.kill(signal.SIGTERM) == 0
    with sqlite3.connect(daemon.journal) as conn:  # someone changes a stack on record
        conn.execute(
            'UPDATE events SET body = replace(body, \'"stacks":{"1":\', \'"stacks":{"1":1\')'
            " WHERE type = 'hand.completed'"
        )

    async with Collector(broker, daemon.topics, identifier="held-watch") as collector:
        daemon.start(until=HELD)
        status = next(line for line in daemon.notified() if line.startswith("STATUS="))
        assert "integrity alarm (chain)" in status
        assert "journal_accept" in status
        assert "READY=1" not in daemon.notified()
        await collector.wait_for(
            lambda c: (
                any(e["type"] == "integrity.alarm" for e in c.public)
                and any(held_alarm(s) for s in c.status)
            )
        )
        status_alarm = next(a for s in collector.status if (a := held_alarm(s)) is not None)
        assert status_alarm["kind"] == "chain"
        assert status_alarm["detail"].startswith("integrity alarm (chain)")
        assert next(s for s in collector.status if held_alarm(s))["degraded"] is True
        alarm = next(e for e in collector.public if e["type"] == "integrity.alarm")
        assert alarm["severity"] == "critical"
        assert alarm["data"]["journal"] == "chain"
        assert any("hand.completed" not in p and "edited" in p for p in alarm["data"]["problems"])

        async with Client("127.0.0.1", broker.port) as client:
            dealer = DealerClient(client, daemon.topics)
            await dealer.start()
            refused = await dealer.send("start_hand", {}, timeout=60, sign=daemon.sign)
            await dealer.stop()
        assert refused["status"] == "error"
        assert "integrity alarm" in refused["error"]
        assert "journal_accept" in refused["error"]

        # a dealer may not decide it; maintenance does
        common = ("dealer", "--broker", broker.url, "--table", daemon.table, "--timeout", "60")
        denied = await asyncio.to_thread(
            tablectl, *common, *daemon.key_args(Role.DEALER), "journal_accept", "reason=fine"
        )
        assert denied.returncode == 1
        assert "may not give journal_accept" in json.loads(denied.stdout)["error"]
        accepted = await asyncio.to_thread(
            tablectl,
            *common,
            *daemon.key_args(Role.MAINTENANCE),
            "journal_accept",
            "reason=edit traced to a test; the rest checked against the pit",
        )
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        await asyncio.to_thread(daemon.wait_notify, "READY=1", 60)
        await collector.wait_for(
            lambda c: any(e["type"] == "journal.epoch.started" for e in c.public)
        )
        after = await play(daemon, broker.port, hands=1)
        await collector.wait_for(
            lambda c: any(
                e["epoch"] == after["epoch"] and e["seq"] >= after["seq"] for e in c.public
            )
        )
    decision = next(e for e in collector.public if e["type"] == "journal.accepted")
    assert decision["by"] == {"person": "rig technician", "role": "maintenance"}
    assert decision["epoch"] == before["epoch"]  # the last event of the old epoch
    assert after["epoch"] == decision["data"]["epoch"] != before["epoch"]
    new_epoch = sorted(e["seq"] for e in collector.public if e["epoch"] == after["epoch"])
    assert new_epoch == list(range(1, len(new_epoch) + 1))
    assert daemon.kill(signal.SIGTERM) == 0

    verify = await asyncio.to_thread(
        tablectl, "journal", "verify", "--journal", str(daemon.journal)
    )
    assert verify.returncode == 0, verify.stderr
    assert "accepted by maintenance" in verify.stdout
    assert "edited" in verify.stdout
    daemon.start()  # decided once: the next start is not held
    assert not any(line == HELD for line in daemon.notified())
    assert daemon.kill(signal.SIGTERM) == 0
