"""The journal's archive: the records of the segments closed hands moved into
(controller/shell/segments.py writes their files, controller/shell/retention.py decides), their
states, the rows they hold and the head the chain reaches through them; the records of pruned
segments compacted into one record a run (controller/shell/pruned_runs.py) and segment files
copied back taken from them again.

A retention round reads the records of the segments still here a page at a time, and only the
columns it decides by (:meth:`JournalSegments.kept_records`): its memory does not grow with the
number of segments the budget holds, nor with the years of pruned ones.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
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
from controller.shell.pruned_runs import (
    RUN_SUFFIX,
    Restored,
    cut,
    fold,
    follows,
    intact,
    is_run,
    proven_tail,
    run_of,
    same_prune_kind,
    sealed,
    span_of,
)
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

__all__ = ["JournalSegments", "archived_keys", "same_prune_kind", "segment_confirmed"]


def archived_keys(records: Sequence[Segment]) -> dict[str, int]:
    """Each chained table's highest key in archive segments."""
    keys: dict[str, int] = {}
    for segment in records:
        for table, (_, last) in segment.keys.items():
            keys[table] = max(keys.get(table, 0), int(last))
    return keys


_COLUMNS = (
    "name, first_pos, last_pos, prev_hash, last_hash, rows, bytes, sha256, created, state, "
    "header, reason"
)
_SEGMENTS = f"SELECT {_COLUMNS} FROM segments WHERE ? OR state != 'pruned' ORDER BY first_pos"  # noqa: S608
#: What a pruned segment's record keeps of its header: the epochs and keys a verify, a
#: confirmation check and the archive's key maxima read. The rest (the hands it held, and the
#: fields its columns repeat) goes, so that the records of years of pruned segments stay small;
#: a readopted segment gets its whole header back from its file. (The round then compacts it
#: into its run: controller/shell/pruned_runs.py.)
_SLIM_PRUNED_HEADER = (
    "UPDATE segments SET header = json_remove(header, '$.hands', '$.name', '$.first_pos', "
    "'$.last_pos', '$.prev_hash', '$.last_hash', '$.rows') WHERE name = ?"
)
#: The records a retention round pages through, with only what it decides by: no header but
#: its epochs (the pit's confirmation) and last time (``keep_days``).
_KEPT = (
    "SELECT name, first_pos, last_pos, prev_hash, last_hash, rows, bytes, sha256, created, "
    "state, json_object('epochs', json(COALESCE(json_extract(header, '$.epochs'), '{}')), "
    "'last_ts', "
    "json_extract(header, '$.last_ts')), reason FROM segments "
    "WHERE state != 'pruned' AND first_pos > ? ORDER BY first_pos LIMIT ?"
)
_PAGE = 256
_LOWEST = -(2**62)


def _record(r: Sequence[Any]) -> Segment:
    return Segment(
        str(r[0]), int(r[1]), int(r[2]), str(r[3]), str(r[4]), int(r[5]), int(r[6]),
        str(r[7]), str(r[8]), str(r[9]), json.loads(r[10]), r[11],
    )  # fmt: skip


def segment_records(conn: sqlite3.Connection, *, pruned: bool = True) -> list[Segment]:
    """Every archive segment's record in the journal of ``conn``, oldest first (without
    ``pruned``: only those whose files are still here)."""
    return [_record(r) for r in conn.execute(_SEGMENTS, (pruned,))]


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

    def iter_segments(self) -> Iterator[Segment]:
        """Every archive segment's record, oldest first, one at a time (inside a read
        transaction: a verify)."""
        for row in self._conn.execute(_SEGMENTS, (True,)):
            yield _record(row)

    def kept_records(self, after: int = _LOWEST, limit: int = _PAGE) -> list[Segment]:
        """The records of segments whose files are here, oldest first, from the first after
        position ``after``, at most ``limit`` of them: a page of what a retention round works
        on. Their header holds only their ``epochs`` and ``last_ts``."""
        return [_record(r) for r in self._conn.execute(_KEPT, (after, limit))]

    def kept_bytes(self) -> int:
        """The bytes of the segment files that are here (as recorded)."""
        row = self._conn.execute("SELECT SUM(bytes) FROM segments WHERE state != 'pruned'")
        return int(row.fetchone()[0] or 0)

    def unrecorded(self, names: Sequence[str]) -> set[str]:
        """Which of ``names`` no segment's record names."""
        marks = ", ".join("?" * len(names))
        recorded = self._conn.execute(
            f"SELECT name FROM segments WHERE name IN ({marks})",  # noqa: S608
            tuple(names),
        )
        return set(names) - {str(r[0]) for r in recorded}

    def segment_names(self, state: str | None = None) -> set[str]:
        """The names of the segments on record (of those in ``state``)."""
        if state is None:
            return {r[0] for r in self._conn.execute("SELECT name FROM segments")}
        return {
            r[0] for r in self._conn.execute("SELECT name FROM segments WHERE state = ?", (state,))
        }

    def segment_counts(self) -> dict[str, int]:
        """How many segments are in each state (a run's record counts its segments)."""
        counts = dict.fromkeys(STATES, 0)
        for state, count in self._conn.execute(
            "SELECT state, SUM(CASE WHEN name LIKE ? THEN "
            "COALESCE(json_extract(header, '$.segments'), 1) ELSE 1 END) "
            "FROM segments GROUP BY state",
            (f"%{RUN_SUFFIX}",),
        ):
            counts[str(state)] = int(count)
        return counts

    def run_spans(self) -> list[tuple[int, int]]:
        """The positions of each run of pruned segments (compacted records), oldest first."""
        return [
            (int(a), int(b))
            for a, b in self._conn.execute(
                "SELECT first_pos, last_pos FROM segments WHERE state = 'pruned' AND name LIKE ? "
                "ORDER BY first_pos",
                (f"%{RUN_SUFFIX}",),
            )
        ]

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
            _insert(conn, segment)
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

    def readopt_restored(self, limit: int | None = None) -> list[Segment]:
        """Pruned segments whose files are back in the segment directory count as local again
        (the next round copies or prunes them as any other); the segments readopted.

        A pruned segment's record still has its file's SHA-256: a file back with it (restored
        from the archive; or a prune a crash cut short) is readopted. A run's record (pruned
        segments compacted) has no file's SHA-256: the files of its last segments are taken
        back when their rows chain to the run's ``last_hash`` (controller/shell/pruned_runs.py),
        and the run is cut before them; a file the chain does not prove (one from the middle of
        a run without those after it) stays pruned, and is left where it is. Proving a file
        reads it whole: with ``limit``, at most that many are taken back from runs (a round,
        on the journal's thread; the next round goes on from where the run then ends).
        """
        directory = self.segments_dir
        if not directory.is_dir():
            return []
        plain = self._pruned_names_if_any()  # (most rounds: none, or this round's prunes)
        runs = self._run_spans_if_any()  # (a few: one for each kind of reason in turn)
        back: list[str] = []
        by_run: dict[int, dict[int, str]] = {}  # a run's first position -> last pos -> file
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name in plain:
                    back.append(entry.name)
                elif runs and (span := span_of(entry.name)) is not None:
                    for first, last in runs:
                        if first <= span[0] and span[1] <= last:
                            by_run.setdefault(first, {})[span[1]] = entry.name
                            break
        readopted = []
        for name in sorted(back):
            segment = self._record_named(name)
            path = directory / name
            if segment is None or file_sha256(path) != segment.sha256:
                continue
            try:
                header = read_header(path)
            except (SegmentError, OSError):
                continue  # the right bytes, yet unreadable: left pruned, as it was
            self.set_segment_state(segment.name, LOCAL, None, header)
            readopted.append(segment)
        left = limit
        for first, names in sorted(by_run.items()):
            if left is not None and left <= 0:
                break
            taken = self._readopt_from_run(first, names, left)
            readopted.extend(taken)
            left = None if left is None else left - len(taken)
        return readopted

    def _run_spans_if_any(self) -> list[tuple[int, int]]:
        try:
            return self.run_spans()
        except sqlite3.OperationalError:  # a journal older than segments, opened read-only
            return []

    def _record_named(self, name: str) -> Segment | None:
        row = self._conn.execute(
            f"SELECT {_COLUMNS} FROM segments WHERE name = ?",  # noqa: S608
            (name,),
        ).fetchone()
        return None if row is None else _record(row)

    def _readopt_from_run(
        self, first: int, names: Mapping[int, str], limit: int | None
    ) -> list[Segment]:
        """The files of a run's last segments that are back, readopted once the chain proves
        them; the run cut before them (or gone)."""
        row = self._conn.execute(
            f"SELECT {_COLUMNS} FROM segments WHERE first_pos = ?",  # noqa: S608
            (first,),
        ).fetchone()
        run = None if row is None else _record(row)
        if run is None or not is_run(run) or not intact(run):
            return []
        back = proven_tail(self.segments_dir, run, names, limit)
        if not back:
            return []
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        local = [_restored(b, created) for b in back]
        rest = cut(run, back)
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            if conn.execute("DELETE FROM segments WHERE name = ?", (run.name,)).rowcount != 1:
                raise JournalError(f"the record of {run.span()} changed meanwhile")
            for segment in ([rest] if rest is not None else []) + local:
                _insert(conn, segment)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return local

    def compact_pruned(self) -> int:
        """Fold the records of consecutive pruned segments into one record a run
        (controller/shell/pruned_runs.py), in one transaction; how many records were folded
        or made a run's.

        A pruned segment's record whose file is still there (a prune a crash cut short: the
        next round readopts it) is left as it is, and so are a run whose record is not as
        written and a record that does not follow the one before it exactly: ``journal verify``
        reports those. Pruned records are read a page at a time: a journal whose years of
        pruned segments were recorded one by one is compacted in one round, in bounded memory.
        """
        conn = self._conn
        directory = self.segments_dir
        compacted = 0
        run: Segment | None = None  # the run being made or extended
        origin = ""  # the record it was when this compaction began
        changed = False
        try:
            conn.execute("BEGIN IMMEDIATE")
            after = _LOWEST
            while True:
                page = [
                    _record(r)
                    for r in conn.execute(
                        f"SELECT {_COLUMNS} FROM segments WHERE state = 'pruned' "  # noqa: S608
                        "AND first_pos > ? ORDER BY first_pos LIMIT ?",
                        (after, _PAGE),
                    )
                ]
                for record in page:
                    if is_run(record):
                        foldable = intact(record)
                    else:
                        foldable = not (directory / record.name).exists()
                    if run is not None and foldable and follows(run, record):
                        conn.execute("DELETE FROM segments WHERE name = ?", (record.name,))
                        run, changed = fold(run, record), True
                        compacted += 1
                        continue
                    if run is not None and changed:
                        _replace(conn, origin, run)
                    run, origin, changed = None, "", False
                    if foldable:
                        changed = not is_run(record)
                        run, origin = (run_of(record) if changed else record), record.name
                        compacted += changed
                if len(page) < _PAGE:
                    break
                after = page[-1].first_pos
            if run is not None and changed:
                _replace(conn, origin, run)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return compacted

    def _pruned_names_if_any(self) -> set[str]:
        """The names of pruned segments' records that are not runs'."""
        try:
            return {
                str(r[0])
                for r in self._conn.execute(
                    "SELECT name FROM segments WHERE state = ? AND name NOT LIKE ?",
                    (PRUNED, f"%{RUN_SUFFIX}"),
                )
            }
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
        """The records of the segments whose files were pruned (their rows are gone), oldest
        first: a run's record (controller/shell/pruned_runs.py) for each run compacted."""
        try:
            return [
                _record(r)
                for r in self._conn.execute(
                    f"SELECT {_COLUMNS} FROM segments WHERE state = ? "  # noqa: S608
                    "ORDER BY first_pos",
                    (PRUNED,),
                )
            ]
        except sqlite3.OperationalError:  # a journal older than segments, opened read-only
            return []


def _insert(conn: sqlite3.Connection, segment: Segment) -> None:
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


def _replace(conn: sqlite3.Connection, origin: str, run: Segment) -> None:
    """The record ``origin`` replaced by ``run`` (which begins where it began), sealed."""
    conn.execute("DELETE FROM segments WHERE name = ?", (origin,))
    _insert(conn, sealed(run))


def _restored(back: Restored, created: str) -> Segment:
    header = back.header
    return Segment(
        back.path.name,
        int(header["first_pos"]),
        int(header["last_pos"]),
        str(header["prev_hash"]),
        str(header["last_hash"]),
        int(header["rows"]),
        back.bytes,
        back.sha256,
        created,
        LOCAL,
        header,
    )
