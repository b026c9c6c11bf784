"""The pit against real tables: events stored exactly once, in order, through restarts, kills
and gaps; the API reads them back."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.authority import Role
from controller.shell.journal import Journal
from simulators.dealer_console import AutoConsole
from tests.integration.broker import Broker
from tests.integration.conftest import DaemonProcess
from tests.integration.pit import PitProcess, wait_stored

pytestmark = [pytest.mark.broker]


@pytest.fixture
def pit_factory(tmp_path: Path, broker: Broker) -> Iterator[Any]:
    """Make pit processes in this test's directory; all are killed at the end."""
    made: list[PitProcess] = []

    def make(name: str = "pit", **kwargs: Any) -> PitProcess:
        pit = PitProcess(tmp_path / name, broker, **kwargs)
        made.append(pit)
        return pit

    yield make
    for pit in made:
        pit.close()


async def play(daemon: DaemonProcess, port: int, hands: int) -> None:
    async with aiomqtt.Client("127.0.0.1", port, protocol=aiomqtt.ProtocolVersion.V5) as client:
        console = AutoConsole(client, daemon.topics, retry=1.0, sign=daemon.sign)
        await console.start()
        assert await console.play(hands=hands, timeout=90) == hands
        await console.stop()


def journal_seqs(daemon: DaemonProcess) -> tuple[str, list[int]]:
    journal = Journal.open_existing(daemon.journal)
    try:
        return journal.epoch, [row.key for row in journal.events()]
    finally:
        journal.close()


async def test_a_table_s_events_are_stored_once_in_order_and_read_back(
    daemon_factory: Any, pit_factory: Any, broker: Broker
) -> None:
    daemon = daemon_factory("table", table="T1")
    pit = pit_factory(key=daemon.keys.key_file(Role.PIT))
    pit.add_user()
    pit.start()
    daemon.start()
    await play(daemon, broker.port, hands=1)
    epoch, seqs = journal_seqs(daemon)
    await wait_stored(pit.store_url, "T1", epoch, seqs, timeout=20)

    tables = pit.json("/api/tables")
    assert [t["table_id"] for t in tables] == ["T1"]
    assert tables[0]["online"] is True
    assert tables[0]["epoch"] == epoch
    assert tables[0]["last_seq"] == seqs[-1]
    events = pit.json(f"/api/tables/T1/events?since_seq={seqs[2]}")
    assert [e["seq"] for e in events] == seqs[3:]
    hands = pit.json("/api/hands?table=T1")
    assert [h["outcome"] for h in hands] == ["completed"]
    status, phh = pit.get(f"/api/hands/{hands[0]['hand_id']}/phh")
    assert status == 200
    assert b'variant = "NT"' in phh
    assert pit.get("/api/tables", auth=False)[0] == 401
    openapi = json.loads(pit.get("/openapi.json", auth=False)[1])
    assert "/api/hands/{hand_id}/phh" in openapi["paths"]
    assert pit.stop(signal.SIGTERM) == 0
