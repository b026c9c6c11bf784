"""The journal's archive: the records of the segments closed hands moved into
(controller/shell/segments.py writes their files, controller/shell/retention.py decides), their
states, the rows they hold and the head the chain reaches through them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.shell.chain import (
    CHAINED,
    GENESIS,
    Head,
    JournalDamagedError,
    JournalError,
    one_line,
)
from controller.shell.journal_base import JournalBase
from controller.shell.segments import (
    LOCAL,
    PRUNED,
    STATES,
    Segment,
    SegmentError,
    SegmentRow,
    directory_of,
    file_sha256,
    read_header,
    read_rows,
)


def archived_keys(records: Sequence[Segment]) -> dict[str, int]:
    """Each chained table's highest key in archive segments."""
    keys: dict[str, int] = {}
    for segment in records:
        for table, (_, last) in segment.keys.items():
            keys[table] = max(keys.get(table, 0), int(last))
    return keys


_SEGMENTS = (
    "SELECT name, first_pos, last_pos, prev_hash, last_hash, rows, bytes, sha256, created, "
    "state, header, reason FROM segments WHERE ? OR state != 'pruned' ORDER BY first_pos"
)
#: What a pruned segment's record keeps of its header: the epochs and keys a verify, a
#: confirmation check and the archive's key maxima read. The rest (the hands it held, and the
#: fields its columns repeat) goes, so that the records of years of pruned segments stay small;
#: a readopted segment gets its whole header back from its file.
_SLIM_PRUNED_HEADER = (
    "UPDATE segments SET header = json_remove(header, '$.hands', '$.name', '$.first_pos', "
    "'$.last_pos', '$.prev_hash', '$.last_hash', '$.rows') WHERE name = ?"
)


def segment_records(conn: sqlite3.Connection, *, pruned: bool = True) -> list[Segment]:
    """Every archive segment's record in the journal of ``conn``, oldest first (without
    ``pruned``: only those whose files are still here)."""
    cursor = conn.execute(_SEGMENTS, (pruned,))
    return [
        Segment(
            str(r[0]), int(r[1]), int(r[2]), str(r[3]), str(r[4]), int(r[5]), int(r[6]),
            str(r[7]), str(r[8]), str(r[9]), json.loads(r[10]), r[11],
        )
        for r in cursor
    ]  # fmt: skip


def same_prune_kind(reason: str, segment: Segment) -> bool:
    """Whether two prunes were allowed for the same kind of reason (the pit's, the archive's)."""
    return reason.split(" ", 1)[0] == (segment.reason or "").split(" ", 1)[0]


def segment_confirmed(segment: Segment, confirmed: Mapping[str, int]) -> bool:
    """Whether the pit confirmed storing every event of ``segment``."""
    return all(confirmed.get(epoch, 0) >= last for epoch, (_, last) in segment.epochs.items())


class JournalSegments(JournalBase):
    """The archive segments of a journal."""

    @property
    def segments_dir(self) -> Path:
        """Where this journal's archive segments live."""
        return directory_of(self.path)

    def segments(self, *, pruned: bool = True) -> list[Segment]:
        """Every archive segment's record, oldest first (without ``pruned``: only the segments
        whose files are still here, what a retention round works on: the records of the pruned
        ones grow with every year the journal lives)."""
        return segment_records(self._conn, pruned=pruned)

    def segment_names(self, state: str | None = None) -> set[str]:
        """The names of the segments on record (of those in ``state``)."""
        if state is None:
            return {r[0] for r in self._conn.execute("SELECT name FROM segments")}
        return {
            r[0] for r in self._conn.execute("SELECT name FROM segments WHERE state = ?", (state,))
        }

    def segment_counts(self) -> dict[str, int]:
        """How many segments are in each state."""
        counts = dict.fromkeys(STATES, 0)
        for state, count in self._conn.execute(
            "SELECT state, COUNT(*) FROM segments GROUP BY state"
        ):
            counts[str(state)] = int(count)
        return counts

    def _segments_if_any(self) -> list[Segment]:
        try:
            return self.segments()
        except sqlite3.OperationalError:  # a journal older than segments, opened read-only
            return []

    def archived_head(self) -> Head:
        """The last archived row (the genesis: none)."""
        try:
            row = self._conn.execute(
                "SELECT last_pos, last_hash FROM segments ORDER BY first_pos DESC LIMIT 1"
            ).fetchone()
        except sqlite3.OperationalError:  # a journal older than segments, opened read-only
            return GENESIS
        return GENESIS if row is None else Head(int(row[0]), str(row[1]))

    def commit_segment(self, segment: Segment) -> None:
        """The segment's file is in place: delete its rows and record it (one transaction).

        Refused (nothing changes) unless it follows the last segment and the live rows of its
        positions are exactly the rows it holds.
        """
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            last = conn.execute(
                "SELECT last_pos, last_hash FROM segments ORDER BY first_pos DESC LIMIT 1"
            ).fetchone()
            head = GENESIS if last is None else Head(int(last[0]), str(last[1]))
            if segment.first_pos != head.pos + 1 or segment.prev_hash != head.hash:
                raise JournalError(
                    f"segment {segment.name} does not follow the last archived row {head.pos}"
                )
            deleted = 0
            for table in CHAINED:
                deleted += conn.execute(
                    f"DELETE FROM {table} WHERE pos BETWEEN ? AND ?",  # noqa: S608
                    (segment.first_pos, segment.last_pos),
                ).rowcount
            if deleted != segment.rows:
                raise JournalError(
                    f"segment {segment.name} holds {segment.rows} rows but the journal had "
                    f"{deleted} at its positions"
                )
            conn.execute(
                "INSERT INTO segments VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    segment.name,
                    segment.first_pos,
                    segment.last_pos,
                    segment.prev_hash,
                    segment.last_hash,
                    segment.rows,
                    segment.bytes,
                    segment.sha256,
                    segment.created,
                    segment.state,
                    json.dumps(segment.header, separators=(",", ":")),
                    segment.reason,
                ),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        # the pages the rows left go back to the file system (a journal created with
        # incremental auto-vacuum; on an older one this does nothing)
        conn.executescript("PRAGMA incremental_vacuum;")  # stepped to the end: every page

    def set_segment_state(
        self, name: str, state: str, reason: str | None, header: Mapping[str, Any] | None = None
    ) -> None:
        """A segment was copied to the archive, or pruned (with the reason it was allowed; its
        header slimmed to what a pruned record needs), or readopted (``header``: the whole
        header again, from its file)."""
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "UPDATE segments SET state = ?, reason = ? WHERE name = ?", (state, reason, name)
            )
            if state == PRUNED:
                conn.execute(_SLIM_PRUNED_HEADER, (name,))
            elif header is not None:
                conn.execute(
                    "UPDATE segments SET header = ? WHERE name = ?",
                    (json.dumps(header, separators=(",", ":")), name),
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def archived_rows(
        self, table: str, after: int = 0, hand_id: str | None = None
    ) -> Iterator[SegmentRow]:
        """The rows of ``table`` with a key above ``after`` held by local segments, in order
        (with ``hand_id``: only the segments that hold that hand are read).

        A pruned segment's rows are gone (:meth:`segments` names its range); a segment that
        cannot be read raises :class:`JournalDamagedError`.
        """
        for segment in self._segments_if_any():
            keys = segment.keys.get(table)
            if segment.state == PRUNED or keys is None or keys[1] <= after:
                continue
            if hand_id is not None and hand_id not in segment.header.get("hands", ()):
                continue
            try:
                _, rows = read_rows(self.segments_dir / segment.name)
                for row in rows:
                    if row.table == table and row.content[0] > after:
                        yield row
            except (SegmentError, OSError) as exc:
                raise JournalDamagedError(
                    f"segment {segment.name} ({segment.span()}) cannot be read ({one_line(exc)}): "
                    "`tablectl journal verify` names what is wrong with it"
                ) from None

    def readopt_restored(self) -> list[Segment]:
        """Pruned segments whose files are back in the segment directory with the SHA-256 they
        were written with (restored from the archive; or a prune a crash cut short) count as
        local again (the next round copies or prunes them as any other). The segments
        readopted."""
        directory = self.segments_dir
        present = {p.name for p in directory.iterdir()} if directory.is_dir() else set()
        back = present & self._pruned_names_if_any()  # (most rounds: none)
        readopted = []
        for segment in self.pruned() if back else ():
            path = directory / segment.name
            if segment.name in back and file_sha256(path) == segment.sha256:
                try:
                    header = read_header(path)
                except (SegmentError, OSError):
                    continue  # the right bytes, yet unreadable: left pruned, as it was
                self.set_segment_state(segment.name, LOCAL, None, header)
                readopted.append(segment)
        return readopted

    def _pruned_names_if_any(self) -> set[str]:
        try:
            return self.segment_names(PRUNED)
        except sqlite3.OperationalError:  # a journal older than segments, opened read-only
            return set()

    def event_pruned(self, seq: int) -> bool:
        """Whether the event with journal key ``seq`` was in a segment since pruned."""
        return any(
            keys[0] <= seq <= keys[1]
            for segment in self.pruned()
            if (keys := segment.keys.get("events")) is not None
        )

    def pruned(self) -> list[Segment]:
        """The segments whose files were pruned (their rows are gone), oldest first."""
        return [s for s in self._segments_if_any() if s.state == PRUNED]
