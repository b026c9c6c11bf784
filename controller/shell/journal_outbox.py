"""The journal's outbox: the messages the broker has not acknowledged yet, the rows it has (deleted
by the next write), and the MQTT birth sequence numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.shell.chain import (
    Head,
)
from controller.shell.journal_base import JournalBase
from controller.shell.journal_records import (
    OutboxRow,
)


class JournalOutbox(JournalBase):
    """The outbox of a journal."""

    def last_bdseq(self) -> int:
        """The birth/death sequence number of the last MQTT connection (0: none yet)."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'bdseq'").fetchone()
        return int(row[0]) if row else 0

    def next_bdseq(self) -> int:
        """The birth/death sequence number of the next MQTT connection (persisted)."""
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute("SELECT value FROM meta WHERE key = 'bdseq'").fetchone()
            value = int(row[0]) + 1 if row else 1
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('bdseq', ?)", (str(value),))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (a full disk)
                conn.execute("ROLLBACK")
            raise
        return value

    def forget(self, row_ids: Sequence[int]) -> None:
        """The broker acknowledged these messages: delete them with the next write.

        Safe to call from any thread (the link calls it from the event loop): it only notes the
        ids. Deleting them in the next transaction, whichever it is, spares a transaction per
        message; a crash before it only publishes them again (consumers drop a message whose
        ``event_id`` they have, and every row carries the same body as before).
        """
        with self._acked_lock:
            self._acked.extend(row_ids)

    def forgotten(self) -> int:
        """How many acknowledged messages wait for their delete."""
        with self._acked_lock:
            return len(self._acked)

    def _take_acked(self) -> list[int]:
        with self._acked_lock:
            taken, self._acked = self._acked, []
        return taken

    def _return_acked(self, row_ids: list[int]) -> None:
        """A transaction that was to delete these failed: they wait for the next one."""
        if row_ids:
            with self._acked_lock:
                self._acked[:0] = row_ids

    def delete_outbox(self) -> None:
        """Delete the acknowledged messages now (one transaction; when nothing else is written)."""
        acked = self._take_acked()
        if not acked:
            return
        conn = self._conn
        # Without its own fsync: losing a delete to a power cut only publishes the message
        # again (consumers drop it by event_id), and the next journal commit syncs it anyway.
        conn.execute("PRAGMA synchronous=NORMAL")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("DELETE FROM outbox WHERE id = ?", [(i,) for i in acked])
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already (a full disk)
                    conn.execute("ROLLBACK")
                self._return_acked(acked)
                raise
        finally:
            conn.execute("PRAGMA synchronous=FULL")

    def pending(self, limit: int = 100, after: int = 0) -> list[OutboxRow]:
        """The oldest messages still waiting for the broker, in order."""
        rows = self._conn.execute(
            "SELECT o.id, o.seq, o.stream, o.live, o.created_ns, e.body, e.pos, e.hash "
            "FROM outbox o JOIN events e ON e.seq = o.seq WHERE o.id > ? ORDER BY o.id LIMIT ?",
            (after, limit),
        ).fetchall()
        return [
            OutboxRow(
                r[0], r[1], r[2], bool(r[3]), r[4], r[5], self.event_id(r[1]), Head(r[6], r[7])
            )
            for r in rows
        ]

    def first_pending(self) -> int | None:
        """The journal key of the oldest event still waiting for the broker (None: none)."""
        row = self._conn.execute("SELECT MIN(seq) FROM outbox").fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def pending_count(self) -> int:
        """How many messages wait for the broker (not those acknowledged, waiting for a delete)."""
        rows = int(self._conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0])
        return max(0, rows - self.forgotten())
