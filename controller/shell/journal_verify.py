"""Verifying the journal: its chain, live rows and archive segments alike, against its head
(the records of pruned segments, a run's record for each run compacted, by their links)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.shell.chain import (
    CHAINED,
    GENESIS,
    GENESIS_HASH,
    UNREADABLE,
    Head,
    VerifyReport,
    one_line,
    unreadable,
    verify_chain,
)
from controller.shell.journal_confirmations import JournalConfirmations
from controller.shell.journal_segments import segment_confirmed
from controller.shell.pruned_runs import intact, is_run, same_prune_kind
from controller.shell.segments import (
    PRUNED,
    Segment,
    check,
)


class JournalVerify(JournalConfirmations):
    """The verification of a journal."""

    def verify(self, since: Head = GENESIS, *, segments: bool = False) -> VerifyReport:
        """Walk the hash chain after ``since`` (every row by default); report every break.

        Rows archived in segments: with ``segments``, every segment's file is checked (its
        SHA-256, its rows' chain, its link to the previous segment) and the live rows must
        follow the last one; without, the walk starts at the last archived row (each segment's
        chain was checked when it was written). Breaks maintenance accepted
        (``journal.accepted``) are moved to ``report.accepted``.

        The whole verify is one read transaction: where the archive ends, the segments' records
        and the rows after them are read as the journal was when it began. A retention round
        committing a segment on another connection meanwhile (the daemon's, beside a live
        verify or a tool) would otherwise move rows out from under the walk, and it would report
        them missing: a false integrity alarm, which holds the table.
        """
        with self.reading():
            return self._verify(since, segments=segments)

    def _verify(self, since: Head, *, segments: bool) -> VerifyReport:
        report = VerifyReport(since=since)
        keys = {table: self._archived_max(f"$.keys.{table}[1]") for table in CHAINED}
        archived = self.archived_head()
        if archived.pos and since.pos <= archived.pos:
            # the records one at a time: a verify's memory does not grow with the archive
            anchor = None if segments else since
            self._verify_segments(self.iter_segments(), report, files=segments, anchor=anchor)
            boundary = report.head  # the last segment's last row
            verify_chain(self._conn, boundary, archived=keys, after_archive=True, report=report)
            report.since = since
        else:
            verify_chain(self._conn, since, archived=keys, report=report)
        try:
            through = self.accepted_through()
        except UNREADABLE as exc:
            if not unreadable(exc):
                raise
            through = 0
            if report.damaged is None:
                report.damaged = f"the file is damaged ({one_line(exc)})"
                report.add(report.head.pos + 1, report.damaged)
        if through:
            report.accepted = [b for b in report.breaks if b.pos <= through]
            report.breaks = [b for b in report.breaks if b.pos > through]
        return report

    def _verify_segments(
        self,
        records: Iterable[Segment],
        report: VerifyReport,
        *,
        files: bool,
        anchor: Head | None,
    ) -> None:
        """The chain across the segments' records (a deleted or reordered record, a run's
        record edited); with ``files``, every local segment's file too (pruned ones are checked
        by their records); with ``anchor``, the verified head, now archived, must still be
        where it was verified."""
        expected_pos, expected_prev = 1, GENESIS_HASH
        confirmed = self.confirmations()
        pruned_runs: list[tuple[int, int, int, str]] = []  # first, last, segments, last reason
        for segment in records:
            where = f"segment {segment.name} ({segment.span()})"
            if segment.first_pos > expected_pos:
                report.add(
                    expected_pos,
                    f"{where}: positions {expected_pos}-{segment.first_pos - 1} are in no "
                    "segment (a segment, or its record, is gone)",
                )
            elif segment.first_pos < expected_pos:
                report.add(segment.first_pos, f"{where}: overlaps the segment before it")
            elif segment.prev_hash != expected_prev:  # (after a gap: nothing to compare)
                report.add(segment.first_pos, f"{where}: does not follow the segment before it")
            if (
                anchor is not None
                and segment.last_pos == anchor.pos
                and segment.last_hash != anchor.hash
            ):
                report.add(
                    anchor.pos,
                    f"the row at position {anchor.pos}, verified before, was changed or "
                    f"removed (segment {segment.name} ends with another hash)",
                )
            if segment.state == PRUNED:
                self._verify_pruned(segment, confirmed, pruned_runs, report)
            elif files:
                problems = check(self.segments_dir, segment)
                for problem in problems:
                    report.add(segment.first_pos, problem)
                report.segments += 1
                report.rows += segment.rows if not problems else 0
            expected_pos, expected_prev = segment.last_pos + 1, segment.last_hash
            report.head = Head(segment.last_pos, segment.last_hash)
        report.pruned = [  # one line for each run of segments pruned for the same kind of reason
            f"positions {first}-{last} pruned ({count} segment{'s' if count > 1 else ''}): {why}"
            for first, last, count, why in pruned_runs
        ]

    @staticmethod
    def _verify_pruned(
        segment: Segment,
        confirmed: Mapping[str, int],
        pruned_runs: list[tuple[int, int, int, str]],
        report: VerifyReport,
    ) -> None:
        """A pruned segment's record, or a run's: what allowed the prune, and a run's record as
        compaction wrote it; its range joined to the run of ranges before it."""
        where = f"segment {segment.name} ({segment.span()})"
        if is_run(segment) and not intact(segment):
            report.add(
                segment.first_pos,
                f"{where}: the record of these pruned segments does not match its sha256 "
                "(edited or damaged)",
            )
        run = pruned_runs[-1] if pruned_runs else None
        if run is not None and run[1] == segment.first_pos - 1 and same_prune_kind(run[3], segment):
            pruned_runs[-1] = (
                run[0],
                segment.last_pos,
                run[2] + segment.count,
                segment.reason or "",
            )
        else:
            pruned_runs.append(
                (segment.first_pos, segment.last_pos, segment.count, segment.reason or "")
            )
        if (segment.reason or "").startswith("confirmed") and not segment_confirmed(
            segment, confirmed
        ):
            report.add(
                segment.first_pos,
                f"{where}: pruned as confirmed by the pit, but no confirmation covers it",
            )
