"""Retention: the journal stays within its disk (docs/operations.md, "Retention").

A table writes about 1.1 KB an event, 80 events a hand, 200,000 hands a year: ~19 GB, more
than a table PC's disk. Each retention round (:meth:`Retention.run_once`):

1. **Archives** closed hands: the rows of hands that ended (``hand.completed``, a misdeal, a
   void), and the rows between them, in chain order, move from the live database into a
   segment file (:mod:`controller.shell.segments`), a few thousand rows at a time. The file is
   written to a temporary name, fsynced, renamed and the directory fsynced; only then are the
   rows deleted, in the transaction that records the segment. A crash before that leaves a file
   no record names (removed by the next round; the rows are still live); after it, the rows are
   in the segment only. What a start needs stays live: the last ``live_hands`` closed hands,
   the :data:`~controller.shell.table.RECENT_INPUTS` inputs before the newest snapshot (a deck
   or group reported again after a device's power cut; each device's last numbered event is
   kept apart, in the journal's ``origins``) and everything after it, the events the broker
   has not acknowledged, and every input of the last ``inbox_seconds`` with its inbox row (a
   request redelivered within that window gets its stored response).
2. **Copies** each segment to ``archive_dir`` when set (a temporary name, fsync, rename, the
   copy's SHA-256 compared), then marks it ``archived``.
3. **Prunes** the oldest segments first, while the journal (database, WAL, local segments) is
   over ``max_bytes`` or a segment is older than ``keep_days``, and only a segment that is
   stored elsewhere: ``archived``, or every event in it confirmed by the pit's ``stored``
   request. The file goes; the record stays (the chain is checked across the gap). When the
   budget cannot be kept for want of confirmation, nothing unconfirmed is deleted: the round
   reports the bytes waiting, which the daemon raises as an alarm. While the disk is low or
   full (``pressed``) every segment stored elsewhere goes, oldest first, whatever the budget.

**On a full disk** the round archives nothing (a segment needs room before its rows can go)
but still prunes, although its record of a prune is a write and the disk has no room for one.
A :class:`~controller.shell.space.Reserve` file of 1 MiB sits beside the journal for that: a
bookkeeping write that fails for want of space (the prune's mark, the copy's ``archived``)
releases the reserve and is tried once more; the round makes the reserve again at its end once
the disk has room for it and as much again. The order of a prune stays *record, then delete*,
so a crash at any point leaves a consistent journal:

* after the reserve was released, before the record: nothing changed but the reserve, made
  again by a later round;
* after the record, before the file was deleted: a segment marked ``pruned`` whose file is
  still there, with its SHA-256: the next round readopts it (``local``) and prunes it again;
* after the delete: done.

The other order (delete first, then record) needs no reserve, but a crash between the two
would leave a record naming a file that is gone, which ``journal verify`` must report as a lost
segment: a pruned segment would look like a deleted one.

Every journal write goes through ``write`` (in the daemon: the journal's writer thread); the
segment files are built and copied off it, on a connection of their own.
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

import structlog

from controller.shell.chain import CHAINED, Head, connect, row_hash
from controller.shell.gate import RefusedError, bounded_text
from controller.shell.journal import Epoch, Journal
from controller.shell.journal_segments import segment_confirmed
from controller.shell.maintenance import Stored
from controller.shell.segments import (
    ARCHIVED,
    FORMAT,
    LOCAL,
    PRUNED,
    STATES,
    Segment,
    SegmentRow,
    directory_of,
    file_sha256,
    fsync_directory,
    orphans,
    publish,
    remove,
    segment_name,
    write_file,
)
from controller.shell.space import JournalFullError, Reserve, is_full, journal_bytes
from controller.shell.table import RECENT_INPUTS
from controller.table.event_types import HandCompleted, HandMisdeal, HandVoid, JournalAccepted

log = structlog.get_logger("tablectl.retention")

P = ParamSpec("P")
T = TypeVar("T")

#: Seconds a stop waits for the retention step in flight (its journal writes are done by then:
#: after the stop is asked, the round makes none).
STOP_WAIT = 5.0

#: The events that close a hand: its rows may be archived once enough hands followed.
ENDS = (HandCompleted.TYPE, HandMisdeal.TYPE, HandVoid.TYPE)


class Write(Protocol):
    """Runs a journal method where the journal's writes run (the daemon: its writer thread)."""

    def __call__(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T: ...


def direct(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """:class:`Write` for a journal used on one thread (tools, benchmarks, tests)."""
    return fn(*args, **kwargs)


class ArchiveError(RuntimeError):
    """A segment could not be written as planned (the reason says why); nothing moved."""


class StoppedError(RuntimeError):
    """The round was told to stop (the daemon is shutting down)."""


@dataclass(frozen=True)
class RetentionConfig:
    """``[journal]`` retention keys (docs/operations.md, "Retention")."""

    live_hands: int = 50
    keep_days: float | None = None
    max_bytes: int | None = None
    archive_dir: Path | None = None
    interval: float = 60.0
    inbox_seconds: float = 3600.0
    segment_rows: int = 5000
    recent_inputs: int = RECENT_INPUTS  # inputs before the snapshot kept for de-duplication


@dataclass
class RoundReport:
    """What one round did, and where the journal stands."""

    archived: int = 0  # segments written
    copied: int = 0  # segments copied to the archive directory
    pruned: int = 0  # segments whose files were deleted
    live_bytes: int = 0  # database, WAL and shared memory
    segment_bytes: int = 0  # local segment files
    by_state: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    waiting_bytes: int = 0  # over the budget, waiting for the pit or the archive
    over_budget: bool = False

    @property
    def total_bytes(self) -> int:
        """What the budget counts."""
        return self.live_bytes + self.segment_bytes

    def alarm(self) -> str | None:
        """The retention alarm's reason (None: the budget is kept, or nothing waits)."""
        if self.over_budget and self.waiting_bytes > 0:
            return f"retention: {self.waiting_bytes} bytes waiting for the pit/archive"
        return None


class Retention:
    """The retention rounds of one journal."""

    def __init__(
        self,
        journal: Journal,
        config: RetentionConfig,
        *,
        write: Write = direct,
        hook: Callable[[str], None] = lambda step: None,
        may_archive: Callable[[], bool] = lambda: True,
        pressed: Callable[[], bool] = lambda: False,
        reserve: Reserve | None = None,
    ) -> None:
        self.journal = journal
        self.config = config
        self.write = write
        self.may_archive = may_archive
        #: The disk is low or full: prune everything stored elsewhere, whatever the budget.
        self.pressed = pressed
        self.reserve = reserve or Reserve(journal.path)
        #: Called between the steps of an archive (``written``, ``published``, ``committed``)
        #: and of a prune (``marked``), and once the reserve was released (``released``): the
        #: crash tests raise there.
        self.hook = hook
        self.stopping = threading.Event()
        self.last = RoundReport()

    @property
    def directory(self) -> Path:
        """Where the segments live."""
        return directory_of(self.journal.path)

    # ------------------------------------------------------------------ one round

    def run_once(self, now: datetime) -> RoundReport:
        """Archive, copy, prune; the report (also kept as :attr:`last`)."""
        report = RoundReport()
        pressed = self.pressed()
        self._clean()
        limit = self._write(archive_limit, self.journal, self.config, now)
        while not self.stopping.is_set() and self.may_archive():
            planned = self._write(plan_archive, self.journal, self.config, limit)
            if planned is None:
                break
            try:
                self.archive(*planned)
            except (JournalFullError, sqlite3.Error, OSError) as exc:
                if not self._full(exc):
                    raise
                log.warning("retention.archive_waits", reason="the disk is full", error=str(exc))
                self._remove_orphans()  # the file whose rows stay live gives its room back
                pressed = True
                break
            report.archived += 1
        if self.config.archive_dir is not None:
            for segment in self._write(self.journal.segments, pruned=False):
                if segment.state != LOCAL or self.stopping.is_set():
                    continue
                if not self.copy(segment):
                    break  # the archive cannot take it now: the next round tries again
                report.copied += 1
        self._prune(now, report, pressed=pressed)
        if not self.stopping.is_set():
            self.reserve.make()
        self.last = report
        return report

    def _write(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        if self.stopping.is_set():
            raise StoppedError("retention stopped")
        return self.write(fn, *args, **kwargs)

    def _record(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A bookkeeping write; on a full disk, once more with the reserve released."""
        try:
            return self._write(fn, *args, **kwargs)
        except (JournalFullError, sqlite3.Error, OSError) as exc:
            if not self._full(exc) or not self.reserve.release():
                raise
        self.hook("released")
        return self._write(fn, *args, **kwargs)

    def _full(self, error: BaseException) -> bool:
        return isinstance(error, JournalFullError) or is_full(error, self.journal.path.parent)

    def _clean(self) -> None:
        """Remove what a crash left (files no record names: their rows are still live) and
        readopt pruned segments whose files are back (restored, or a prune cut short)."""
        self._remove_orphans()
        for segment in self._record(self.journal.readopt_restored):
            log.info("retention.readopted", segment=segment.name)

    def _remove_orphans(self) -> None:
        recorded = self._write(self.journal.segment_names)
        for path in orphans(self.directory, recorded):
            log.warning("retention.orphan_removed", file=path.name)
            remove(path)

    # ------------------------------------------------------------------ archiving

    def archive(self, first: int, last: int) -> Segment:
        """Move positions ``first``..``last`` into a segment (file first, then the rows go)."""
        journal = self.journal
        prev = self._write(journal.archived_head)
        if prev.pos != first - 1:
            raise ArchiveError(f"positions {first}-{last} do not follow the archive at {prev.pos}")
        rows, header = read_range(journal.path, prev, last, journal.table_id, journal.epochs)
        temporary, size, digest = write_file(self.directory, header, rows)
        self.hook("written")
        publish(temporary, header["name"])
        self.hook("published")
        segment = Segment(
            header["name"],
            first,
            last,
            prev.hash,
            header["last_hash"],
            len(rows),
            size,
            digest,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            LOCAL,
            header,
        )
        self._write(journal.commit_segment, segment)
        self.hook("committed")
        log.info("retention.archived", segment=segment.name, rows=len(rows), bytes=size)
        return segment

    # ------------------------------------------------------------------ the archive copy

    def copy(self, segment: Segment) -> bool:
        """Copy a segment to the archive directory and mark it ``archived`` once the copy's
        SHA-256 is the segment's; False (logged) when the archive cannot take it now."""
        archive = self.config.archive_dir
        assert archive is not None
        try:
            copy_verified(self.directory / segment.name, archive, segment.sha256)
        except (OSError, ArchiveError) as exc:
            log.warning("retention.archive_copy_failed", segment=segment.name, error=str(exc))
            return False
        reason = f"archived: a copy with the same sha256 in {archive}"
        self._record(self.journal.set_segment_state, segment.name, ARCHIVED, reason)
        return True

    # ------------------------------------------------------------------ pruning

    def _prune(self, now: datetime, report: RoundReport, *, pressed: bool) -> None:
        journal = self.journal
        # the segments whose files are here (the records of pruned ones are not read: years of
        # them would make every round slower than the last)
        kept = self._write(journal.segments, pruned=False)
        confirmed = self._write(journal.confirmations)
        report.live_bytes = journal_bytes(journal.path)
        report.segment_bytes = sum(s.bytes for s in kept)
        budget = self.config.max_bytes
        over = report.total_bytes - budget if budget is not None else 0
        oldest = None
        if self.config.keep_days is not None:
            oldest = now - timedelta(days=self.config.keep_days)
        pruned: set[str] = set()
        for segment in kept:
            aged = oldest is not None and _ended_before(segment, oldest)
            if over <= 0 and not aged and not pressed:
                break
            why = prune_reason(segment, confirmed)
            if why is None:
                break  # oldest first: a younger segment never goes before an older one
            if self.stopping.is_set():
                break
            self._record(journal.set_segment_state, segment.name, PRUNED, why)
            self.hook("marked")
            remove(self.directory / segment.name)
            log.info("retention.pruned", segment=segment.name, bytes=segment.bytes, reason=why)
            report.pruned += 1
            pruned.add(segment.name)
            report.segment_bytes -= segment.bytes
            over -= segment.bytes
        report.by_state.update(self._write(journal.segment_counts))
        report.over_budget = over > 0
        report.waiting_bytes = sum(
            s.bytes
            for s in kept
            if s.state == LOCAL and s.name not in pruned and not segment_confirmed(s, confirmed)
        )


def prune_reason(segment: Segment, confirmed: dict[str, int]) -> str | None:
    """Why the segment may be pruned (None: it may not: it is stored nowhere else)."""
    if segment.state == ARCHIVED:
        return segment.reason or "archived"
    if segment_confirmed(segment, confirmed):
        through = ", ".join(
            f"epoch {epoch} through seq {confirmed.get(epoch, 0)}" for epoch in segment.epochs
        )
        return f"confirmed stored by the pit ({through or 'no events'})"
    return None


def _ended_before(segment: Segment, moment: datetime) -> bool:
    last = segment.header.get("last_ts")
    if not isinstance(last, str):
        return False
    try:
        return datetime.fromisoformat(last) < moment
    except ValueError:
        return False


# ---------------------------------------------------------------------- planning and reading


def archive_limit(journal: Journal, config: RetentionConfig, now: datetime) -> int:
    """The last position a round may archive: the end of the newest closed hand that is not one
    of the last ``live_hands``, and before everything a start or a redelivered request needs
    (the module's docstring)."""
    newest = journal.read(
        "SELECT input_id FROM events WHERE type IN (?, ?, ?) AND input_id IS NOT NULL "
        "ORDER BY seq DESC LIMIT 1 OFFSET ?",
        (*ENDS, config.live_hands),
    )
    if not newest:
        return 0
    return min(_transaction_end(journal, int(newest[0][0])), _keep_from(journal, config, now) - 1)


def plan_archive(journal: Journal, config: RetentionConfig, limit: int) -> tuple[int, int] | None:
    """The next positions to archive, ``(first, last)``, or None: nothing up to ``limit``.

    ``last`` is the end of a closed hand's last transaction (the rows up to the next input),
    a segment holds at most ``segment_rows`` rows (or one hand that has more).
    """
    archived = journal.archived_head()
    if limit <= archived.pos:
        return None
    ends = journal.read(
        "SELECT DISTINCT input_id FROM events WHERE type IN (?, ?, ?) AND pos > ? AND pos <= ? "
        "AND input_id IS NOT NULL ORDER BY input_id LIMIT ?",
        (*ENDS, archived.pos, limit, config.segment_rows),
    )
    best = None
    for (input_id,) in ends:
        cut = _transaction_end(journal, int(input_id))
        if cut > limit or (best is not None and cut - archived.pos > config.segment_rows):
            break
        best = cut
    return None if best is None else (archived.pos + 1, best)


def _transaction_end(journal: Journal, input_id: int) -> int:
    """The last position before the input after ``input_id`` (the head: none yet)."""
    following = journal.read("SELECT MIN(pos) FROM inputs WHERE id > ?", (input_id,))
    return journal.head.pos if following[0][0] is None else int(following[0][0]) - 1


def _keep_from(journal: Journal, config: RetentionConfig, now: datetime) -> int:
    """The first position that must stay live."""
    head = journal.head.pos
    keep = [head + 1]
    snapshot = journal.read("SELECT MAX(input_id) FROM snapshots")[0][0]
    if snapshot is None:
        return 0  # a start replays from the genesis: every input stays
    first_input = max(1, int(snapshot) - config.recent_inputs + 1)
    for query, params in (
        ("SELECT MIN(pos) FROM inputs WHERE id >= ?", (first_input,)),
        (
            "SELECT MIN(e.pos) FROM events e WHERE e.seq = (SELECT MIN(seq) FROM outbox)",
            (),
        ),
        (
            "SELECT MIN(pos) FROM inputs WHERE ts >= ?",
            ((now - timedelta(seconds=config.inbox_seconds)).isoformat(),),
        ),
    ):
        row = journal.read(query, params)
        if row and row[0][0] is not None:
            keep.append(int(row[0][0]))
    return min(keep)


def read_range(
    path: Path, prev: Head, last: int, table_id: str, epochs: list[Epoch]
) -> tuple[list[SegmentRow], dict[str, Any]]:
    """The chained rows after ``prev`` up to ``last`` (on a connection of their own), checked
    against their hashes, and the header of the segment that will hold them."""
    conn = connect(path)
    try:
        conn.execute("BEGIN")
        rows = list(_merged(conn, prev.pos, last))
        conn.execute("ROLLBACK")
    finally:
        conn.close()
    expected_pos, expected_prev = prev.pos + 1, prev.hash
    for row in rows:
        if row.pos != expected_pos or row.prev != expected_prev:
            raise ArchiveError(f"the chain breaks at position {expected_pos}: nothing archived")
        if row_hash(row.prev, row.table, row.content) != row.hash:
            raise ArchiveError(f"the row at position {row.pos} does not match its hash")
        expected_pos, expected_prev = row.pos + 1, row.hash
    if expected_pos != last + 1:
        raise ArchiveError(f"positions {expected_pos}-{last} are missing: nothing archived")
    return rows, _header(rows, prev, table_id, epochs)


def _merged(conn: Any, after: int, last: int) -> Iterator[SegmentRow]:
    def rows(table: str) -> Iterator[SegmentRow]:
        columns = ", ".join((*CHAINED[table], "pos", "prev", "hash"))
        for *content, pos, prev, digest in conn.execute(
            f"SELECT {columns} FROM {table} WHERE pos > ? AND pos <= ? ORDER BY pos",  # noqa: S608
            (after, last),
        ):
            yield SegmentRow(pos, table, content, prev, digest)

    return heapq.merge(*(rows(t) for t in CHAINED), key=lambda r: r.pos)


def _header(
    rows: list[SegmentRow], prev: Head, table_id: str, epochs: list[Epoch]
) -> dict[str, Any]:
    keys: dict[str, list[int]] = {}
    spans: dict[str, list[int]] = {}
    hands: list[str] = []
    times: list[str] = []
    accepted: dict[str, int] = {}
    firsts = [e.first_seq for e in epochs]
    for row in rows:
        key = int(row.content[0])
        span = keys.setdefault(row.table, [key, key])
        span[1] = key
        if row.table == "inputs":
            times.append(str(row.content[1]))
        elif row.table == "events":
            epoch = epochs[max(0, bisect.bisect_right(firsts, key) - 1)]
            number = key - epoch.first_seq + 1
            spans.setdefault(epoch.name, [number, number])[1] = number
            hand = row.content[3]
            if hand is not None and (not hands or hands[-1] != hand) and hand not in hands[-3:]:
                hands.append(str(hand))
            if row.content[2] == JournalAccepted.TYPE:
                _accepted(str(row.content[4]), accepted)
    first, last = rows[0].pos, rows[-1].pos
    return {
        "format": FORMAT,
        "name": segment_name(first, last),
        "table_id": table_id,
        "first_pos": first,
        "last_pos": last,
        "prev_hash": prev.hash,
        "last_hash": rows[-1].hash,
        "rows": len(rows),
        "epochs": spans,
        "hands": hands,
        "first_ts": min(times) if times else None,
        "last_ts": max(times) if times else None,
        "keys": keys,
        "accepted": accepted,
    }


def _accepted(body: str, into: dict[str, int]) -> None:
    try:
        data = json.loads(body)["data"]
    except (ValueError, KeyError, TypeError):
        return
    for name in ("through", "input_through"):
        value = data.get(name) if isinstance(data, dict) else None
        if isinstance(value, int):
            into[name] = max(into.get(name, 0), value)


def copy_verified(source: Path, archive: Path, sha256: str) -> Path:
    """Copy a segment into ``archive`` (temporary name, fsync, rename, directory fsync) and
    compare the copy's SHA-256; :class:`ArchiveError` when it differs."""
    if not archive.is_dir():
        raise ArchiveError(f"the archive directory {archive} is not there (not mounted?)")
    final = archive / source.name
    if final.is_file() and file_sha256(final) == sha256:
        return final  # copied before a crash kept the state from being recorded
    temporary = archive / f".{source.name}.tmp"
    shutil.copyfile(source, temporary)
    with open(temporary, "rb+") as copied:
        os.fsync(copied.fileno())
    os.replace(temporary, final)
    fsync_directory(archive)
    if file_sha256(final) != sha256:
        raise ArchiveError(f"the copy {final} does not read back as written")
    return final


# ---------------------------------------------------------------------- the pit's confirmation


def confirm_stored(journal: Journal, command: Stored) -> dict[str, Any]:
    """``stored``: record that the pit has every event of the epoch up to ``seq`` (on the
    journal's thread); the response's data, ``{"epoch", "seq"}`` with the highest confirmed.
    :class:`RefusedError` for an unknown epoch or a seq the epoch has not reached."""
    if not command.pit.strip():
        raise RefusedError("pit: the pit's id, a non-empty string")
    if command.seq < 0:
        raise RefusedError(f"seq: {command.seq} is below 0")
    last = journal.epoch_last(command.epoch)
    if last is None:
        raise RefusedError(f"epoch {bounded_text(command.epoch, 40)!r} is not this journal's")
    if command.seq > last:
        raise RefusedError(
            f"seq {command.seq} is beyond the last event of epoch {command.epoch} ({last})"
        )
    recorded = journal.confirm(command.epoch, command.seq, bounded_text(command.pit, 64))
    return {"epoch": command.epoch, "seq": recorded}


# ---------------------------------------------------------------------- in the daemon


class RetentionTask:
    """Retention as one of the daemon's supervised tasks: a round every ``interval`` seconds
    and whenever :attr:`wake` is set (the disk ran low), in a thread whose journal writes run
    on the journal's writer thread."""

    def __init__(
        self,
        retention: Retention,
        run_on_writer: Callable[..., Any],
        on_report: Callable[[RoundReport], Any],
    ) -> None:
        self.retention = retention
        self.run_on_writer = run_on_writer
        self.on_report = on_report
        self.wake = asyncio.Event()

    async def run(self) -> None:
        """Rounds until cancelled (a round in flight stops at its next step)."""
        loop = asyncio.get_running_loop()

        def write(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
            future = asyncio.run_coroutine_threadsafe(self.run_on_writer(fn, *args, **kwargs), loop)
            result: T = future.result()
            return result

        self.retention.write = write
        while True:
            report = await self._round(lambda: self.retention.run_once(datetime.now(UTC)))
            if report is not None:
                await self.on_report(report)
            self.wake.clear()
            try:
                async with asyncio.timeout(self.retention.config.interval):
                    await self.wake.wait()
            except TimeoutError:
                pass

    async def _round(self, body: Callable[[], RoundReport]) -> RoundReport | None:
        round_ = asyncio.ensure_future(asyncio.to_thread(body))
        try:
            return await asyncio.shield(round_)
        except asyncio.CancelledError:
            # The thread's next step sees the flag and touches the journal no more; its step in
            # flight (a segment being written, a copy to a slow archive) is waited for a while.
            self.retention.stopping.set()
            deadline = time.monotonic() + STOP_WAIT
            while not round_.done() and time.monotonic() < deadline:
                try:
                    await asyncio.wait({round_}, timeout=deadline - time.monotonic())
                except asyncio.CancelledError:
                    continue
            if round_.done() and not round_.cancelled():
                round_.exception()  # retrieved: it is the stop's, not a failure
            raise
        except (StoppedError, JournalFullError):
            return None  # stopping; or the disk is full: the disk watch has it
        except Exception:  # a round that fails is logged; the next one tries again
            log.exception("retention.round_failed")
            return None
