"""The seqs the pit has not received: each stream's watermark, the holes behind it, and the gaps
the repair asks the tables to replay (controller/pit/repair.py), shared by every pit process.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from controller.pit.db import Db, Row
from controller.pit.rows import STREAM_COLUMN

#: The first key of the PostgreSQL advisory lock a process holds while it tracks one stream's
#: gaps (the second is the stream's hash); "gaps" in ASCII. Two-key advisory locks are a space
#: of their own, apart from the one-key locks of the partitions (controller/pit/partitions.py).
TRACKING_LOCK = 0x67617073


@dataclass(frozen=True)
class Gap:
    """A range of seqs of one table's epoch not received on one stream."""

    id: int
    table_id: str
    epoch: str
    stream: str
    from_seq: int
    to_seq: int
    first_seen: float
    state: str
    attempts: int
    asked_at: float | None
    reason: str | None
    closed_at: float | None = None  # repaired or lost for good (the console lists those too)


class Gaps:
    """The gap tracking of a :class:`~controller.pit.store.Store`."""

    db: Db

    # ------------------------------------------------------------------ gaps

    def streams_behind(self) -> list[tuple[str, str, str, int, int]]:
        """``(table, epoch, stream, contiguous, end)`` of every stream with a seq missing.

        One query for the whole floor: a stream whose seqs after its contiguous mark are all
        stored (their count is the span) has its mark moved to the end at once, and is not
        returned; only the streams with a hole are looked at seq by seq.
        """
        g = self.db.greatest
        rows = self.db.all(
            f"SELECT s.table_id, s.epoch, s.stream, s.contiguous, s.max_seq, "
            f"{g}(s.max_seq, s.known_last), (SELECT COUNT(*) FROM events e "
            "WHERE e.table_id = s.table_id AND e.epoch = s.epoch AND e.seq > s.contiguous "
            "AND e.seq <= s.max_seq AND ((s.stream = 'public' AND e.public IS NOT NULL) "
            "OR (s.stream = 'secure' AND e.secure IS NOT NULL))) "
            f"FROM streams s WHERE s.contiguous < {g}(s.max_seq, s.known_last) "
            "ORDER BY s.table_id, s.epoch, s.stream"
        )
        behind = []
        whole = []
        for table, epoch, stream, contiguous, highest, end, count in rows:
            if int(count) == int(highest) - int(contiguous) and int(end) == int(highest):
                whole.append((table, epoch, stream, int(highest)))
            elif int(count) == int(highest) - int(contiguous):
                # every seq stored up to the highest; the tail the table announced is missing
                whole.append((table, epoch, stream, int(highest)))
                behind.append((table, epoch, stream, int(highest), int(end)))
            else:
                behind.append((table, epoch, stream, int(contiguous), int(end)))
        self.advance(whole)
        return behind

    def holes(
        self, table: str, epoch: str, stream: str, contiguous: int, end: int, limit: int = 5000
    ) -> tuple[int, list[tuple[int, int]]]:
        """Advance the stream's contiguous mark; the ranges still missing up to ``end``."""
        mark, holes = self.find_holes(table, epoch, stream, contiguous, end, limit)
        self.advance([(table, epoch, stream, mark)])
        return mark, holes

    def find_holes(
        self, table: str, epoch: str, stream: str, contiguous: int, end: int, limit: int = 5000
    ) -> tuple[int, list[tuple[int, int]]]:
        """How far the stream is contiguous now, and the ranges missing above, up to ``end``
        (reads only: :meth:`advance` records the marks of a whole scan in one transaction)."""
        column = STREAM_COLUMN[stream]
        present = [
            int(r[0])
            for r in self.db.all(
                f"SELECT seq FROM events WHERE table_id = ? AND epoch = ? AND seq > ? "
                f"AND {column} IS NOT NULL ORDER BY seq LIMIT ?",
                (table, epoch, contiguous, limit),
            )
        ]
        mark = contiguous
        for seq in present:
            if seq != mark + 1:
                break
            mark = seq
        holes: list[tuple[int, int]] = []
        expected = mark + 1
        for seq in present:
            if seq <= mark:
                continue
            if seq > expected:
                holes.append((expected, seq - 1))
            expected = seq + 1
        if len(present) < limit and end >= expected:
            holes.append((expected, end))
        return mark, holes

    def watermarks(self, streams: Sequence[str]) -> list[tuple[str, str, int, bool]]:
        """``(table, epoch, seq, online)`` of every epoch with something stored contiguously:
        each event numbered 1 to ``seq`` is stored on every one of ``streams`` (never past a
        gap). ``online`` is false for a table whose last status was its death."""
        rows = self.db.all(
            "SELECT s.table_id, s.epoch, s.stream, s.contiguous, t.online FROM streams s "
            "LEFT JOIN tables t ON t.table_id = s.table_id ORDER BY 1, 2"
        )
        marks: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        online: dict[str, bool] = {}
        for table, epoch, stream, contiguous, up in rows:
            marks[(table, epoch)][stream] = int(contiguous)
            online[table] = up is None or bool(up)
        found = []
        for (table, epoch), by_stream in marks.items():
            mark = min(by_stream.get(stream, 0) for stream in streams)
            if mark > 0:
                found.append((table, epoch, mark, online[table]))
        return found

    def advance(self, marks: Sequence[tuple[str, str, str, int]]) -> None:
        """Record how far streams are contiguous (one transaction; marks only move up)."""
        if not marks:
            return
        db = self.db
        rows = sorted(marks)
        with db.transaction():
            if db.dialect == "sqlite":  # in this process: a statement a row costs little
                db.many(
                    "UPDATE streams SET contiguous = max(contiguous, ?) "
                    "WHERE table_id = ? AND epoch = ? AND stream = ?",
                    [(mark, t, e, s) for t, e, s, mark in rows],
                )
                return
            # A scan moves the marks of every table that played since the last (hundreds on a
            # floor): two statements, not one a row. The rows are locked first, in key order
            # (ORDER BY comes before the locking clause), the order every transaction of the
            # store takes, so two pits never wait for each other in a circle; then updated
            # from the same arrays.
            arrays = [list(column) for column in zip(*rows, strict=True)]
            given = "unnest(%b::text[], %b::text[], %b::text[], %b::bigint[])"
            db.execute(
                "SELECT 1 FROM streams WHERE (table_id, epoch, stream) IN "
                f"(SELECT t, e, s FROM {given} AS v (t, e, s, m)) "
                "ORDER BY table_id, epoch, stream FOR UPDATE",
                arrays,
            )
            db.execute(
                "UPDATE streams SET contiguous = GREATEST(streams.contiguous, v.m) "
                f"FROM {given} AS v (t, e, s, m) "
                "WHERE streams.table_id = v.t AND streams.epoch = v.e AND streams.stream = v.s",
                arrays,
            )

    def open_gaps(
        self, table: str | None = None, epoch: str | None = None, stream: str | None = None
    ) -> list[Gap]:
        """The gaps not closed (of one stream), oldest first."""
        where = ["closed_at IS NULL"]
        params: list[Any] = []
        for name, value in (("table_id", table), ("epoch", epoch), ("stream", stream)):
            if value is not None:
                where.append(f"{name} = ?")
                params.append(value)
        rows = self.db.all(
            "SELECT id, table_id, epoch, stream, from_seq, to_seq, first_seen, state, attempts, "
            f"asked_at, reason FROM gaps WHERE {' AND '.join(where)} "
            "ORDER BY first_seen, table_id, from_seq",
            params,
        )
        return [_gap(r) for r in rows]

    def track_holes(
        self,
        table: str,
        epoch: str,
        stream: str,
        holes: Sequence[tuple[int, int]],
        now: float,
        keep: Sequence[tuple[int, int]] = (),
    ) -> list[Gap]:
        """Make the open gaps of a stream what ``holes`` says; return them.

        ``keep`` are ranges missing for too short a time to be gaps of their own: they only keep
        (and narrow) a gap they overlap. A gap that overlaps nothing missing is closed.
        """
        db = self.db
        with db.transaction():
            if db.dialect == "postgresql":
                # Every pit process scans every stream. Two tracking one stream at once, each
                # from the open gaps it read, deleted and narrowed the same rows in different
                # orders (a deadlock) or moved a gap onto one the other had just made (a
                # unique violation), failing their scans; they take turns instead. SQLite's
                # BEGIN IMMEDIATE already lets one writer in at a time.
                db.execute(
                    f"SELECT pg_advisory_xact_lock({TRACKING_LOCK}, hashtext(?))",
                    (f"{table}\n{epoch}\n{stream}",),
                )
            existing = self.open_gaps(table, epoch, stream)
            kept: set[int] = set()
            moved: list[tuple[int, int, int]] = []  # (gap, first, last)
            added: list[tuple[int, int]] = []
            ranges = [(a, b, True) for a, b in holes] + [(a, b, False) for a, b in keep]
            for first, last, new in ranges:
                overlapping = [
                    gap
                    for gap in existing
                    if gap.id not in kept and gap.from_seq <= last and first <= gap.to_seq
                ]
                # the gap already starting where the range starts, if one does: moving another
                # there would meet it in the open gaps' unique index
                match = next((g for g in overlapping if g.from_seq == first), None) or next(
                    iter(overlapping), None
                )
                if match is None:
                    if new:
                        added.append((first, last))
                    continue
                kept.add(match.id)
                if (match.from_seq, match.to_seq) != (first, last):
                    moved.append((match.id, first, last))
            # The gaps nothing overlaps any more are closed before any moves: one of them may
            # start where a kept gap is moving to. A kept gap cannot: it would overlap that range
            # too, and be the one chosen for it (above).
            for gap in existing:
                if gap.id in kept:
                    continue
                if gap.attempts == 0:  # filled by the stream itself, a moment late
                    db.execute("DELETE FROM gaps WHERE id = ?", (gap.id,))
                else:
                    db.execute(
                        "UPDATE gaps SET state = 'repaired', closed_at = ? WHERE id = ?",
                        (now, gap.id),
                    )
            for gap_id, first, last in moved:
                db.execute(
                    "UPDATE gaps SET from_seq = ?, to_seq = ? WHERE id = ?", (first, last, gap_id)
                )
            for first, last in added:
                db.execute(
                    "INSERT INTO gaps (table_id, epoch, stream, from_seq, to_seq, first_seen, "
                    "state) VALUES (?, ?, ?, ?, ?, ?, 'open') ON CONFLICT DO NOTHING",
                    (table, epoch, stream, first, last, now),
                )
            return self.open_gaps(table, epoch, stream)

    def gaps(self, *, open_only: bool = True) -> list[Gap]:
        """Gaps (open ones first, oldest first), closed ones too unless ``open_only``."""
        where = "WHERE closed_at IS NULL" if open_only else ""
        rows = self.db.all(
            "SELECT id, table_id, epoch, stream, from_seq, to_seq, first_seen, state, attempts, "
            f"asked_at, reason, closed_at FROM gaps {where} ORDER BY first_seen"
        )
        return [_gap(r) for r in rows]

    def claim_gap(self, gap: Gap, pit: str, now: float, retry: float) -> bool:
        """Take the asking of ``gap`` for this pit (another process may have asked already)."""
        cursor = self.db.execute(
            "UPDATE gaps SET asked_at = ?, asked_by = ?, attempts = attempts + 1, "
            "state = CASE WHEN state = 'open' THEN 'asked' ELSE state END "
            "WHERE id = ? AND closed_at IS NULL AND state <> 'lost' "
            "AND (asked_at IS NULL OR asked_at <= ?)",
            (now, pit, gap.id, now - retry),
        )
        return int(cursor.rowcount) == 1

    def release_gaps(self, pits: Collection[str]) -> int:
        """Let go of the open gaps claimed by ``pits`` (members heard away: the replays they
        asked for go to their own topic), so that the next scan of any process asks for them
        again at once; how many."""
        if not pits:
            return 0
        marks = ", ".join("?" for _ in pits)
        cursor = self.db.execute(
            "UPDATE gaps SET asked_at = NULL WHERE closed_at IS NULL AND state <> 'lost' "
            f"AND asked_by IN ({marks})",
            sorted(pits),
        )
        return int(cursor.rowcount)

    def mark_gap(self, gap_id: int, state: str, reason: str | None) -> None:
        """Record what the table said about a gap (``lost``: it cannot be repaired)."""
        self.db.execute(
            "UPDATE gaps SET state = ?, reason = ? WHERE id = ? AND closed_at IS NULL",
            (state, reason, gap_id),
        )

    def gap_counts(self, unrepaired_after: int) -> dict[str, int]:
        """Open gaps: all, asked, and those shown as unrepaired (lost or asked often)."""
        row = self.db.one(
            "SELECT COUNT(*), "
            "COALESCE(SUM(CASE WHEN state = 'asked' THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN state = 'lost' OR attempts >= ? THEN 1 ELSE 0 END), 0) "
            "FROM gaps WHERE closed_at IS NULL",
            (unrepaired_after,),
        )
        assert row is not None
        return {"open": int(row[0]), "asked": int(row[1]), "unrepaired": int(row[2])}


def _gap(r: Row) -> Gap:
    """A gap from its row: the columns of ``gaps`` in their order (``closed_at`` when read)."""
    closed = r[11] if len(r) > 11 else None
    return Gap(
        int(r[0]),
        r[1],
        r[2],
        r[3],
        int(r[4]),
        int(r[5]),
        float(r[6]),
        r[7],
        int(r[8]),
        None if r[9] is None else float(r[9]),
        r[10],
        None if closed is None else float(closed),
    )
