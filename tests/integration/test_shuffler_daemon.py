"""The daemon with the real TSP/1 shuffler driver against ``tablectl sim shuffler`` on a pty.

The shuffler simulator runs as its own process; the readers are a ``jsonl`` source on a second
pty, written by the test as a dealer's hands would move the cards: every card the shuffler
dispenses (identities live, as on a broadcast table) is read where its group goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import random
import signal
import subprocess
import sys
import termios
import time
import tty
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.cards import Card
from controller.decks import load_deck
from controller.mqtt import Client
from controller.table.codec import input_to_json
from controller.table.inputs import TagArrived, Zone
from simulators.dealer_console import AutoConsole
from tests.integration.conftest import Collector, DaemonProcess, unique_seqs

# several daemons and whole hands: minutes when every core is busy
pytestmark = [pytest.mark.broker, pytest.mark.timeout(600), pytest.mark.slow]

MANIFEST = load_deck("house-a")


class ShufflerSim:
    """``tablectl sim shuffler`` as its own process."""

    def __init__(self, directory: Path, *args: str) -> None:
        self.link = directory / "shuffler.tty"
        self.control = directory / "shuffler.ctl"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "sim", "shuffler", "--link", str(self.link),
             "--control", str(self.control), "--shuffle-time", "0.05", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while not (self.link.exists() and self.control.exists()):  # polling, with a deadline
            assert self.proc.poll() is None, "the simulator exited"
            assert time.monotonic() < deadline, "the simulator did not come up"
            time.sleep(0.01)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Readers:
    """The readers' pty: the test writes a TagArrived line for each card a group dealt."""

    def __init__(self, directory: Path) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave, termios.TCSANOW)
        self.path = Path(os.ttyname(self.slave))
        self.placed: list[tuple[str, str]] = []

    def place(self, zone: str, cards: list[str]) -> None:
        for card in cards:
            item = TagArrived(
                datetime.now(UTC), "reader", Zone.parse(zone), MANIFEST.uid(Card(card))
            )
            os.write(self.master, input_to_json(item).encode() + b"\n")
            self.placed.append((zone, card))

    def close(self) -> None:
        os.close(self.master)
        os.close(self.slave)


def more(collector: Collector, seen: int) -> bool:
    """Events arrived past the first ``seen``."""
    return len(collector.secure) > seen


def zone_of(data: dict[str, Any]) -> str:
    purpose = data["purpose"]
    if purpose == "hole":
        return f"seat:{data['seat']}"
    return "burn" if purpose == "burn" else "board"


async def deal_with_hands(collector: Collector, readers: Readers) -> None:
    """Move every dispensed group to its zone, as the dealer does (forever, until cancelled)."""
    done = 0
    seen: set[str] = set()
    while True:
        events = collector.secure
        for body in events[done:]:
            if body["event_id"] in seen:  # delivered again after a restart: moved already
                continue
            seen.add(body["event_id"])
            if body["type"] == "deal.group.dispensed" and body["data"].get("cards"):
                readers.place(zone_of(body["data"]), body["data"]["cards"])
        done = len(events)
        async with collector.changed:
            await collector.changed.wait_for(functools.partial(more, collector, done))


@pytest.fixture
def readers(tmp_path: Path) -> Iterator[Readers]:
    instance = Readers(tmp_path)
    yield instance
    instance.close()


def devices(sim: ShufflerSim | Path, readers: Readers) -> str:
    """The daemon's devices: the shuffler simulator (or where its link will be) and readers."""
    link = sim.link if isinstance(sim, ShufflerSim) else sim
    return (
        f'[devices.shuffler]\ndriver = "tsp-shuffler"\nport = "{link}"\nid_policy = "live"\n'
        "heartbeat_interval = 0.25\nbackoff_base = 0.05\nbackoff_cap = 0.4\n"
        # a simulator starved of CPU (every core busy) answers late, not never
        "response_timeout = 1.0\n"
        f'[devices.reader]\ndriver = "jsonl"\nport = "{readers.path}"\n'
    )


async def play(daemon: DaemonProcess, port: int, hands: int) -> dict[str, Any]:
    async with Client("127.0.0.1", port) as client:
        console = AutoConsole(client, daemon.topics, retry=1.0, sign=daemon.sign)
        await console.start()
        assert await console.play(hands=hands, timeout=300) == hands
        await console.stop()
        assert console.snapshot is not None
        return console.snapshot


async def test_hands_through_the_shuffler_simulator(
    tmp_path: Path, daemon_factory: Any, broker: Any, readers: Readers
) -> None:
    sim = ShufflerSim(tmp_path, "--seed", "11")
    try:
        daemon = daemon_factory(devices=devices(sim, readers))
        async with Collector(broker, daemon.topics) as collector:
            daemon.start()
            hands = asyncio.create_task(deal_with_hands(collector, readers))
            try:
                await play(daemon, broker.port, hands=2)
            finally:
                hands.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await hands
            expected = daemon_seqs(daemon)
            await collector.wait_for(lambda c: len(unique_seqs(c.public)) >= len(expected))
        assert unique_seqs(collector.public) == expected == list(range(1, len(expected) + 1))
        types = [e["type"] for e in collector.public]
        assert types.count("hand.completed") == 2
        assert types.count("deck.verified") == 2  # a fresh shuffle for each hand
        assert "deck.revealed" in types  # the first deck, retired by the second shuffle
        revealed = next(e for e in collector.secure if e["type"] == "deck.revealed")
        assert len(revealed["data"]["order"]) == 52
        # the device topic carries the identity the shuffler proved
        async with aiomqtt.Client("127.0.0.1", broker.port) as client:
            await client.subscribe(daemon.topics.device("shuffler"), qos=1)
            async for message in client.messages:
                assert isinstance(message.payload, bytes)
                body = json.loads(message.payload)
                break
        assert body["identity"]["model"] == "TSP-SIM-1"
        assert body["identity"]["approved"] is True
    finally:
        sim.stop()


async def test_a_hand_started_before_the_shuffler_is_reached_gets_its_shuffle(
    tmp_path: Path, daemon_factory: Any, broker: Any, readers: Readers
) -> None:
    """The shuffle a hand needs is journaled while no shuffler is connected; the device, once
    reached, reports a deck the table never saw (its own last shuffle): that is not the
    table's shuffle, which must still be sent, and the hand dealt."""
    daemon = daemon_factory(devices=devices(tmp_path / "shuffler.tty", readers))
    sim: ShufflerSim | None = None
    async with Collector(broker, daemon.topics) as collector:
        daemon.start()
        dealing = asyncio.create_task(deal_with_hands(collector, readers))
        async with Client("127.0.0.1", broker.port) as client:
            console = AutoConsole(client, daemon.topics, retry=1.0, sign=daemon.sign)
            await console.start()
            playing = asyncio.create_task(console.play(hands=1, timeout=120))
            try:
                await collector.wait_for(
                    lambda c: any(e["type"] == "hand.started" for e in c.public), 60
                )
                assert not any(e["type"] == "deck.verified" for e in collector.public)
                sim = await asyncio.to_thread(ShufflerSim, tmp_path, "--seed", "11")
                assert await playing == 1
                # the console saw the hand end; the collector's copy may still be on its way
                await collector.wait_for(
                    lambda c: any(e["type"] == "hand.completed" for e in c.public), 60
                )
            finally:
                if sim is not None:
                    sim.stop()
                for task in (playing, dealing):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                await console.stop()
    types = [e["type"] for e in collector.public]
    assert types.count("deck.verified") == 1
    assert types.count("hand.completed") == 1


def daemon_seqs(daemon: DaemonProcess) -> list[int]:
    import sqlite3

    with sqlite3.connect(daemon.journal) as conn:
        return [row[0] for row in conn.execute("SELECT seq FROM events ORDER BY seq")]


def dealt_cards(daemon: DaemonProcess) -> list[tuple[str, list[str]]]:
    """Every group the shuffler dispensed, as the journal has it: (purpose, cards)."""
    import sqlite3

    with sqlite3.connect(daemon.journal) as conn:
        rows = conn.execute("SELECT body FROM inputs WHERE type = 'GroupDispensed' ORDER BY id")
        fields = [json.loads(body)["fields"] for (body,) in rows]
    groups = [(f["shuffle_id"], f["group"]) for f in fields]
    assert len(groups) == len(set(groups)), "a group journaled twice"
    return [(f["purpose"], f["cards"]) for f in fields]


async def run_hands(
    daemon: DaemonProcess, broker: Any, readers: Readers, hands: int, kills: list[int]
) -> tuple[Collector, dict[str, Any], set[int]]:
    rng = random.Random(7)
    async with Collector(broker, daemon.topics, identifier=f"c-{daemon.table}") as collector:
        daemon.start()
        dealing = asyncio.create_task(deal_with_hands(collector, readers))

        async def killer() -> None:
            for threshold in kills:
                await collector.wait_for(lambda c, t=threshold: len(c.public) >= t, timeout=180)
                await asyncio.sleep(rng.uniform(0, 0.03))  # somewhere after that event
                daemon.kill(signal.SIGKILL)
                await asyncio.to_thread(daemon.start)

        killing = asyncio.create_task(killer())
        try:
            final = await play(daemon, broker.port, hands=hands)
            await killing
            journaled = set(daemon_seqs(daemon))
            await collector.wait_for(lambda c: {e["seq"] for e in c.public} >= journaled, 30)
        finally:
            for task in (dealing, killing):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    return collector, final, journaled


@pytest.mark.slow
async def test_sigkill_with_the_shuffler_simulator_never_dispenses_twice(
    tmp_path: Path, daemon_factory: Any, broker: Any
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    sim_a = ShufflerSim(tmp_path / "a", "--seed", "11", "--rng-seed", "3")
    readers_a = Readers(tmp_path / "a")
    try:
        reference = daemon_factory("reference", table="TA", devices=devices(sim_a, readers_a))
        _, final_a, _ = await run_hands(reference, broker, readers_a, 2, [])
        assert reference.kill(signal.SIGTERM) == 0  # before its pty number can be reused
    finally:
        sim_a.stop()
        readers_a.close()
    sim_b = ShufflerSim(tmp_path / "b", "--seed", "11", "--rng-seed", "3")
    readers_b = Readers(tmp_path / "b")
    try:
        victim = daemon_factory("victim", table="TB", devices=devices(sim_b, readers_b))
        kills = sorted(random.Random(11).sample(range(3, 70), 3))
        collector, final_b, journaled = await run_hands(victim, broker, readers_b, 2, kills)
    finally:
        sim_b.stop()
        readers_b.close()
    assert victim.starts == 1 + len(kills)
    assert dealt_cards(victim) == dealt_cards(reference)  # the same cards, none twice
    assert final_b["seats"] == final_a["seats"]
    assert journaled == set(range(1, len(journaled) + 1))  # gap-free
    assert {e["seq"] for e in collector.public} >= journaled  # every event reached the pit
