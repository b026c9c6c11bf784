"""The daemon as systemd runs it, end to end: virtual devices → core → journal → mosquitto."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt import Client
from simulators.dealer_console import AutoConsole
from tests.integration.conftest import Collector, unique_seqs

# several daemons and whole hands: minutes when every core is busy
pytestmark = [pytest.mark.broker, pytest.mark.timeout(600), pytest.mark.slow]


def journal_seqs(path: Any) -> list[int]:
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT seq FROM events ORDER BY seq")]


async def test_hands_end_to_end_and_the_will_on_sigkill(
    daemon_factory: Any, broker: Any, console_client: Client
) -> None:
    daemon = daemon_factory()
    async with Collector(broker, daemon.topics) as collector:
        daemon.start()
        console = AutoConsole(console_client, daemon.topics, sign=daemon.sign)
        await console.start()
        assert await console.play(hands=2, timeout=180) == 2
        await console.stop()
        expected = journal_seqs(daemon.journal)
        await collector.wait_for(lambda c: len(unique_seqs(c.public)) >= len(expected))
        await collector.wait_for(lambda c: len(unique_seqs(c.secure)) >= len(expected))

        # every event on both streams, gap-free and in order, with the same ids
        assert unique_seqs(collector.public) == expected == list(range(1, len(expected) + 1))
        assert unique_seqs(collector.secure) == expected
        public_ids = [e["event_id"] for e in collector.public]
        assert public_ids == [e["event_id"] for e in collector.secure]
        types = [e["type"] for e in collector.public]
        assert types.count("hand.completed") == 2
        assert not any(e["historical"] for e in collector.public)
        # a normal start asks each device where it is once it is up, and warns of nothing
        started = (daemon.directory / "daemon.log").read_text(errors="replace")
        assert "device.queried" in started
        assert "device.query_failed" not in started
        # hole cards only on the secure stream
        delivered = [e for e in collector.secure if e["type"] == "deal.group.delivered"]
        assert delivered
        assert all("cards" in e["data"] for e in delivered)
        public_delivered = [e for e in collector.public if e["type"] == "deal.group.delivered"]
        assert not any("cards" in e["data"] for e in public_delivered)
        # the birth
        assert collector.status[-1]["state"] == "online"
        assert collector.status[-1]["simulated"] is True
        bdseq = collector.status[-1]["bdseq"]

        daemon.kill(signal.SIGKILL)
        await collector.wait_for(lambda c: c.status[-1]["state"] == "offline", timeout=30)
        assert collector.status[-1]["bdseq"] == bdseq  # the Will of that connection

    # the offline status is retained for whoever subscribes later
    async with Client("127.0.0.1", broker.port) as late:
        await late.subscribe(daemon.topics.status, qos=1)
        async for message in late.messages:
            assert isinstance(message.payload, bytes)
            assert json.loads(message.payload)["state"] == "offline"
            assert message.retain
            break


async def test_sigterm_publishes_offline_and_exits_zero(daemon_factory: Any, broker: Any) -> None:
    daemon = daemon_factory()
    async with Collector(broker, daemon.topics) as collector:
        daemon.start()
        await collector.wait_for(lambda c: c.status and c.status[-1]["state"] == "online")
        assert daemon.kill(signal.SIGTERM) == 0
        await collector.wait_for(lambda c: c.status[-1]["state"] == "offline")
    assert "STOPPING=1" in "\n".join(daemon.messages) or daemon.log().count("daemon.stopped") == 1
    log = daemon.log()
    order = [log.index(k) for k in ("daemon.stopping", "mqtt.offline_published", "daemon.stopped")]
    assert order == sorted(order)
    # the journal was checkpointed: no WAL left behind with content
    wal = daemon.journal.with_name(daemon.journal.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0


async def test_watchdog_pings_and_status_lines(daemon_factory: Any, broker: Any) -> None:
    daemon = daemon_factory(environment={"WATCHDOG_USEC": "200000"})  # ping every 0.1 s
    daemon.start()
    daemon.wait_notify("WATCHDOG=1", 10)
    ready = next(m for m in daemon.messages if "READY=1" in m.split("\n"))
    assert "STATUS=between hands" in ready
    daemon.wait_notify("STATUS=between hands; broker up; shuffler online", 10)
    assert daemon.kill(signal.SIGTERM) == 0
    assert any("STOPPING=1" in m.split("\n") for m in daemon.messages)


async def test_tail_and_dealer_commands(daemon_factory: Any, broker: Any) -> None:
    daemon = daemon_factory()
    async with Collector(broker, daemon.topics) as collector:
        daemon.start()
        # The shuffler's device.status delivered first: a tail started after it sees only what
        # the test makes happen (on a busy machine the device may come online after READY).
        await collector.wait_for(lambda c: any(e["type"] == "device.status" for e in c.public))
    base = [sys.executable, "-m", "controller.cli"]
    target = ["--broker", broker.url, "--table", daemon.table]
    tail = subprocess.Popen(
        [*base, "tail", *target, "--count", "3"], stdout=subprocess.PIPE, text=True
    )
    try:
        # the tail is subscribed once the retained status reached it
        assert tail.stdout is not None
        assert tail.stdout.readline().startswith("# status online")
        done = subprocess.run(
            [*base, "dealer", *target, *daemon.key_args(), "start_hand", "--transaction", "cli-1"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        body = json.loads(done.stdout)
        assert body["status"] == "ok"
        assert body["transaction"] == "cli-1"
        again = subprocess.run(
            [*base, "dealer", *target, *daemon.key_args(), "start_hand", "--transaction", "cli-1"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert json.loads(again.stdout) == body  # stored answer, not a second hand
        bad = subprocess.run(
            [*base, "dealer", *target, *daemon.key_args(), "action", "seat=x", "action=call"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert bad.returncode == 1
        assert "seat" in json.loads(bad.stdout)["error"]
        out, _ = tail.communicate(timeout=30)
    finally:
        if tail.poll() is None:
            tail.kill()
            tail.wait()
    lines = out.strip().splitlines()
    assert len(lines) == 3
    assert "hand.started" in lines[0]
    assert "betting.action" in lines[1]


async def test_sigterm_at_once_after_ready_still_exits_cleanly(
    daemon_factory: Any, broker: Any
) -> None:
    """Stopping while the broker connection is still being made (a race that once hung)."""
    daemon = daemon_factory()
    for _ in range(4):
        daemon.start()
        assert daemon.kill(signal.SIGTERM) == 0


async def test_a_second_daemon_on_the_same_journal_exits_naming_the_first_and_changes_nothing(
    daemon_factory: Any, broker: Any
) -> None:
    console = Path(tempfile.mkdtemp(prefix="tc")) / "console.sock"
    daemon = daemon_factory(sections=f'[daemon]\nconsole = "{console}"\n')
    async with Collector(broker, daemon.topics) as collector:
        daemon.start()
        await collector.wait_for(lambda c: c.status and c.status[-1]["state"] == "online")
        births = len(collector.status)
        socket_before = console.stat().st_ino
        with sqlite3.connect(daemon.journal) as conn:
            rows = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        second = subprocess.run(
            [sys.executable, "-m", "controller.cli", "run", "--config", str(daemon.config)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert second.returncode == 4, second.stderr
        assert second.stderr.count("\n") == 1
        assert f"in use by pid {daemon.proc.pid}" in second.stderr
        # nothing changed: the first kept its broker session, its console socket and its journal
        probe = signed_request(daemon)
        reader, writer = await asyncio.open_unix_connection(str(console))
        writer.write(probe)
        answer = json.loads(await asyncio.wait_for(reader.readline(), 30))
        writer.close()
        assert answer["status"] == "ok", answer
        assert console.stat().st_ino == socket_before
        assert len(collector.status) == births  # no Last Will, no second birth
        assert daemon.proc.poll() is None
    with sqlite3.connect(daemon.journal) as conn:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] > rows  # the probe's


def signed_request(daemon: Any) -> bytes:
    body = daemon.sign("start_hand", {"transaction": "after-second-start"})
    return json.dumps({"command": "start_hand", **body}).encode() + b"\n"
