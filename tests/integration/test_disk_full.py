"""The journal's disk filling up mid-hand under a real daemon process, and room coming back.

On a real small file system (a tmpfs mounted for the test, as root): the low-disk alarm first,
then a full disk: the table is degraded (the status topic and ``STATUS=`` say so), every request
is answered with the reason, and once a file is deleted the table goes on by itself. Without
root, the journal is capped instead (``[journal] max_pages``): the daemon is stopped on the
full journal and started again on it (READY, degraded: no crash loop), then started with room.
Either way the hands end exactly as an undisturbed run's, and every event reaches the pit once.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt import Client
from controller.shell.export import export_phh
from controller.shell.journal import Journal
from simulators.dealer_console import AutoConsole
from tests.disk import fill
from tests.disk import small_disk as mounted
from tests.integration.conftest import Collector, DaemonProcess
from tests.waiting import until

# several daemons and whole hands: minutes when every core is busy
pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(600)]

HANDS = 2
MIB = 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs of the test's own (root only)."""
    with mounted(tmp_path / "disk") as mount:
        yield mount


async def play(daemon: DaemonProcess, port: int, console: list[AutoConsole]) -> dict[str, Any]:
    async with Client("127.0.0.1", port) as client:
        auto = AutoConsole(client, daemon.topics, retry=1.0, sign=daemon.sign)
        console.append(auto)
        await auto.start()
        assert await auto.play(hands=HANDS, timeout=400) == HANDS
        await auto.stop()
        assert auto.snapshot is not None
        return auto.snapshot


def outcome(daemon: DaemonProcess) -> tuple[list[str], int, list[int], list[dict[str, Any]]]:
    journal = Journal.open_existing(daemon.journal)
    try:
        assert journal.verify().ok
        phh = [text.replace(daemon.table, "T") for text in export_phh(journal)]
        rows = list(journal.events())
    finally:
        journal.close()
    memory = json.loads((daemon.directory / "shuffler.json").read_text())
    assert memory["pending"] == []  # the device holds nothing back
    disk = [json.loads(r.body) for r in rows]
    return (
        phh,
        memory["dispensed_cards"],
        [r.key for r in rows],
        [b["data"] for b in disk if b["type"] == "journal.disk"],
    )


def refusals(console: list[AutoConsole]) -> list[str]:
    errors = [r["error"] or "" for c in console for r in c.responses]
    return [e for e in errors if "journal full" in e]


def statuses(collector: Collector) -> list[dict[str, Any]]:
    return [s for s in collector.status if s["state"] == "online"]


async def reference_run(daemon_factory: Any, broker: Any) -> tuple[list[str], int]:
    reference = daemon_factory("reference", table="TA")
    reference.start()
    await play(reference, broker.port, [])
    assert reference.kill(signal.SIGTERM) == 0
    phh, cards, _, _ = outcome(reference)
    assert len(phh) == HANDS
    return phh, cards


async def test_a_disk_filling_mid_hand_degrades_the_table_until_room_returns(
    daemon_factory: Any, broker: Any, small_disk: Path
) -> None:
    phh_ref, cards_ref = await reference_run(daemon_factory, broker)
    victim = daemon_factory(
        "victim",
        table="TB",
        journal=small_disk / "journal.sqlite",
        journal_extra=f"low_disk_bytes = {8 * MIB}\ndisk_poll = 0.1\n",
    )
    filler = small_disk / "filler"
    console: list[AutoConsole] = []
    async with Collector(broker, victim.topics, identifier="disk-collector") as collector:
        victim.start()
        fill(filler, 4 * MIB)  # below the watermark: the alarm, nothing refused
        await collector.wait_for(
            lambda c: any(
                a["alarm"] == "journal.low_disk" for s in statuses(c) for a in s["alarms"]
            ),
        )
        victim.wait_notify("STATUS=low disk: ", 60, prefix=True)

        playing = asyncio.create_task(play(victim, broker.port, console))
        await collector.wait_for(lambda c: len(c.public) >= 15, timeout=120)
        fill(filler, 0)  # full, mid-hand: the next write fails (the WAL has to grow)
        await collector.wait_for(lambda c: any(s["degraded"] for s in statuses(c)), timeout=120)
        victim.wait_notify("STATUS=DEGRADED: journal disk full", 60, prefix=True)
        await until(
            lambda: len(refusals(console)) >= 2, 120, "two refusals", every=0.02
        )  # with the reason
        assert not playing.done()
        degraded = next(s for s in statuses(collector) if s["degraded"])
        assert degraded["alarms"][0]["alarm"] == "journal.full"

        filler.unlink()  # room again: the table goes on by itself
        await collector.wait_for(lambda c: not statuses(c)[-1]["degraded"], timeout=60)
        final = await asyncio.wait_for(playing, 400)
        assert victim.kill(signal.SIGTERM) == 0
        phh, cards, seqs, disk = outcome(victim)
        await collector.wait_for(lambda c: {e["seq"] for e in c.public} >= set(seqs), timeout=30)

    assert victim.starts == 1
    assert phh == phh_ref  # the same hands, card for card and chip for chip
    assert cards == cards_ref
    assert final["hand"] is None
    assert seqs == list(range(1, len(seqs) + 1))
    epoch = collector.public[-1]["epoch"]
    assert {e["event_id"] for e in collector.public} == {f"TB:{epoch}:{seq}" for seq in seqs}
    conditions = [d["condition"] for d in disk]
    assert conditions[:2] == ["low", "recovered"], conditions
    recovered = disk[1]
    assert recovered["refused"] >= 2
    assert recovered["seconds"] > 0
    assert "journal full: the table takes no input" in refusals(console)[0]


async def test_a_capped_journal_fills_mid_hand_and_a_restart_on_it_starts_degraded(
    daemon_factory: Any, broker: Any
) -> None:
    phh_ref, cards_ref = await reference_run(daemon_factory, broker)
    cap = "max_pages = 40\ndisk_poll = 0.1\n"
    victim = daemon_factory("victim", table="TB", journal_extra=cap)
    console: list[AutoConsole] = []
    async with Collector(broker, victim.topics, identifier="cap-collector") as collector:
        victim.start()
        playing = asyncio.create_task(play(victim, broker.port, console))
        await collector.wait_for(lambda c: any(s["degraded"] for s in statuses(c)), timeout=120)
        victim.wait_notify("STATUS=DEGRADED: journal disk full", 60, prefix=True)
        await until(lambda: len(refusals(console)) >= 1, 120, "a refusal", every=0.02)
        assert not playing.done()

        assert victim.kill(signal.SIGTERM) == 0  # a clean stop on a full journal
        seen = len(collector.status)
        victim.start()  # on the same full journal: READY, degraded, no crash
        await collector.wait_for(
            lambda c: any(s["state"] == "online" and s["degraded"] for s in c.status[seen:]),
            timeout=60,
        )
        victim.wait_notify("STATUS=DEGRADED: journal disk full", 60, prefix=True)
        assert victim.proc is not None
        assert victim.proc.poll() is None
        assert victim.kill(signal.SIGTERM) == 0

        victim.config.write_text(victim.config.read_text().replace("max_pages = 40\n", ""))
        victim.start()
        final = await asyncio.wait_for(playing, 400)
        assert victim.kill(signal.SIGTERM) == 0
        phh, cards, seqs, disk = outcome(victim)
        await collector.wait_for(lambda c: {e["seq"] for e in c.public} >= set(seqs), timeout=30)

    assert phh == phh_ref
    assert cards == cards_ref
    assert final["hand"] is None
    assert seqs == list(range(1, len(seqs) + 1))
    epoch = collector.public[-1]["epoch"]
    assert {e["event_id"] for e in collector.public} == {f"TB:{epoch}:{seq}" for seq in seqs}
    # as the outbox drains, its deleted rows make room in the capped pages: the outage may end
    # by itself for a while (a recovered record each time) before the pages run out again
    assert {d["condition"] for d in disk} <= {"recovered"}
    assert "journal full: the table takes no input" in refusals(console)[0]


async def test_a_start_on_a_disk_too_full_to_open_the_journal_waits_for_room(
    daemon_factory: Any, small_disk: Path
) -> None:
    filler = small_disk / "filler"
    fill(filler, 0)
    daemon = daemon_factory(
        "victim", journal=small_disk / "journal.sqlite", journal_extra="disk_poll = 0.1\n"
    )
    daemon.launch()
    await asyncio.to_thread(
        daemon.wait_notify, "STATUS=DEGRADED: journal disk full (0 bytes free); waiting", 60,
        prefix=True,
    )  # fmt: skip
    # not READY, and not dead either: no restart loop
    assert not any("READY=1" in m.split("\n") for m in daemon.messages)
    assert daemon.proc is not None
    assert daemon.proc.poll() is None
    filler.unlink()
    await asyncio.to_thread(daemon.wait_notify, "READY=1", 60)  # once there is room
    assert daemon.kill(signal.SIGTERM) == 0
    journal = Journal.open_existing(daemon.journal)
    try:
        assert journal.verify().ok
        assert journal.table_id == "T1"
    finally:
        journal.close()
