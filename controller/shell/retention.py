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
4. **Compacts** the records of what it pruned into the run before them: consecutive pruned
   segments are one record (controller/shell/pruned_runs.py), so the live database does not
   grow with the years of pruning; a journal whose pruned segments were recorded one by one
   (before runs) is compacted by its next round.

A round's memory is bounded whatever the number of segments: it reads their records a page at
a time and only the columns it decides by, and after compaction the pruned ones are a record or
two.

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

This module runs the rounds (:class:`Retention`) and records the pit's confirmations they prune
by; what a round may archive and prune, and its report, are decided in ``retention_policy.py``,
the rows and header of a segment and the archive copy are read and written in
``retention_files.py``, and the daemon runs the rounds as a task of its own
(``retention_task.py``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

import structlog

from controller.shell.gate import RefusedError, bounded_text
from controller.shell.journal import Journal
from controller.shell.journal_segments import segment_confirmed
from controller.shell.maintenance import Stored
from controller.shell.pruned_runs import span_of
from controller.shell.retention_files import ArchiveError, copy_verified, read_range
from controller.shell.retention_policy import (
    ENDS,
    RetentionConfig,
    RoundReport,
    archive_limit,
    plan_archive,
    prunable,
    prune_reason,
)
from controller.shell.segments import (
    ARCHIVED,
    LOCAL,
    PRUNED,
    Segment,
    directory_of,
    orphans,
    publish,
    remove,
    write_file,
)
from controller.shell.space import JournalFullError, Reserve, is_full, journal_bytes

__all__ = [
    "ENDS",
    "ArchiveError",
    "Retention",
    "RetentionConfig",
    "RoundReport",
    "StoppedError",
    "Write",
    "archive_limit",
    "confirm_stored",
    "copy_verified",
    "direct",
    "plan_archive",
    "prune_reason",
    "read_range",
]

log = structlog.get_logger("tablectl.retention")

P = ParamSpec("P")
T = TypeVar("T")


#: The most segment files copied back into a run's range that one round takes back: each is
#: read whole to prove it, on the journal's thread (a start takes them all back).
READOPT_LIMIT = 64


class Write(Protocol):
    """Runs a journal method where the journal's writes run (the daemon: its writer thread)."""

    def __call__(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T: ...


def direct(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """:class:`Write` for a journal used on one thread (tools, benchmarks, tests)."""
    return fn(*args, **kwargs)


class StoppedError(RuntimeError):
    """The round was told to stop (the daemon is shutting down)."""


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
        #: and of a prune (``marked``), once pruned records were compacted (``compacted``), and
        #: once the reserve was released (``released``): the crash tests raise there.
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
            for segment in self._kept():
                if segment.state != LOCAL or self.stopping.is_set():
                    continue
                if not self.copy(segment):
                    break  # the archive cannot take it now: the next round tries again
                report.copied += 1
        self._prune(now, report, pressed=pressed)
        self._compact(report)
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
        """Readopt pruned segments whose files are back (restored, or a prune cut short) and
        remove what a crash left (files no record names: their rows are still live)."""
        for segment in self._record(self.journal.readopt_restored, READOPT_LIMIT):
            log.info("retention.readopted", segment=segment.name)
        self._remove_orphans()

    def _remove_orphans(self) -> None:
        runs = self._write(self.journal.run_spans)
        for path in orphans(
            self.directory, lambda names: self._write(self.journal.unrecorded, names)
        ):
            span = span_of(path.name)
            if span is not None and any(a <= span[0] and span[1] <= b for a, b in runs):
                # a pruned segment copied back that the chain does not prove (yet): someone's
                # copy, not a crash's leftover; it stays pruned and is left alone
                log.warning("retention.restored_unproven", file=path.name)
                continue
            log.warning("retention.orphan_removed", file=path.name)
            remove(path)

    def _kept(self) -> Iterator[Segment]:
        """The records of the segments whose files are here, oldest first, read a page at a
        time (only what a round decides by: :meth:`Journal.kept_records`)."""
        after = None
        while True:
            page = self._write(self.journal.kept_records, *(() if after is None else (after,)))
            yield from page
            if not page:
                return
            after = page[-1].first_pos

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
        # the segments whose files are here, a page at a time (the records of pruned ones are
        # not read: years of them would make every round slower than the last)
        confirmed = self._write(journal.confirmations)
        report.live_bytes = journal_bytes(journal.path)
        report.segment_bytes = self._write(journal.kept_bytes)
        budget = self.config.max_bytes
        over = report.total_bytes - budget if budget is not None else 0
        candidates = prunable(self._kept(), confirmed, self.config, now, over=over, pressed=pressed)
        for segment, why in candidates:
            if self.stopping.is_set():
                break
            self._record(journal.set_segment_state, segment.name, PRUNED, why)
            self.hook("marked")
            remove(self.directory / segment.name)
            log.info("retention.pruned", segment=segment.name, bytes=segment.bytes, reason=why)
            report.pruned += 1
            report.segment_bytes -= segment.bytes
            over -= segment.bytes
        report.over_budget = over > 0
        # (read again: the segments this round pruned are not among them any more)
        report.waiting_bytes = sum(
            s.bytes
            for s in self._kept()
            if s.state == LOCAL and not segment_confirmed(s, confirmed)
        )

    def _compact(self, report: RoundReport) -> None:
        """Fold the records of pruned segments into their runs; on a full disk, it waits (it
        frees nothing the budget counts, so it needs no reserve)."""
        if not self.stopping.is_set():
            try:
                report.compacted = self._write(self.journal.compact_pruned)
            except (JournalFullError, sqlite3.Error, OSError) as exc:
                if not self._full(exc):
                    raise
                log.warning("retention.compact_waits", reason="the disk is full", error=str(exc))
            else:
                if report.compacted:
                    log.info("retention.compacted", records=report.compacted)
                    self.hook("compacted")
        report.by_state.update(self._write(self.journal.segment_counts))


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
