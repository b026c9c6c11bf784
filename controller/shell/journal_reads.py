"""Reading the journal: its inputs, events, dispatches, the inbox's answers, snapshots and counts,
the archived rows included where a reader needs the whole history.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from controller.shell.chain import (
    CHAINED,
    Head,
)
from controller.shell.journal_records import (
    StoredRow,
)
from controller.shell.journal_segments import JournalSegments


class JournalReads(JournalSegments):
    """The readers of a journal."""

    def command_response(self, transaction: str) -> dict[str, Any] | None:
        """The stored response to ``transaction``, if that request was seen before."""
        row = self._conn.execute(
            "SELECT response FROM commands WHERE txn = ?", (transaction,)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def recent_requests(self, limit: int) -> list[str]:
        """The request texts of the last ``limit`` commands in the inbox, newest first."""
        rows = self._conn.execute(
            "SELECT request FROM commands ORDER BY id DESC LIMIT ?", (limit,)
        ).fetchall()
        return [r[0] for r in rows]

    def inputs(self, after: int = 0) -> Iterator[StoredRow]:
        """Every journaled input (after input ``after``), in order; archived ones first."""
        if after < self._archived_max("$.keys.inputs[1]"):
            for row in self.archived_rows("inputs", after):
                key = int(row.content[0])
                yield StoredRow(key, key, str(row.content[3]))
        for key, body in self._conn.execute(
            "SELECT id, body FROM inputs WHERE id > ? ORDER BY id", (after,)
        ):
            yield StoredRow(key, key, body)

    def snapshots(self) -> Iterator[tuple[int, str, bytes]]:
        """``(input id, format or core key, bytes)`` of every intact snapshot, newest first (a
        row whose digest does not match its content is damaged: skipped)."""
        for input_id, key, blob, digest in self._conn.execute(
            "SELECT input_id, core, state, digest FROM snapshots ORDER BY input_id DESC"
        ).fetchall():
            if hashlib.sha256(key.encode() + blob).hexdigest() == digest:
                yield int(input_id), str(key), bytes(blob)

    def chain_hash_at(self, pos: int) -> str | None:
        """The hash of the live chained row at position ``pos`` (None: not a live row)."""
        for table in CHAINED:
            row = self._conn.execute(
                f"SELECT hash FROM {table} WHERE pos = ?",  # noqa: S608 (the chain's own names)
                (pos,),
            ).fetchone()
            if row is not None:
                return str(row[0])
        return None

    def events(self, hand_id: str | None = None, after_input: int = 0) -> Iterator[StoredRow]:
        """Every journaled event (of one hand; caused by inputs after one), in order; archived
        ones first."""
        # archived: the events of archived inputs after ``after_input``, and (for an export
        # from the start) the archived events no input caused
        if hand_id is None and after_input < self._archived_max("$.keys.inputs[1]"):
            for row in self.archived_rows("events"):
                key, input_id, _, _, body = row.content
                if input_id is None or input_id > after_input:
                    yield StoredRow(int(key), input_id, str(body))
        if hand_id is not None:
            for row in self.archived_rows("events", hand_id=hand_id):
                key, input_id, _, hand, body = row.content
                if hand == hand_id:
                    yield StoredRow(int(key), input_id, str(body))
        if hand_id is None:
            cursor = self._conn.execute(
                "SELECT seq, input_id, body FROM events "
                "WHERE input_id IS NULL OR input_id > ? ORDER BY seq",
                (after_input,),
            )
        else:
            cursor = self._conn.execute(
                "SELECT seq, input_id, body FROM events WHERE hand_id = ? ORDER BY seq", (hand_id,)
            )
        for key, input_id, body in cursor:
            yield StoredRow(key, input_id, body)

    def events_between(self, first: int, last: int) -> list[tuple[int, str]]:
        """``(seq, body)`` of the journaled events ``first`` to ``last`` (a replay): from the
        local segments, then the live rows (a pruned range is simply not there)."""
        found: list[tuple[int, str]] = []
        for row in self.archived_rows("events", after=first - 1):
            if int(row.content[0]) > last:
                break
            found.append((int(row.content[0]), str(row.content[4])))
        rows = self._conn.execute(
            "SELECT seq, body FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq", (first, last)
        ).fetchall()
        return found + [(int(seq), body) for seq, body in rows]

    def chained_events(self, hand_id: str | None = None) -> Iterator[tuple[StoredRow, Head]]:
        """Every event (of one hand), archived ones first, with its place in the chain (an
        export stamps some with it: read here in one pass, not looked up one by one)."""
        for row in self.archived_rows("events", hand_id=hand_id):
            key, input_id, _, hand, body = row.content
            if hand_id is None or hand == hand_id:
                yield StoredRow(int(key), input_id, str(body)), Head(row.pos, row.hash)
        where, params = ("hand_id = ?", (hand_id,)) if hand_id is not None else ("1", ())
        for key, input_id, body, pos, digest in self._conn.execute(
            f"SELECT seq, input_id, body, pos, hash FROM events WHERE {where} ORDER BY seq",  # noqa: S608
            params,
        ):
            yield StoredRow(key, input_id, body), Head(int(pos), str(digest))

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of a read-only query (the journal's own modules: retention)."""
        return [tuple(r) for r in self._conn.execute(sql, tuple(params))]

    def _archived_max(self, path: str) -> int:
        """The highest value at JSON ``path`` of the segments' headers (0: none)."""
        try:
            row = self._conn.execute(
                "SELECT MAX(json_extract(header, ?)) FROM segments", (path,)
            ).fetchone()
        except sqlite3.OperationalError:  # a journal older than segments, opened read-only
            return 0
        return int(row[0]) if row and isinstance(row[0], int) else 0

    def dispatches(self) -> Iterator[tuple[int, str, str, int | None]]:
        """Every journaled device command as ``(id, device, body, input id)``, in order."""
        yield from self._conn.execute(
            "SELECT id, device, body, input_id FROM dispatches ORDER BY id"
        )

    def chain_of(self, seq: int) -> Head | None:
        """The position and hash of the event with journal key ``seq`` (None: no such row)."""
        row = self._conn.execute("SELECT pos, hash FROM events WHERE seq = ?", (seq,)).fetchone()
        if row is not None:
            return Head(int(row[0]), str(row[1]))
        for archived in self.archived_rows("events", after=seq - 1):
            return Head(archived.pos, archived.hash) if archived.content[0] == seq else None
        return None

    def event_bodies(self, event_type: str) -> list[str]:
        """The journal texts of every event of one type, in order."""
        return [
            str(r[0])
            for r in self._conn.execute(
                "SELECT body FROM events WHERE type = ? ORDER BY seq", (event_type,)
            )
        ]

    def last_input(self) -> int:
        """The highest input id ever given (0 for none)."""
        row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'inputs'").fetchone()
        return int(row[0]) if row else 0

    def last_seq(self) -> int:
        """The highest event sequence number ever given (0 for none)."""
        row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        return int(row[0]) if row else 0

    def counts(self) -> dict[str, int]:
        """Rows per table (for status lines and reports)."""
        return {
            table: int(self._conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608
            for table in (*CHAINED, "outbox", "snapshots")
        }
