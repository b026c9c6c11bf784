"""The journal's disk: free space, the low-disk alarm, and the degraded state of a full disk.

A table that cannot record what happens must not let anything happen, but it must not die
either: a daemon that exits on a full disk is restarted by systemd into the same full disk, for
ever. So a write that fails for want of space (SQLite's ``database or disk is full``, or an I/O
error with no space left) changes nothing and puts the table in a *degraded* state:

* no input is taken that cannot be journaled: every request is answered at once with the reason
  (:meth:`JournalSpace.refusal`), a device's input waits in its sink, so the driver does not
  acknowledge it and the device keeps it, and the clock's ticks wait;
* the ``status`` topic and systemd's ``STATUS=`` say so (:meth:`JournalSpace.alarms`);
* every ``poll`` seconds :meth:`JournalSpace.watch` tries a write again: the ``journal.disk``
  event that records the outage (since when, how many requests were refused). Once it is
  journaled the table takes inputs again, and the devices' held inputs go in, in order.

The outage outlives a stop: while it lasts an empty *marker* file beside the journal
(``journal.sqlite.full``) holds its start as its modification time: an empty file and its
times need no data block, so it can be made on a disk with no byte free, where the journal
cannot record anything. A start that finds it (:meth:`JournalSpace.resume`) is degraded from
that moment on and journals the ``recovered`` record as soon as it can, so the journal says
when every outage ended even when a restart ended it (systemd's, or an operator's after making
room). The marker goes once the record is in; a marker left by a crash between the two is
recognised by the record's ``full_since``.

Before that, a *low-disk* alarm: when the free space of the journal's file system falls below
``[journal] low_disk_bytes`` a ``journal.disk`` event (``low``) is journaled and the alarm is
raised on the status topic and in ``STATUS=``; it clears (``ok``) once the free space is back
above the watermark by a tenth, so a disk hovering at the mark does not flap.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

from controller.shell.segments import fsync_directory
from controller.table.codec import rfc3339
from controller.table.event_types import JournalDisk
from controller.table.events import Severity, TableEvent

log = structlog.get_logger("tablectl.journal")

#: An I/O error with less than this free is a full disk (SQLite reports some as I/O errors:
#: its shared-memory file cannot grow, a write came up short).
NEARLY_FULL = 1024 * 1024

#: Journals an event that no input caused; raises JournalFullError when it cannot.
Record = Callable[[TableEvent], Awaitable[object]]

#: The reserve file's size: room for retention's bookkeeping on a full disk (a few WAL pages a
#: record, and SQLite's shared memory), with a wide margin.
RESERVE_BYTES = 1024 * 1024


class JournalFullError(RuntimeError):
    """The journal cannot take a write: its disk is full. Nothing was written."""


def free_bytes(directory: Path) -> int:
    """Bytes the daemon's user may still write on the file system of ``directory``."""
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def journal_bytes(path: Path) -> int:
    """The journal's size on disk: the database, its write-ahead log and shared memory."""
    total = 0
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            total += (path.parent / (path.name + suffix)).stat().st_size
    return total


class Reserve:
    """A file of :data:`RESERVE_BYTES` beside the journal, released to let a bookkeeping write
    commit on a full disk (retention's record of a prune) and made again once there is room.

    It holds nothing: losing it (a crash after it was released) costs only its re-creation.
    """

    def __init__(self, journal: Path, size: int = RESERVE_BYTES) -> None:
        self.path = journal.with_name(journal.name + ".reserve")
        self.size = size

    @property
    def held(self) -> bool:
        """The reserve is there, whole."""
        try:
            return self.path.stat().st_size >= self.size
        except OSError:
            return False

    def release(self) -> bool:
        """Give the reserve's room back to the file system; whether there was one."""
        if not self.path.exists():
            return False
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        log.warning("journal.reserve_released", bytes=self.size)
        return True

    def make(self) -> bool:
        """Create the reserve when it is not there and the disk has room for it and as much
        again; whether it is there now. Never fills the disk: a write that fails for want of
        space leaves no partial reserve."""
        if self.held:
            return True
        try:
            if free_bytes(self.path.parent) < 2 * self.size + NEARLY_FULL:
                return False
            temporary = self.path.with_name(self.path.name + ".tmp")
            with temporary.open("wb") as file:
                block = b"\0" * 65536
                for offset in range(0, self.size, len(block)):
                    file.write(block[: min(len(block), self.size - offset)])
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                self.path.with_name(self.path.name + ".tmp").unlink()
            log.warning("journal.reserve_not_made", error=str(exc))
            return False
        return True


def is_full(error: BaseException, directory: Path) -> bool:
    """Whether ``error`` from the journal means its disk is full."""
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    if not isinstance(error, sqlite3.Error):
        return False
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    if code == sqlite3.SQLITE_FULL:
        return True
    if code == sqlite3.SQLITE_IOERR:
        try:
            return free_bytes(directory) < NEARLY_FULL
        except OSError:
            return False
    return False


@dataclass(frozen=True)
class SpaceConfig:
    """The watermark and how often the disk is looked at (``[journal]``)."""

    low_disk_bytes: int = 0
    poll: float = 5.0


class JournalSpace:
    """Whether the journal can be written, and how much room its disk has."""

    def __init__(self, path: Path, config: SpaceConfig = SpaceConfig()) -> None:
        self.path = path
        #: Present while the journal is full: its modification time is the outage's start.
        self.marker = path.with_name(path.name + ".full")
        self.config = config
        #: Set while the journal takes writes; cleared by a full disk until a write succeeds.
        self.writable = asyncio.Event()
        self.writable.set()
        self.full_since: datetime | None = None
        self.full_detail = ""
        self.low = False
        self.refused = 0  # requests answered "journal full" during the current outage
        self.retries = 0  # writes tried again in vain during the current outage
        self.free = -1  # bytes, at the last look (-1: not looked yet)
        self.size = 0  # the journal's bytes, at the last look
        #: Retention cannot keep the budget (the reason), controller/shell/retention.py.
        self.retention: str | None = None
        #: Called when the state changes (full, writable again, low, not low).
        self.on_change: Callable[[], None] | None = None

    # ------------------------------------------------------------------ state

    @property
    def full(self) -> bool:
        """The journal takes no writes (the degraded state)."""
        return not self.writable.is_set()

    def mark_full(self, error: BaseException) -> None:
        """A write failed for want of space: the table is degraded until one succeeds."""
        self.measure()
        if self.full:
            return
        self.writable.clear()
        self.full_since = datetime.now(UTC)
        self.full_detail = str(error)
        self.refused = 0
        self.retries = 0
        log.error(
            "journal.full",
            error=str(error),
            free_bytes=self.free,
            detail="degraded: no input is taken until a write succeeds again",
        )
        self._mark(self.full_since)
        self._changed()

    async def resume(self, record: Record, recorded: str | None) -> None:
        """At start: an outage the marker says was not over at the stop is this run's too;
        journal its ``recovered`` record now if the disk has room (else the watch will).
        ``recorded`` is the ``full_since`` of the journal's last ``recovered`` record."""
        since = self._marked_since()
        if since is None:
            return
        if recorded == rfc3339(since):  # recorded before the stop: only the marker was left
            self._unmark()
            return
        self.writable.clear()
        self.full_since = since
        self.full_detail = "the journal's disk was full when the daemon stopped"
        self.refused = 0
        self.retries = 0
        log.warning("journal.full_before_start", full_since=rfc3339(since))
        self._changed()
        await asyncio.to_thread(self.measure)
        await self._try_recover(record)

    def _mark(self, since: datetime) -> None:
        try:
            descriptor = os.open(self.marker, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                micros = (since - EPOCH) // timedelta(microseconds=1)
                os.utime(descriptor, ns=(micros * 1000, micros * 1000))
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            fsync_directory(self.marker.parent)
        except OSError as exc:  # the outage is still recorded by this run, if it sees its end
            log.warning("journal.full_marker_failed", file=str(self.marker), error=str(exc))

    def _marked_since(self) -> datetime | None:
        try:
            nanoseconds = self.marker.stat().st_mtime_ns
        except OSError:
            return None
        return EPOCH + timedelta(microseconds=nanoseconds // 1000)

    def _unmark(self) -> None:
        with contextlib.suppress(OSError):
            self.marker.unlink()
            fsync_directory(self.marker.parent)

    def refusal(self) -> str:
        """The reason every request gets while the table is degraded."""
        self.refused += 1
        return (
            f"journal full: the table takes no input until disk space returns "
            f"({max(self.free, 0)} bytes free)"
        )

    def alarms(self) -> list[dict[str, Any]]:
        """The raised alarms, as the status topic carries them."""
        alarms: list[dict[str, Any]] = []
        if self.full_since is not None:
            alarms.append(
                {
                    "alarm": "journal.full",
                    "since": rfc3339(self.full_since),
                    "detail": "the journal's disk is full: the table takes no input",
                }
            )
        if self.retention is not None:
            alarms.append({"alarm": "journal.retention", "detail": self.retention})
        if self.low:
            alarms.append(
                {
                    "alarm": "journal.low_disk",
                    "detail": f"{max(self.free, 0)} bytes free, below the watermark "
                    f"of {self.config.low_disk_bytes}",
                }
            )
        return alarms

    def status(self) -> str:
        """The part of systemd's ``STATUS=`` line about the journal's disk ("" when fine)."""
        if self.full:
            return f"DEGRADED: journal disk full ({max(self.free, 0)} bytes free), no input taken"
        low = f"low disk: {self.free} bytes free" if self.low else ""
        return "; ".join(part for part in (low, self.retention or "") if part)

    def measure(self) -> None:
        """Look at the free space and the journal's size."""
        with contextlib.suppress(OSError):
            self.free = free_bytes(self.path.parent)
        self.size = journal_bytes(self.path)

    # ------------------------------------------------------------------ the watch

    async def watch(self, record: Record) -> None:
        """Look at the disk every ``poll`` seconds: raise or clear the low-disk alarm, and
        while the journal is full try to journal the outage's record (which ends it)."""
        while True:
            await asyncio.to_thread(self.measure)
            if self.full:
                await self._try_recover(record)
            else:
                await self._check_low(record)
            await asyncio.sleep(self.config.poll)

    async def _try_recover(self, record: Record) -> None:
        assert self.full_since is not None
        seconds = (datetime.now(UTC) - self.full_since).total_seconds()
        event = disk_event(
            "recovered",
            self,
            full_since=rfc3339(self.full_since),
            seconds=round(seconds, 3),
            refused=self.refused,
        )
        try:
            await record(event)
        except JournalFullError:
            self.retries += 1
            return
        log.warning(
            "journal.writable_again",
            full_for=round(seconds, 3),
            refused=self.refused,
            free_bytes=self.free,
        )
        self.full_since = None
        self.full_detail = ""
        self._unmark()
        self.writable.set()
        self._changed()

    async def _check_low(self, record: Record) -> None:
        watermark = self.config.low_disk_bytes
        if watermark <= 0 or self.free < 0:
            return
        if not self.low and self.free < watermark:
            self.low = True
            log.warning("journal.low_disk", free_bytes=self.free, watermark=watermark)
        elif self.low and self.free > watermark + watermark // 10:
            self.low = False
            log.info("journal.disk_ok", free_bytes=self.free, watermark=watermark)
        else:
            return
        self._changed()
        # Recorded after the alarm is raised: a write that fails here makes the disk full.
        with contextlib.suppress(JournalFullError):
            await record(disk_event("low" if self.low else "ok", self))

    async def set_retention(self, reason: str | None, waiting: int, record: Record) -> None:
        """Raise (a reason) or clear (None) the retention alarm; journaled when raised or
        cleared (not each time the bytes waiting change)."""
        was = self.retention
        self.retention = reason
        if reason != was:
            self._changed()
        if (reason is None) == (was is None):
            return
        if reason is not None:
            log.warning("journal.retention_waits", reason=reason)
        with contextlib.suppress(JournalFullError):
            condition = "retention" if reason is not None else "ok"
            await record(disk_event(condition, self, waiting_bytes=waiting))

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def last_recovered(bodies: list[str]) -> str | None:
    """The ``full_since`` of the last ``journal.disk`` ``recovered`` record among the journal
    texts of the ``journal.disk`` events (None: none)."""
    for body in reversed(bodies):
        try:
            data = json.loads(body)["data"]
        except (ValueError, KeyError, TypeError):
            continue  # a damaged row: its own hash fails
        if isinstance(data, dict) and data.get("condition") == "recovered":
            since = data.get("full_since")
            return since if isinstance(since, str) else None
    return None


def disk_event(condition: str, space: JournalSpace, **extra: Any) -> TableEvent:
    """``journal.disk``: the disk ran low, has room again, or the journal was full until now."""
    data = JournalDisk(
        condition, max(space.free, 0), space.config.low_disk_bytes, space.size, **extra
    )
    severity = Severity.INFO if condition == "ok" else Severity.WARN
    return TableEvent(data, datetime.now(UTC), None, (), severity)
