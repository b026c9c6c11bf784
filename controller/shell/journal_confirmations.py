"""What the journal keeps outside its chain about the world: the events the pit confirmed storing,
each device's last numbered event, and what maintenance accepted.
"""

from __future__ import annotations

import json
import sqlite3
import time

from controller.shell.chain import (
    GENESIS,
    Head,
)
from controller.shell.journal_reads import JournalReads
from controller.shell.journal_records import (
    DeviceOrigin,
)
from controller.table.event_types import JournalAccepted


class JournalConfirmations(JournalReads):
    """The confirmations and origins of a journal."""

    def confirm(self, epoch: str, seq: int, pit: str) -> int:
        """The pit stored every event of ``epoch`` up to ``seq``: record it (a lower or equal
        value changes nothing); the highest confirmed seq of the epoch."""
        conn = self._conn
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO confirmations VALUES (?, ?, ?, ?) ON CONFLICT (epoch) DO UPDATE "
                "SET seq = excluded.seq, pit = excluded.pit, at = excluded.at "
                "WHERE excluded.seq > confirmations.seq",
                (epoch, seq, pit, at),
            )
            row = conn.execute("SELECT seq FROM confirmations WHERE epoch = ?", (epoch,)).fetchone()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return int(row[0])

    def origins(self) -> dict[str, tuple[DeviceOrigin, int]]:
        """Per device, its last numbered event journaled and the input that carried it."""
        try:
            rows = self._conn.execute(
                "SELECT device, boot_id, seq, parts, input_id FROM origins"
            ).fetchall()
        except sqlite3.OperationalError:  # a journal older than origins, opened read-only
            return {}
        found = {}
        for device, boot_id, seq, parts, input_id in rows:
            try:
                numbers = frozenset(int(p) for p in json.loads(parts))
            except (ValueError, TypeError):
                continue  # a damaged row: the inputs replayed at start still tell
            found[str(device)] = (
                DeviceOrigin(str(device), int(boot_id), int(seq), numbers),
                int(input_id),
            )
        return found

    def confirmations(self) -> dict[str, int]:
        """The highest seq the pit confirmed storing, per epoch."""
        try:
            rows = self._conn.execute("SELECT epoch, seq FROM confirmations").fetchall()
        except sqlite3.OperationalError:  # a journal older than confirmations, read-only
            return {}
        return {str(e): int(s) for e, s in rows}

    def epoch_last(self, name: str) -> int | None:
        """The number of the last event of epoch ``name`` (0: none yet; None: no such epoch)."""
        names = [e.name for e in self.epochs]
        if name not in names:
            return None
        index = names.index(name)
        first = self.epochs[index].first_seq
        following = self.epochs[index + 1 :]
        end = following[0].first_seq - 1 if following else self.last_seq()
        return max(0, end - first + 1)

    def accepted_through(self, field: str = "through") -> int:
        """The furthest chain position (or input, ``input_through``) maintenance accepted."""
        furthest = 0
        furthest = self._archived_max(f"$.accepted.{field}")  # decisions archived with theirs
        for body in self.event_bodies(JournalAccepted.TYPE):
            try:
                value = json.loads(body)["data"][field]
            except (ValueError, KeyError, TypeError):
                continue  # a damaged row: its own hash fails, and it accepts nothing
            if isinstance(value, int):
                furthest = max(furthest, value)
        return furthest

    def verified_head(self) -> Head:
        """Where the last verification of the chain ended (the genesis: never verified)."""
        pos, digest = self.meta_value("verified_pos"), self.meta_value("verified_hash")
        if pos is None or digest is None or not pos.isdigit():
            return GENESIS
        return Head(int(pos), digest)
