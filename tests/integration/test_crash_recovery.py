"""The daemon killed with SIGKILL at random points of a hand, and restarted each time.

The run must end where an uninterrupted run ends: the same hands (as PHH), the same stacks, the
same cards out of the shuffler (none twice), and every event delivered to the consumer.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt import Client
from controller.shell.export import export_phh
from controller.shell.journal import Journal
from simulators.dealer_console import AutoConsole
from tests.integration.conftest import Collector, DaemonProcess

# several daemons and whole hands: minutes when every core is busy
pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(600)]

HANDS = 2


async def play(daemon: DaemonProcess, port: int) -> dict[str, Any]:
    async with Client("127.0.0.1", port) as client:
        console = AutoConsole(client, daemon.topics, retry=1.0, sign=daemon.sign)
        await console.start()
        assert await console.play(hands=HANDS, timeout=240) == HANDS
        await console.stop()
        assert console.snapshot is not None
        return console.snapshot


def outcome(daemon: DaemonProcess) -> tuple[list[str], dict[str, Any], int, list[int]]:
    journal = Journal.open_existing(daemon.journal)
    try:
        assert journal.verify().ok
        phh = [text.replace(daemon.table, "T") for text in export_phh(journal)]
        seqs = [row.key for row in journal.events()]
    finally:
        journal.close()
    memory = json.loads((daemon.directory / "shuffler.json").read_text())
    return phh, memory, memory["dispensed_cards"], seqs


async def test_sigkill_at_random_points_recovers_the_exact_table(
    daemon_factory: Any, broker: Any
) -> None:
    reference = daemon_factory("reference", table="TA")
    reference.start()
    final_reference = await play(reference, broker.port)
    assert reference.kill(signal.SIGTERM) == 0
    phh_ref, _, cards_ref, _ = outcome(reference)
    assert len(phh_ref) == HANDS

    victim = daemon_factory("victim", table="TB")
    rng = random.Random(20260101)
    kills = sorted(rng.sample(range(4, 60), 4))
    async with Collector(broker, victim.topics, identifier="victim-collector") as collector:
        victim.start()

        async def killer() -> None:
            for threshold in kills:
                await collector.wait_for(lambda c, t=threshold: len(c.public) >= t, timeout=180)
                await asyncio.sleep(rng.uniform(0, 0.03))  # somewhere after that event
                victim.kill(signal.SIGKILL)
                await asyncio.to_thread(victim.start)

        killing = asyncio.create_task(killer())
        final_victim = await play(victim, broker.port)
        await killing
        phh, memory, cards, seqs = outcome(victim)
        await collector.wait_for(
            lambda c: {e["seq"] for e in c.public} >= set(seqs) and len(seqs) > 0, timeout=30
        )

    assert victim.starts == 1 + len(kills)
    assert phh == phh_ref  # the same hands, card for card and chip for chip
    assert cards == cards_ref  # not one card more out of the shuffler
    for shuffle_groups in [memory["groups"]]:
        assert len(shuffle_groups) == len(set(shuffle_groups))
    assert final_victim["seats"] == final_reference["seats"]
    assert seqs == list(range(1, len(seqs) + 1))
    received = {e["event_id"] for e in collector.public}
    epoch = collector.public[-1]["epoch"]
    assert received == {f"{victim.table}:{epoch}:{seq}" for seq in seqs}


def test_phh_export_of_the_reference_is_stable(tmp_path: Path) -> None:
    """Guard: an empty journal exports no hands (the export replays from genesis)."""
    journal = Journal.open(
        tmp_path / "j.sqlite",
        table_id="T",
        genesis={
            "table_id": "T",
            "profile": "rrop-cash",
            "stacks": {"1": 5, "2": 5},
            "button": 1,
            "blinds": [1, 2],
            "deck": "house-a",
        },
    )
    assert export_phh(journal) == []
    journal.close()
