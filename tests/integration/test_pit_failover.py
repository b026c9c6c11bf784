"""Failover between the pit processes of a share group, and replays of an epoch a table closed
(docs/pit.md, "Presence and failover"; docs/mqtt.md, "Replays").

* Two pit processes on one store and a real table; ``[repair] after`` is ten minutes, so that a
  seq repaired during the test was repaired because a member went, not because it was late.
  pit-2 commits what it takes only every 5 s, so it holds some of the table's events when it is
  SIGKILLed. Its Last Will reaches pit-1, which takes over its share: it subscribes to the
  events itself and asks the table at once for what pit-2 held, and every event the table
  journaled is stored. Garbage and a foreign member on the pit status topics change nothing.
  pit-2 comes back, announces itself, and what its session kept is dropped as duplicates.
* A real table whose journal went on in a new epoch answers a replay of the epoch it closed from
  its archive segments, with the ids the events had; an epoch its journal never had is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.authority import Role
from controller.mqtt import Client
from controller.shell.client import DealerClient
from controller.shell.journal import Journal
from controller.signing import Signer
from controller.table.codec import event_from_json
from tests.integration.broker import Broker
from tests.integration.pit import PitProcess, stored_seqs, wait_stored
from tests.integration.test_pit import journal_seqs, play_through
from tests.integration.test_retention_daemon import prebuilt

pytestmark = [pytest.mark.broker, pytest.mark.timeout(400)]


def metric(pit: PitProcess, name: str) -> float | None:
    """One of the pit's metrics (None: the process does not answer, or has no such sample)."""
    status, body = pit.get("/metrics", auth=False)
    if status != 200:
        return None
    for line in body.decode().splitlines():
        if line.startswith((name + " ", name + "{")):
            return float(line.rsplit(" ", 1)[1])
    return None


async def eventually(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait until ``check`` (run in a thread: it may do I/O) is true, at most ``timeout`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await asyncio.to_thread(check):
        if loop.time() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        await asyncio.sleep(0.05)


def held_back(url: str, table: str) -> bool:
    """Whether a seq of the table is missing below one stored (a member holds it)."""
    return any(seqs and seqs[-1] > len(seqs) for seqs in stored_seqs(url, table).values())


def logged(pit: PitProcess, event: str) -> list[dict[str, Any]]:
    """The pit's JSON log lines of ``event`` (each after its syslog priority, ``<4>``)."""
    lines = (pit.directory / "pit.log").read_text(errors="replace").splitlines()
    found = []
    for line in lines:
        if f'"{event}"' in line:
            try:
                found.append(json.loads(line[line.index("{") :]))
            except ValueError:
                continue
    return [entry for entry in found if entry.get("event") == event]


def status(pit: str, state: str, group: str = "pit") -> bytes:
    body = {
        "pit": pit,
        "state": state,
        "group": group,
        "connected": "2026-12-04T10:00:00.000Z",
        "incarnation": "abc123",
    }
    return json.dumps(body).encode()


#: What reaches the pit status topics that is no member of this group going: changes nothing.
NOT_A_MEMBER_GOING = [
    ("tables/_pit/pit-9/status", b"not json"),
    ("tables/_pit/pit-8/status", status("pit-8", "offline", group="elsewhere")),
    ("tables/_pit/pit-7/status", status("pit-2", "offline")),  # another member's name
]


async def test_a_killed_pit_s_share_is_taken_over_and_its_gaps_repaired_at_once(
    daemon_factory: Any, broker: Broker, tmp_path: Path
) -> None:
    daemon = daemon_factory("table", table="T6")
    key = daemon.keys.key_file(Role.PIT)
    url = f"sqlite:///{tmp_path / 'pits.sqlite'}"
    one = PitProcess(
        tmp_path / "pit-1", broker, pit_id="pit-1", store_url=url, key=key, repair_after=600
    )
    two = PitProcess(
        tmp_path / "pit-2",
        broker,
        pit_id="pit-2",
        store_url=url,
        key=key,
        repair_after=600,
        batch_wait=5.0,
    )
    try:
        one.add_user()
        one.start()
        two.start()
        daemon.start()
        playing = asyncio.create_task(play_through(daemon, broker, hands=2))
        await eventually(lambda: held_back(url, "T6"), 60, "pit-2 to hold an event back")
        async with Client("127.0.0.1", broker.port) as client:
            for topic, payload in NOT_A_MEMBER_GOING:
                await client.publish(topic, payload, qos=1)
        two.stop(signal.SIGKILL)  # what it took and did not commit waits in its session
        await eventually(
            lambda: metric(one, "tablectl_pit_takeover") == 1, 30, "pit-1 to take over"
        )
        await playing
        epoch, seqs = journal_seqs(daemon)
        # only repairs can store what pit-2 held, and they were asked without waiting 600 s
        await wait_stored(url, "T6", epoch, seqs, timeout=60)
        assert metric(one, "tablectl_pit_members_away") == 1
        assert (metric(one, "tablectl_pit_replays_asked_total") or 0) >= 1
        gaps = one.json("/api/gaps?all=true")
        assert gaps
        assert {g["state"] for g in gaps} == {"repaired"}

        # pit-2 comes back and says so; what its session kept is stored already
        two.start()
        await eventually(
            lambda: metric(one, "tablectl_pit_members_away") == 0, 30, "pit-1 to hear pit-2"
        )
        await eventually(
            lambda: (metric(two, "tablectl_pit_duplicates_total") or 0) >= 1,
            30,
            "pit-2 to drop what its session kept",
        )
        await wait_stored(url, "T6", epoch, seqs, timeout=30)  # each once, nothing else
        # one member went, once: the garbage, the foreign member and the misnamed one were not
        assert metric(one, "tablectl_pit_members_lost_total") == 1
    finally:
        one.close()
        two.close()
    assert [e["member"] for e in logged(one, "pit.member.lost")] == ["pit-2"]
    assert [e["member"] for e in logged(one, "pit.member.back")] == ["pit-2"]
    assert len(logged(one, "pit.presence.refused")) == 2  # the foreign member is not refused


async def test_a_replay_of_an_epoch_the_table_closed_is_answered_from_its_segments(
    daemon_factory: Any, broker: Broker, played_journal: Path, tmp_path: Path
) -> None:
    path = prebuilt(played_journal, tmp_path / "prebuilt")  # 40 hands, all published
    extra = "live_hands = 3\nretention_interval = 0.2\n"
    daemon = daemon_factory("closed", journal=path, journal_extra=extra)
    # The table archives its closed hands first: a daemon archives nothing while one of its
    # integrity alarms stands (the rollback's below), so a first round that came after the
    # rollback archived nothing at all (a quiet machine connects to the broker before it).
    daemon.start()

    def archived() -> bool:  # the first events are in a segment file only
        with contextlib.closing(sqlite3.connect(path)) as conn:
            lowest = conn.execute("SELECT MIN(seq) FROM events").fetchone()[0]
        return lowest is not None and int(lowest) > 50

    await eventually(archived, 120, "the first hands archived")
    assert daemon.kill(signal.SIGTERM) == 0
    journal = Journal.open_existing(path)
    try:
        origin, closed, end = journal.origin, journal.epoch, journal.last_seq()
        kept = journal.events_between(1, 50)
    finally:
        journal.close()
    # The broker's retained head names events past the journal's end (a journal restored from
    # an older backup): at its next start the table goes on in a new epoch, and `closed` is
    # history.
    head = {"journal": origin, "epoch": closed, "seq": end + 10, "hash": "0" * 64}
    async with Client("127.0.0.1", broker.port) as client:
        await client.publish("tables/T1/head", json.dumps(head).encode(), qos=1, retain=True)
    daemon.start()

    def rolled_back() -> bool:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM epochs").fetchone()[0]) == 2

    await eventually(rolled_back, 60, "a new epoch")
    journal = Journal.open_existing(path)
    try:
        current = journal.epoch
        assert journal.events_between(1, 50) == kept  # read from the segment, as archived
        # where the closed epoch ends: at the last event checked against the broker (those of
        # the first start the broker never had, if it stopped before it connected, went on in
        # the new epoch)
        last = journal.epoch_last(closed) or 0
    finally:
        journal.close()
    assert current != closed
    assert 50 < last <= end

    signer = daemon.keys.signers[Role.PIT]

    def sign(command: str, body: dict[str, Any]) -> dict[str, Any]:
        return Signer(signer.private, signer.key_id, "T1").sign(command, body)

    replayed: list[dict[str, Any]] = []
    async with Client("127.0.0.1", broker.port) as client:
        dealer = DealerClient(
            client,
            daemon.topics,
            other=lambda message: replayed.append(json.loads(message.payload)),
        )
        await client.subscribe(f"{daemon.topics.base}/replay/pit-x", qos=1)
        await dealer.start()
        fields = {"pit": "pit-x", "epoch": closed, "from_seq": 1, "to_seq": 50}
        answer = await dealer.send("replay", fields, sign=sign)
        assert answer["status"] == "ok", answer
        assert answer["data"]["sent"] == 50
        assert answer["data"]["missing"] == []
        assert answer["data"]["last_seq"] == last  # the closed epoch's end, for good
        past = await dealer.send(
            "replay", {**fields, "from_seq": last, "to_seq": last + 1}, sign=sign
        )
        assert past["status"] == "error"
        assert "goes past its last" in past["error"]
        never = await dealer.send("replay", {**fields, "epoch": "never"}, sign=sign)
        assert never["status"] == "error"
        assert "not this journal's" in never["error"]
        assert closed in never["error"]
        assert current in never["error"]
        now = await dealer.send(
            "replay", {**fields, "epoch": current, "from_seq": 1, "to_seq": 1}, sign=sign
        )
        assert now["status"] == "ok", now
        await eventually(lambda: len(replayed) >= 51, 30, "the replayed events")
        await dealer.stop()
    of_closed = [e for e in replayed if e["epoch"] == closed]
    assert [e["seq"] for e in of_closed] == list(range(1, 51))
    assert all(e["event_id"] == f"T1:{closed}:{e['seq']}" and e["historical"] for e in of_closed)
    assert [e["type"] for e in of_closed] == [event_from_json(body).type for _, body in kept]
    assert [(e["epoch"], e["seq"]) for e in replayed if e["epoch"] == current] == [(current, 1)]
