"""The journal's integrity and its disk at once, in-process: both alarms on the status topic,
the full disk first, nothing lost of either, and no crash.

The journal is filled with SQLite's ``max_page_count`` as in ``tests/shell/test_disk_full.py``,
or, where a write must fail at the very start, on a real small file system (root only).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.config import TableConfig
from controller.shell.daemon import Daemon
from controller.shell.journal import Journal, NewEvent
from controller.shell.space import is_full
from controller.table.codec import event_to_json
from controller.table.event_types import RequestsShed
from controller.table.events import Severity, TableEvent
from controller.table.state import Phase
from tests.disk import fill as fill_disk
from tests.disk import small_disk
from tests.shell.inprocess import Running, disk_config, now, phase, request
from tests.shell.test_disk_full import ROOM
from tests.shell.test_integrity import rewrite_chain
from tests.waiting import until


def fill_before_start(journal: Journal) -> None:
    """Cap the journal at its size and write events no input caused until a write of the
    smallest of them fails (a batch failing leaves room for less)."""
    journal.cap_pages(1)
    shed = TableEvent(RequestsShed({}, 0.0), datetime.now(UTC), None, (), Severity.INFO)
    filler = NewEvent(shed.type, None, event_to_json(shed))

    def write_until_it_fails(batch: int) -> None:
        for _ in range(5000):
            journal.append(input_row=None, events=[filler] * batch)

    for batch in (16, 1):
        with pytest.raises(sqlite3.Error) as caught:
            write_until_it_fails(batch)
        assert is_full(caught.value, journal.path.parent)


async def a_journal_that_holds(config: TableConfig) -> None:
    """A journal whose replay differs from what it holds (an input edited, the chain made to
    fit): the next start is held by an integrity alarm."""
    async with Running(config) as daemon:
        started = await daemon.commands.handle("start_hand", request(transaction="a"), now())
        assert started["status"] == "ok"
        await until(lambda: phase(daemon) is Phase.BETTING, timeout=60)
    with sqlite3.connect(config.journal.path) as conn:
        conn.execute(
            'UPDATE inputs SET body = replace(body, \'"health":"online"\', '
            "'\"health\":\"stale\"') WHERE type = 'DeviceHealthChanged'"
        )
    rewrite_chain(config.journal.path)


def alarm_events(journal: Journal) -> list[str]:
    bodies = [json.loads(row.body) for row in journal.events()]
    return [b["type"] for b in bodies if b["type"] in ("integrity.alarm", "journal.disk")]


async def test_a_table_held_on_a_full_journal_carries_both_alarms_and_is_decided_with_room(
    tmp_path: Path,
) -> None:
    config = disk_config(tmp_path)
    await a_journal_that_holds(config)
    held = Daemon(config)
    journal = held.writer.journal
    fill_before_start(journal)
    before = alarm_events(journal)
    task = asyncio.create_task(held.run())
    try:
        await until(
            lambda: held.integrity.held and held.link.accept_requests and held.space.full,
            timeout=60,
        )
        assert not held.ready.is_set()
        birth = held.link.status_body("online")
        assert birth["degraded"] is True
        assert [(a["alarm"], a.get("kind"), a.get("held")) for a in birth["alarms"]] == [
            ("journal.full", None, None),
            ("journal.integrity", "replay", True),
        ]
        line = held.status_line()
        assert line.startswith("DEGRADED: journal disk full")
        assert "integrity alarm (replay)" in line
        assert "waiting for maintenance (journal_accept)" in line

        # the full disk first: nothing can be journaled, maintenance's decision included
        for verb, body in (
            ("start_hand", request(transaction="b")),
            ("journal_accept", request(transaction="c", reason="the health edit is ours")),
        ):
            refused = await held.commands.handle(verb, body, now())
            assert refused["status"] == "error"
            assert refused["error"].startswith("journal full: "), refused
        assert held.integrity.held
        assert alarm_events(journal) == before  # shown, not journaled yet

        # room again: the outage's record, then the alarm, then maintenance decides
        await held.writer.call(journal.cap_pages, ROOM)
        await until(lambda: not held.space.full, timeout=60)
        await until(
            lambda: alarm_events(journal)[len(before) :] == ["journal.disk", "integrity.alarm"],
            timeout=60,
        )
        still = await held.commands.handle("start_hand", request(transaction="d"), now())
        assert "waits for maintenance (journal_accept)" in still["error"]
        accepted = await held.commands.handle(
            "journal_accept", request(transaction="e", reason="the health edit is ours"), now()
        )
        assert accepted["status"] == "ok", accepted
        async with asyncio.timeout(60):
            await held.ready.wait()
        assert held.link.status_body("online")["alarms"] == []
        assert held.link.status_body("online")["degraded"] is False
    finally:
        held.stop_requested.set()
        assert await asyncio.wait_for(task, 20) == 0
    journal = Journal.open_existing(config.journal.path)
    try:
        assert journal.verify().ok
    finally:
        journal.close()


async def test_a_start_that_cannot_write_what_its_checks_note_goes_ready_degraded(
    tmp_path: Path,
) -> None:
    """On a disk with no room at all the start's notes (the verified head) cannot be written:
    the table goes READY degraded, and they are written once there is room."""
    with small_disk(tmp_path / "disk", "4m") as disk:
        config = disk_config(tmp_path, path=str(disk / "journal.sqlite"))
        async with Running(config) as daemon:
            started = await daemon.commands.handle("start_hand", request(transaction="a"), now())
            assert started["status"] == "ok"
        daemon = Daemon(config)
        journal = daemon.writer.journal
        filler = disk / "filler"
        fill_disk(filler, 0)
        task = asyncio.create_task(daemon.run())
        try:
            async with asyncio.timeout(60):
                await daemon.ready.wait()
            assert daemon.space.full
            assert not daemon.integrity.held
            assert daemon.integrity._unsaved  # noted in memory
            assert daemon.link.status_body("online")["degraded"] is True

            filler.unlink()
            await until(lambda: not daemon.space.full, timeout=60)
            await daemon.integrity.verify_new()  # the minute's verification, now
            assert not daemon.integrity._unsaved
            assert journal.verified_head() == daemon.integrity._verified
        finally:
            daemon.stop_requested.set()
            assert await asyncio.wait_for(task, 20) == 0
