"""The pit against real tables: events stored exactly once, in order, through restarts, kills
and gaps; the API reads them back."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.authority import Role
from controller.mqtt import Client, MqttError
from controller.shell.client import DealerClient
from controller.shell.journal import Journal
from controller.signing import Signer
from controller.table.codec import event_from_json
from simulators.dealer_console import AutoConsole
from tests.integration.broker import Broker
from tests.integration.conftest import DaemonProcess
from tests.integration.pit import PitProcess, stored_seqs, wait_stored
from tests.postgres import PostgresServer

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
    async with Client("127.0.0.1", port) as client:
        console = AutoConsole(client, daemon.topics, retry=1.0, sign=daemon.sign)
        await console.start()
        try:
            assert await console.play(hands=hands, timeout=90) == hands
        finally:
            with contextlib.suppress(MqttError):  # its reader saw the broker go
                await console.stop()


def completed_hands(daemon: DaemonProcess) -> int:
    journal = Journal.open_existing(daemon.journal)
    try:
        return sum(1 for row in journal.events() if '"hand.completed"' in row.body)
    finally:
        journal.close()


async def play_through(daemon: DaemonProcess, broker: Broker, hands: int) -> None:
    """Play ``hands`` hands whatever happens to the broker: a console that loses it starts
    again, and finishes the hand in progress."""
    async with asyncio.timeout(120):
        while (done := await asyncio.to_thread(completed_hands, daemon)) < hands:
            try:
                await play(daemon, broker.port, hands - done)
            except (MqttError, TimeoutError):
                await asyncio.sleep(0.2)


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


async def test_replay_requests_are_refused_unless_signed_by_a_pit_key(
    daemon_factory: Any, broker: Broker
) -> None:
    daemon = daemon_factory("table", table="T2")
    daemon.start()
    await play(daemon, broker.port, hands=1)
    epoch, seqs = journal_seqs(daemon)
    fields = {"pit": "pit-x", "epoch": epoch, "from_seq": 2, "to_seq": 4}

    def signed_by(role: Role) -> Any:
        signer = daemon.keys.signers[role]
        return lambda command, body: Signer(signer.private, signer.key_id, "T2").sign(command, body)

    replayed: list[dict[str, Any]] = []
    async with Client("127.0.0.1", broker.port) as client:
        dealer = DealerClient(
            client,
            daemon.topics,
            other=lambda message: replayed.append(json.loads(message.payload)),
        )
        await client.subscribe(f"{daemon.topics.base}/replay/pit-x", qos=1)
        await dealer.start()
        unsigned = await dealer.send("replay", fields)
        assert unsigned["status"] == "error"
        assert "unsigned" in unsigned["error"]
        by_dealer = await dealer.send("replay", fields, sign=signed_by(Role.DEALER))
        assert by_dealer["status"] == "error"
        assert "may not give replay" in by_dealer["error"]
        secure = await dealer.send(
            "replay", {**fields, "stream": "secure"}, sign=signed_by(Role.PIT)
        )
        assert "surveillance" in secure["error"]
        other_epoch = await dealer.send(
            "replay", {**fields, "epoch": "nope"}, sign=signed_by(Role.PIT)
        )
        assert "not this journal's" in other_epoch["error"]
        assert replayed == []
        by_pit = await dealer.send("replay", fields, sign=signed_by(Role.PIT))
        assert by_pit["status"] == "ok", by_pit
        assert by_pit["data"]["sent"] == 3
        assert by_pit["data"]["missing"] == []
        assert by_pit["data"]["last_seq"] >= seqs[-1]
        async with asyncio.timeout(10):
            while len(replayed) < 3:
                await asyncio.sleep(0.05)
        await dealer.stop()
    assert [(e["seq"], e["historical"]) for e in replayed] == [(2, True), (3, True), (4, True)]
    journal = Journal.open_existing(daemon.journal)
    try:
        rejected = [
            event_from_json(row.body)
            for row in journal.events()
            if event_from_json(row.body).type == "command.rejected"
        ]
    finally:
        journal.close()
    reasons = [e.data["reason"] for e in rejected if e.data["command"] == "replay"]
    assert len(reasons) == 3  # unsigned, a dealer's, the secure view; the other epoch is answered
    _, after = journal_seqs(daemon)
    assert len(after) == len(seqs) + 3  # the refusals only: an answered replay journals nothing


async def test_messages_the_broker_dropped_are_replayed_by_the_table(
    tmp_path: Path, pit_factory: Any
) -> None:
    # a broker that keeps only 5 messages for a client that is away: the rest are dropped
    directory = tmp_path / "small-broker"
    directory.mkdir()
    small = Broker(directory, extra="persistence false\nmax_queued_messages 5")
    small.start()
    try:
        daemon = DaemonProcess(tmp_path / "table", small, table="T3")
        pit = PitProcess(
            tmp_path / "pit", small, key=daemon.keys.key_file(Role.PIT), repair_after=0.5
        )
        try:
            pit.start()  # its session and subscriptions exist from now on
            assert pit.stop(signal.SIGTERM) == 0
            daemon.start()
            await play(daemon, small.port, hands=1)
            epoch, seqs = journal_seqs(daemon)
            pit.start()
            await wait_stored(pit.store_url, "T3", epoch, seqs, timeout=30)
            status, metrics = pit.get("/metrics", auth=False)
            assert status == 200
            asked = _metric(metrics, "tablectl_pit_replays_asked_total")
            assert asked >= 1
            assert _metric(metrics, "tablectl_pit_replayed_events_total") >= len(seqs) - 6
            pit.add_user()
            gaps = pit.json("/api/gaps?all=true")
            assert gaps
            assert {g["state"] for g in gaps} == {"repaired"}
        finally:
            pit.close()
            daemon.close()
    finally:
        small.stop()


async def test_nothing_is_lost_across_a_pit_kill_a_broker_restart_and_a_table_kill(
    daemon_factory: Any, pit_factory: Any, broker: Broker
) -> None:
    daemon = daemon_factory("table", table="T4")
    pit = pit_factory(key=daemon.keys.key_file(Role.PIT))
    pit.start()
    daemon.start()

    async def disturb() -> None:
        async def stored_at_least(count: int) -> None:
            async with asyncio.timeout(60):
                while True:
                    got = (await asyncio.to_thread(stored_seqs, pit.store_url, "T4")).values()
                    if sum(len(s) for s in got) >= count:
                        return
                    await asyncio.sleep(0.05)

        await stored_at_least(10)
        pit.stop(signal.SIGKILL)  # its commits in flight are never acknowledged
        await asyncio.sleep(0.3)
        await asyncio.to_thread(pit.start)
        await stored_at_least(30)
        await asyncio.to_thread(broker.stop)  # the pit's session is kept on disk
        await asyncio.sleep(0.3)
        await asyncio.to_thread(broker.start)
        await stored_at_least(45)
        daemon.kill(signal.SIGKILL)
        await asyncio.to_thread(daemon.start)

    disturbing = asyncio.create_task(disturb())
    await play_through(daemon, broker, hands=2)
    await disturbing
    epoch, seqs = journal_seqs(daemon)
    await wait_stored(pit.store_url, "T4", epoch, seqs, timeout=30)
    pit.add_user()
    tables = pit.json("/api/tables")
    assert tables[0]["last_seq"] == seqs[-1]
    births = pit.json("/api/tables/T4")["births"]
    assert {b["state"] for b in births} == {"online", "offline"}  # the kill's Last Will too
    assert [h["outcome"] for h in pit.json("/api/hands?table=T4")] == ["completed", "completed"]


def _metric(text: bytes, name: str) -> float:
    for line in text.decode().splitlines():
        if line.startswith((name + " ", name + "{")):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no metric {name}")


async def test_two_pits_in_one_share_group_fill_one_postgresql_store(
    daemon_factory: Any, pit_factory: Any, broker: Broker, postgres: PostgresServer
) -> None:
    url = postgres.new_database()
    daemon = daemon_factory("table", table="T5")
    key = daemon.keys.key_file(Role.PIT)
    pits = [pit_factory(f"pit-{n}", pit_id=f"pit-{n}", store_url=url, key=key) for n in (1, 2)]
    for pit in pits:
        pit.start()
    daemon.start()
    await play(daemon, broker.port, hands=1)
    epoch, seqs = journal_seqs(daemon)
    await wait_stored(url, "T5", epoch, seqs, timeout=30)
    shares = [
        _metric(pit.get("/metrics", auth=False)[1], "tablectl_pit_events_stored_total")
        for pit in pits
    ]
    assert sum(shares) == len(seqs)  # each event stored by one of them, once
    assert all(share > 0 for share in shares)  # and the broker shared them out
    pits[0].add_user()
    hands = pits[1].json("/api/hands?table=T5")
    assert [h["outcome"] for h in hands] == ["completed"]
