"""A journal rolled back under the daemon (SIGKILL, then its WAL deleted): no event id reused.

The first run ends with an ordered stop, so its journal is all in the database file. The second
run plays a hand (in the WAL only) and is killed; the WAL is deleted, which loses that hand. The
third run finds the broker's retained head ahead of its journal, begins a new epoch, raises the
integrity alarm naming the lost ids, and plays on. A subscriber that kept every event sees no
event id with two different bodies.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from controller.mqtt import Client
from controller.shell.chain import Head
from controller.shell.journal import Journal
from simulators.dealer_console import AutoConsole
from tests.integration.conftest import Collector, DaemonProcess

# three daemons and whole hands: minutes when every core is busy
pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(600)]

STACKS = "{ 1 = 10000, 2 = 10000, 3 = 10000 }"


async def play(daemon: DaemonProcess, port: int, hands: int) -> dict[str, Any]:
    async with Client("127.0.0.1", port) as client:
        console = AutoConsole(client, daemon.topics, retry=1.0, sign=daemon.sign)
        await console.start()
        assert await console.play(hands=hands, timeout=240) == hands
        await console.stop()
        assert console.snapshot is not None
        return console.snapshot


def without_delivery(body: dict[str, Any]) -> dict[str, Any]:
    """An envelope without what may differ between two deliveries of the same event."""
    return {k: v for k, v in body.items() if k != "historical"}


async def test_a_lost_wal_begins_a_new_epoch_and_no_event_id_gets_two_bodies(
    daemon_factory: Any, broker: Any
) -> None:
    daemon = daemon_factory("rolled", table="TR", stacks=STACKS)
    async with Collector(broker, daemon.topics, identifier="every-id") as collector:
        daemon.start()
        await play(daemon, broker.port, hands=1)
        assert daemon.kill(signal.SIGTERM) == 0  # ordered: the WAL is folded into the file

        daemon.start()
        before = await play(daemon, broker.port, hands=1)
        epoch, published = before["epoch"], before["seq"]
        await collector.wait_for(
            lambda c: any(e["epoch"] == epoch and e["seq"] >= published for e in c.public)
        )
        daemon.kill(signal.SIGKILL)
        for suffix in ("-wal", "-shm"):
            daemon.journal.with_name(daemon.journal.name + suffix).unlink(missing_ok=True)
        journal = Journal.open_existing(daemon.journal)
        kept = journal.last_seq()
        journal.close()
        assert kept < published  # the second hand is gone from the journal

        daemon.start()
        await collector.wait_for(
            lambda c: any(e["type"] == "journal.epoch.started" for e in c.public)
        )
        after = await play(daemon, broker.port, hands=1)
        await collector.wait_for(
            lambda c: any(
                e["epoch"] == after["epoch"] and e["seq"] >= after["seq"] for e in c.public
            )
        )
        assert daemon.kill(signal.SIGTERM) == 0

    bodies: dict[str, dict[str, Any]] = {}
    for body in collector.public + collector.secure:
        key = f"{'secure' if body in collector.secure else 'public'}:{body['event_id']}"
        first = bodies.setdefault(key, without_delivery(body))
        assert first == without_delivery(body), f"{body['event_id']} came with two bodies"
    # a new epoch, its first event says why, and the alarm names what the broker holds alone
    assert after["epoch"] != epoch
    started = next(e for e in collector.public if e["type"] == "journal.epoch.started")
    assert started["epoch"] == after["epoch"]
    assert started["data"]["previous"] == epoch
    assert started["data"]["reason"] == "rollback"
    alarm = next(
        e
        for e in collector.public
        if e["type"] == "integrity.alarm" and e["data"].get("journal") == "rollback"
    )
    assert alarm["severity"] == "critical"
    assert alarm["epoch"] == after["epoch"]
    kept_seq = kept  # one epoch until now: the journal key is the seq
    assert alarm["data"]["lost"] == {"epoch": epoch, "from_seq": kept_seq + 1, "to_seq": published}
    new_epoch = sorted(e["seq"] for e in collector.public if e["epoch"] == after["epoch"])
    assert new_epoch == list(range(1, len(new_epoch) + 1))  # from 1, without a gap
    # the status topic carried the alarm while it was raised
    raised = [a for s in collector.status for a in s.get("alarms", [])]
    rollback = [a for a in raised if a["alarm"] == "journal.integrity" and a["kind"] == "rollback"]
    assert rollback
    assert not any(a["held"] for a in rollback)  # the table went on
    assert not any(s.get("degraded") for s in collector.status)
    # each hand.completed carries the chain head at it, and it is the journal's
    completed = [e for e in collector.public if e["type"] == "hand.completed"]
    assert all("chain" not in e for e in collector.public if e["type"] != "hand.completed")
    journal = Journal.open_existing(daemon.journal)
    try:
        assert journal.verify().ok
        assert [e.name for e in journal.epochs] == [epoch, after["epoch"]]
        first = {e.name: e.first_seq for e in journal.epochs}
        stamped = [e for e in completed if e["epoch"] == after["epoch"]]
        assert stamped
        for event in stamped:
            row = journal.chain_of(first[event["epoch"]] + event["seq"] - 1)
            assert row == Head(event["chain"]["pos"], event["chain"]["hash"])
    finally:
        journal.close()
