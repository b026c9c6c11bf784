"""What every part of the journal stands on: its connection, its table, its epochs and its meta
table (controller/shell/journal.py puts the parts together).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller.shell.chain import (
    GENESIS_HASH,
    JournalDamagedError,
    one_line,
    read_transaction,
)
from controller.shell.journal_records import (
    Epoch,
    EventId,
)


class JournalBase:
    """One table's journal database, as each part of :class:`~controller.shell.journal.Journal`
    sees it."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        meta = self._meta()
        self.table_id = meta["table_id"]
        try:
            self.genesis: dict[str, Any] = json.loads(meta.get("genesis", "{}"))
            self._head_pos = int(meta.get("head_pos", "0"))
        except ValueError as exc:
            raise JournalDamagedError(
                f"{path}: its meta table is damaged ({one_line(exc)})"
            ) from None
        self._head_hash = meta.get("head_hash", GENESIS_HASH)
        #: The journal's own name: its first epoch. A head on the broker with another origin
        #: belongs to another journal (a replaced disk), which can share no event id with this.
        self.epochs = self._epochs(meta)
        self.origin = meta.get("origin", self.epochs[0].name)
        #: Outbox rows the broker acknowledged, deleted by the next write (see :meth:`forget`).
        self._acked: list[int] = []
        self._acked_lock = threading.Lock()

    def _epochs(self, meta: Mapping[str, str]) -> list[Epoch]:
        try:
            rows = self._conn.execute(
                "SELECT epoch, first_seq FROM epochs ORDER BY first_seq"
            ).fetchall()
        except sqlite3.OperationalError:  # a journal older than epochs, opened read-only
            rows = []
        return [Epoch(str(n), int(f)) for n, f in rows] or [Epoch(meta["epoch"], 1)]

    @property
    def epoch(self) -> str:
        """The epoch new events are in."""
        return self.epochs[-1].name

    def event_id(self, key: int) -> EventId:
        """The id on the wire of the event with journal key ``key``."""
        firsts = [e.first_seq for e in self.epochs]
        epoch = self.epochs[max(0, bisect.bisect_right(firsts, key) - 1)]
        return EventId(epoch.name, key - epoch.first_seq + 1)

    def reading(self) -> contextlib.AbstractContextManager[None]:
        """One read of the journal (:func:`~controller.shell.chain.read_transaction`): what a
        retention round commits on another connection meanwhile (a segment, its rows deleted)
        is not seen half. A verify, an export and any reader of archived and live rows
        together use it."""
        return read_transaction(self._conn)

    def _meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    def meta_value(self, name: str) -> str | None:
        """One value of the meta table."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()
        return None if row is None else str(row[0])
