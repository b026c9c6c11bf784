"""A full journal in-process: degraded, not dead; inputs held, requests answered, then recovered.

The journal is filled with SQLite's ``max_page_count`` (``Journal.cap_pages``: past the cap a
write fails with ``database or disk is full``, as on a full disk), and emptied by raising it.
``tests/integration/test_disk_full.py`` does the same to a real daemon process on a real small
file system.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.shell.daemon import Daemon
from controller.shell.journal import Journal, NewEvent
from controller.shell.segments import PRUNED
from controller.shell.space import JournalFullError, JournalSpace, SpaceConfig, is_full
from controller.table.codec import rfc3339
from drivers.virtual import VirtualTable
from tests.disk import fill as fill_disk
from tests.disk import small_disk
from tests.played import inputs_of
from tests.played import write as write_hands
from tests.shell.inprocess import Running, disk_config, now, request
from tests.waiting import until

ROOM = 1_000_000  # pages: a cap far above what the tests write


async def fill(daemon: Daemon) -> list[dict[str, Any]]:
    """Cap the journal at its size, then send refused requests (each journaled) until one is
    answered "journal full"; return the answers."""
    await daemon.writer.call(daemon.writer.journal.cap_pages, 1)
    answers = []
    for n in range(500):
        body = await daemon.commands.handle("action", request(transaction=f"f{n}", seat="x"), now())
        answers.append(body)
        if "journal full" in (body["error"] or ""):
            return answers
    raise AssertionError("500 journaled refusals never filled the capped journal")


async def test_a_full_journal_degrades_the_table_holds_device_inputs_and_recovers(
    tmp_path: Path,
) -> None:
    async with Running(disk_config(tmp_path)) as daemon:
        await until(lambda: daemon.health["shuffler"]["health"] == "online")
        journal = daemon.writer.journal
        answers = await fill(daemon)
        assert daemon.space.full
        assert daemon.status_line().startswith("DEGRADED: journal disk full")
        birth = daemon.link.status_body("online")
        assert birth["degraded"] is True
        assert [a["alarm"] for a in birth["alarms"]] == ["journal.full"]
        assert daemon.link.status_body("offline")["alarms"] == []

        # every request is answered with the reason, and changes nothing
        state, inputs = daemon.runner.state, journal.counts()
        refused = await daemon.commands.handle("start_hand", request(transaction="s"), now())
        assert refused["status"] == "error"
        assert refused["transaction"] == "s"
        assert refused["error"].startswith("journal full: the table takes no input")
        assert daemon.runner.state is state

        # a device's inputs wait in the device, unacknowledged, while the table retries
        device = daemon.devices.devices["shuffler"]
        assert isinstance(device, VirtualTable)
        await device.shuffle(1)
        retries = daemon.space.retries
        await until(lambda: daemon.space.retries >= retries + 3)
        assert [e["type"] for e in device._memory["pending"]] == ["DeckChecked", "ShuffleCompleted"]
        assert journal.counts() == inputs

        # room again: the outage is journaled first, then the held inputs, in order
        await daemon.writer.call(journal.cap_pages, ROOM)
        await until(lambda: not daemon.space.full and not device._memory["pending"])
        assert daemon.link.status_body("online")["degraded"] is False
        types = [json.loads(r.body)["type"] for r in journal.inputs()][-2:]
        assert types == ["DeckChecked", "ShuffleCompleted"]
        recovered = next(
            json.loads(r.body)
            for r in journal.events()
            if json.loads(r.body)["type"] == "journal.disk"
        )
        assert recovered["data"]["condition"] == "recovered"
        assert recovered["data"]["refused"] == 2  # the last fill request and start_hand
        assert recovered["data"]["full_since"]
        ok = await daemon.commands.handle("start_hand", request(transaction="s2"), now())
        assert ok["status"] == "ok", ok
        assert (await daemon.writer.call(journal.verify)).ok
        assert "journal full" in (answers[-1]["error"] or "")


async def test_a_daemon_that_starts_on_a_full_journal_goes_ready_degraded(
    tmp_path: Path,
) -> None:
    async with Running(disk_config(tmp_path)) as daemon:
        ok = await daemon.commands.handle("start_hand", request(transaction="a"), now())
        assert ok["status"] == "ok"
    async with Running(disk_config(tmp_path, max_pages=1)) as daemon:  # READY all the same
        answers = await fill(daemon)
        assert daemon.space.full
        assert "journal full" in (answers[-1]["error"] or "")
    # the stop on a full journal was clean (exit 0, the checkpoint skipped); room again:
    async with Running(disk_config(tmp_path)) as daemon:
        ok = await daemon.commands.handle("action", request(transaction="b", seat=1), now())
        assert "journal full" not in (ok["error"] or "")
        assert (await daemon.writer.call(daemon.writer.journal.verify)).ok


async def test_a_restart_that_ends_an_outage_journals_its_end(tmp_path: Path) -> None:
    """Stopped while full, started again still full, then with room: the journal's
    ``recovered`` record names the outage's first moment, and the outage is recorded once."""

    def recoveries(journal: Journal) -> list[dict[str, Any]]:
        bodies = [json.loads(body)["data"] for body in journal.event_bodies("journal.disk")]
        return [data for data in bodies if data["condition"] == "recovered"]

    async with Running(disk_config(tmp_path)) as daemon:
        await fill(daemon)
        assert daemon.space.full_since is not None
        since = rfc3339(daemon.space.full_since)
    marker = tmp_path / "journal.sqlite.full"  # the outage's start, kept across the stop
    async with Running(disk_config(tmp_path, max_pages=1)) as daemon:  # still no room
        assert daemon.space.full
        assert daemon.space.full_since is not None
        assert rfc3339(daemon.space.full_since) == since
        assert recoveries(daemon.writer.journal) == []
        assert marker.is_file()
    async with Running(disk_config(tmp_path)) as daemon:  # room: the outage ends
        assert not daemon.space.full
        ended = recoveries(daemon.writer.journal)
        assert [r["full_since"] for r in ended] == [since]
        assert ended[0]["seconds"] > 0
    assert not marker.exists()
    async with Running(disk_config(tmp_path)) as daemon:
        assert [r["full_since"] for r in recoveries(daemon.writer.journal)] == [since]


async def test_a_marker_left_after_the_record_was_journaled_is_only_removed(
    tmp_path: Path,
) -> None:
    """A crash between the ``recovered`` record and the marker's removal: the next start
    finds the record and records the outage no second time."""
    async with Running(disk_config(tmp_path)) as daemon:
        await fill(daemon)
        assert daemon.space.full_since is not None
        since = daemon.space.full_since
        await daemon.writer.call(daemon.writer.journal.cap_pages, ROOM)
        await until(lambda: not daemon.space.full)
        marker = daemon.space.marker
        assert not marker.exists()
        daemon.space._mark(since)  # as the crash left it
    async with Running(disk_config(tmp_path)) as daemon:
        assert not daemon.space.full
        assert not marker.exists()
        bodies = daemon.writer.journal.event_bodies("journal.disk")
        assert [json.loads(b)["data"]["condition"] for b in bodies] == ["recovered"]


async def test_a_full_disk_wakes_retention_which_prunes_what_is_stored_elsewhere(
    tmp_path: Path,
) -> None:
    """The daemon's journal on a real file system filled to the last byte: the table degrades,
    retention wakes and prunes the archived segments through the reserve, and the room they
    give back ends the outage by itself."""
    archive = tmp_path / "nas"
    archive.mkdir()
    with small_disk(tmp_path / "disk", "16m") as disk:
        path = disk / "journal.sqlite"
        await write_hands(path, inputs_of(40))  # more inputs than a start reads before its snapshot
        conn = sqlite3.connect(path)
        conn.execute("DELETE FROM outbox")  # the broker has every event
        conn.commit()
        conn.close()
        config = disk_config(
            tmp_path,
            path=str(path),
            live_hands=3,
            archive_dir=str(archive),
            low_disk_bytes=0,
            retention_interval=3600,  # a round at start, then only when woken
        )
        async with Running(config) as daemon:
            journal = daemon.writer.journal
            await until(lambda: daemon.retention.last.copied >= 1, timeout=60)
            archived = [s.name for s in journal.segments()]
            assert daemon.retention.last.pruned == 0
            fill_disk(disk / "filler", 0)
            for n in range(5000):  # journaled refusals until the WAL has no frame left
                body = await daemon.commands.handle(
                    "action", request(transaction=f"f{n}", seat="x"), now()
                )
                if "journal full" in (body["error"] or ""):
                    break
            else:
                raise AssertionError("5000 journaled refusals never filled the disk")
            await until(lambda: not daemon.space.full, timeout=60)
            # the room the reserve gave back can end the outage before the prune's mark that
            # released it is in; and a segment is marked pruned before its file goes (a crash
            # between leaves a file the next round removes): the outage can end in between
            await until(lambda: {s.state for s in journal.segments()} == {PRUNED}, timeout=60)
            assert sorted(p.name for p in archive.iterdir()) == archived
            await until(lambda: not any(journal.segments_dir.iterdir()), timeout=60)
            disk_events = [json.loads(b)["data"] for b in journal.event_bodies("journal.disk")]
            assert disk_events[-1]["condition"] == "recovered"
            assert (await daemon.writer.call(journal.verify, segments=True)).ok


async def test_the_low_disk_alarm_is_raised_journaled_and_cleared(tmp_path: Path) -> None:
    async with Running(disk_config(tmp_path, low_disk_bytes=2**62)) as daemon:
        await until(lambda: daemon.space.low)
        assert daemon.status_line().startswith("low disk: ")
        birth = daemon.link.status_body("online")
        assert birth["degraded"] is False
        assert [a["alarm"] for a in birth["alarms"]] == ["journal.low_disk"]
        journal = daemon.writer.journal

        def disk_events() -> list[dict[str, Any]]:
            bodies = [json.loads(r.body) for r in journal.events()]
            return [b["data"] for b in bodies if b["type"] == "journal.disk"]

        await until(lambda: len(disk_events()) == 1)
        low = disk_events()[0]
        assert low["condition"] == "low"
        assert low["low_disk_bytes"] == 2**62
        assert 0 < low["free_bytes"] < 2**62
        assert low["journal_bytes"] > 0
        daemon.space.config = SpaceConfig(low_disk_bytes=1, poll=0.02)
        await until(lambda: len(disk_events()) == 2)
        assert disk_events()[1]["condition"] == "ok"
        assert not daemon.space.low
        assert daemon.link.status_body("online")["alarms"] == []


def test_full_is_told_from_other_errors(tmp_path: Path) -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL
    assert is_full(full, tmp_path)
    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = sqlite3.SQLITE_BUSY
    assert not is_full(locked, tmp_path)
    io = sqlite3.OperationalError("disk I/O error")
    io.sqlite_errorcode = sqlite3.SQLITE_IOERR_SHMSIZE
    assert not is_full(io, tmp_path)  # this file system has room: a real I/O error
    assert is_full(OSError(28, "No space left on device"), tmp_path)
    assert not is_full(ValueError("x"), tmp_path)


def test_a_capped_journal_fails_as_a_full_disk(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path / "j.sqlite", table_id="T1")
    journal.cap_pages(1)

    def append_until_it_fails() -> None:
        for _ in range(1000):
            journal.next_bdseq()
            journal.append(input_row=("ts", "X", "x" * 500), events=[])

    with pytest.raises(sqlite3.OperationalError) as caught:
        append_until_it_fails()
    assert is_full(caught.value, tmp_path)
    assert journal.verify().ok  # the failed transaction left nothing behind
    journal.close()
    assert JournalSpace(tmp_path / "j.sqlite").alarms() == []
    assert issubclass(JournalFullError, RuntimeError)


def test_every_journal_write_on_a_really_full_disk_fails_cleanly_and_leaves_it_usable(
    tmp_path: Path,
) -> None:
    """On a full file system SQLite fails at COMMIT and rolls back itself: the journal's own
    rollback must not fail on top ("no transaction is active"), and the next write, once there
    is room, must work."""
    with small_disk(tmp_path / "disk", "2m") as disk:
        journal = Journal.open(disk / "j.sqlite", table_id="T1")
        for _ in range(5):
            journal.append(input_row=("ts", "X", "x" * 500), events=[NewEvent("a.b", None, "y")])
        filler = disk / "filler"
        fill_disk(filler, 0)
        writes: dict[str, Callable[[], object]] = {
            "append": lambda: journal.append(input_row=("ts", "X", "x" * 5000), events=[]),
            "next_bdseq": journal.next_bdseq,
            "delete_outbox": functools.partial(forget_and_delete, journal, [1, 2, 3]),
        }

        def until_it_fails(write: Callable[[], object]) -> None:
            for _ in range(200):  # until the WAL has to grow
                write()

        for name, write in writes.items():
            with pytest.raises(sqlite3.Error) as caught:
                until_it_fails(write)
            assert is_full(caught.value, disk), (name, caught.value)
            assert journal.counts()["inputs"] >= 5  # still readable, no transaction left open
        filler.unlink()
        for write in writes.values():
            write()
        assert journal.verify().ok
        journal.close()


def test_a_journal_on_a_disk_with_no_byte_free_opens_and_reads(tmp_path: Path) -> None:
    """A second connection (a tool, the daemon restarted) opens a journal on a full disk and
    reads it; it is not called damaged."""
    with small_disk(tmp_path / "disk", "2m") as disk:
        journal = Journal.open(disk / "j.sqlite", table_id="T1")
        for _ in range(5):
            journal.append(input_row=("ts", "X", "x" * 500), events=[NewEvent("a.b", None, "y")])
        fill_disk(disk / "filler", 0)

        def until_it_fails() -> None:
            for _ in range(200):
                journal.append(input_row=("ts", "X", "x" * 5000), events=[])

        with pytest.raises(sqlite3.OperationalError):
            until_it_fails()
        other = Journal.open_existing(disk / "j.sqlite")
        assert other.verify().ok
        assert other.counts()["inputs"] >= 5
        other.close()
        journal.close()


def test_the_outage_marker_is_made_on_a_disk_with_no_byte_free(tmp_path: Path) -> None:
    """The marker is an empty file whose modification time is the outage's start: it needs no
    data block, so a file system filled to the last byte takes it."""
    with small_disk(tmp_path / "disk", "2m") as disk:
        fill_disk(disk / "filler", 0)
        with pytest.raises(OSError, match="No space left"):
            (disk / "one-byte").write_bytes(b"x")
        space = JournalSpace(disk / "j.sqlite")
        space.mark_full(OSError(28, "No space left on device"))
        assert space.full_since is not None
        assert space.marker.stat().st_size == 0
        assert JournalSpace(disk / "j.sqlite")._marked_since() == space.full_since


def forget_and_delete(journal: Journal, row_ids: list[int]) -> None:
    """The link's way to delete acknowledged outbox rows when nothing else is written."""
    journal.forget(row_ids)
    journal.delete_outbox()
