"""The broker goes away in the middle of a hand and comes back: nothing lost, order kept."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt import Client
from simulators.dealer_console import AutoConsole
from tests.integration.conftest import Collector, unique_seqs

pytestmark = pytest.mark.broker


def journal_types(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        return list(conn.execute("SELECT seq, type FROM events ORDER BY seq"))


def wait_journal(path: Path, event_type: str, timeout: float = 20.0) -> int:
    """Poll the journal until an event of ``event_type`` is there; return its seq."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for seq, kind in journal_types(path):
            if kind == event_type:
                return seq
        time.sleep(0.02)
    raise AssertionError(f"no {event_type} in the journal within {timeout} s")


async def test_events_during_an_outage_arrive_late_in_order_marked_historical(
    daemon_factory: Any, broker: Any
) -> None:
    daemon = daemon_factory(event_delay=0.05)
    async with Collector(broker, daemon.topics) as collector:
        daemon.start()
        async with Client("127.0.0.1", broker.port) as client:
            console = AutoConsole(client, daemon.topics, sign=daemon.sign)
            await console.start()
            await console.wait_snapshot(0, 10)
            await console.send("start_hand")
            await console.stop()
        # the broker dies while the shuffler deals: the events wait in the outbox
        broker.stop()
        daemon.wait_status("broker down", 20)  # from here on the daemon knows of the outage
        outage_started = len(journal_types(daemon.journal))
        complete = wait_journal(daemon.journal, "deal.complete")
        assert complete > outage_started
        broker.start()

        async with Client("127.0.0.1", broker.port) as client:
            console = AutoConsole(client, daemon.topics, sign=daemon.sign)
            await console.start()
            assert await console.play(hands=1, timeout=180) == 1
            await console.stop()

        expected = [seq for seq, _ in journal_types(daemon.journal)]
        try:
            await collector.wait_for(lambda c: len(unique_seqs(c.public)) >= len(expected))
        except TimeoutError:
            print("GOT", unique_seqs(collector.public), "EXPECTED", expected)
            raise

    assert unique_seqs(collector.public) == expected == list(range(1, len(expected) + 1))
    first: dict[int, dict[str, Any]] = {}
    for body in collector.public:
        first.setdefault(body["seq"], body)
    late = [seq for seq, body in first.items() if body["historical"]]
    assert set(range(outage_started + 1, complete + 1)) <= set(late)  # dealt in the outage
    assert late == list(range(late[0], late[-1] + 1))  # one stretch: the outage
    assert not first[expected[-1]]["historical"]  # live again after the broker came back
    assert first[expected[-1]]["type"] == "hand.completed"
    # the daemon reconnected with a new birth
    online = [s for s in collector.status if s["state"] == "online"]
    assert len({s["bdseq"] for s in online}) >= 2
