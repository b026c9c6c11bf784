"""The journal: one SQLite database holding inputs, events, the outbox and the command inbox.

Everything the table decided is here, in order, and nothing else is needed to rebuild it:

* ``inputs`` — every device event and dealer command the core was given;
* ``events`` — every event the core (or the command validator) produced; ``seq`` is the event's
  sequence number in its envelope, an ``AUTOINCREMENT`` key so a number is never reused even
  after the last row is gone;
* ``commands`` — the inbox: each request ``transaction`` with the response it got, so a
  redelivered request gets the stored response instead of running twice;
* ``dispatches`` — commands the shell sent to devices (shuffle, dispense, reveal), journaled
  before they go out, so recovery resends them under the same identifiers and never twice;
* ``outbox`` — messages not yet acknowledged by the broker; rows go only after PUBACK;
* ``snapshots`` — the table state between hands, so a start replays only the inputs after the
  last one; derived data, outside the chain, used only by the core that wrote it;
* ``segments`` — the archive segments closed hands moved into (controller/shell/segments.py,
  controller/shell/retention.py): each one's positions, chain hashes, file SHA-256 and state;
  the chain runs through them and on into the live rows;
* ``confirmations`` — the highest event number the pit confirmed storing, per epoch (its
  ``stored`` request); outside the chain, like the snapshots;
* ``origins`` — per device, the last event it numbered (its boot id and sequence number, and
  the parts of it journaled), written with the input: a device resends only its last event, so
  this one row per device is all a start needs to recognise a redelivery, however long ago the
  input was archived; outside the chain (derived from the inputs, like the snapshots);
* ``epochs`` — where each epoch begins: an event's id is ``{table}:{epoch}:{n}`` where ``n``
  counts from 1 at the first event of its epoch. A journal has one epoch until it is found
  rolled back or maintenance accepts it after an integrity alarm (docs/operations.md); each new
  epoch is also recorded by a chained ``journal.epoch.started`` event.

An input, the events it caused, the dispatches they need, the inbox row and the outbox rows are
written in one transaction. Every row of the first four tables carries a position in one chain
over the whole journal and the SHA-256 of the previous row's hash and its own content, so an
edited, inserted or deleted row breaks the chain (:meth:`Journal.verify`). The outbox is not
chained: it is a delivery queue, and its rows are meant to go.

The database runs in WAL mode with ``synchronous=FULL``: a transaction that returned is on disk
and survives a power cut, which is what lets the table promise that a journaled input is never
lost. This class is synchronous; :class:`controller.shell.writer.JournalWriter` runs it on its
own thread so the event loop never waits on an fsync.

This module opens a journal and appends to it; :class:`Journal` is made of one part per reader,
each a module over the same connection: its base (``journal_base.py``: the table, the epochs,
the meta table), the outbox (``journal_outbox.py``), the readers (``journal_reads.py``), the
archive segments (``journal_segments.py``), the confirmations and origins
(``journal_confirmations.py``) and the verification (``journal_verify.py``); the rows they take
and give are in ``journal_records.py``.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import secrets
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.shell.chain import (
    GENESIS_HASH,
    SCHEMA,
    SCHEMA_VERSION,
    STREAMS,
    UNREADABLE,
    Head,
    JournalDamagedError,
    JournalError,
    connect,
    damage_advice,
    damaged,
    insert_row,
    next_key,
    one_line,
    unreadable,
)
from controller.shell.checkpoint import FORMAT_NAME, Snapshot
from controller.shell.checkpoint import encode as encode_snapshot
from controller.shell.journal_outbox import JournalOutbox
from controller.shell.journal_records import (
    Appended,
    DeviceOrigin,
    Epoch,
    EventId,
    NewCommand,
    NewDispatch,
    NewEpoch,
    NewEvent,
    OutboxRow,
    StoredRow,
)
from controller.shell.journal_verify import JournalVerify
from controller.table.state import TableState

__all__ = [
    "Appended",
    "DeviceOrigin",
    "Epoch",
    "EventId",
    "Journal",
    "JournalDamagedError",
    "JournalError",
    "NewCommand",
    "NewDispatch",
    "NewEpoch",
    "NewEvent",
    "OutboxRow",
    "StoredRow",
]


def _not_opened(path: Path, exc: BaseException) -> JournalError:
    """Why a journal the tools asked for did not open: damage only on SQLite's own verdict (a
    full disk or a lock is said as such, never as a damaged file to salvage)."""
    if unreadable(exc):
        return JournalDamagedError(
            f"{path} is not a journal, or is damaged ({one_line(exc)}): {damage_advice(path)}"
        )
    return JournalError(f"{path} cannot be opened: {one_line(exc)}")


class Journal(JournalVerify, JournalOutbox):
    """The journal database of one table: opening it and appending to it here, the rest in the
    parts it is made of (the module docstring lists them)."""

    @classmethod
    def open(
        cls, path: Path, *, table_id: str, genesis: Mapping[str, Any] | None = None
    ) -> Journal:
        """Open (or create) the journal at ``path`` for table ``table_id``.

        A new journal gets a random epoch and records ``genesis`` (the table as configured),
        which replays start from. An existing journal of another table is refused.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return cls._create(path, table_id, genesis)
        except UNREADABLE as exc:
            if unreadable(exc):
                raise damaged(path, exc) from None
            raise

    @classmethod
    def _create(cls, path: Path, table_id: str, genesis: Mapping[str, Any] | None) -> Journal:
        conn = connect(path)
        try:
            # One transaction: a journal whose creation failed half-way (a full disk) is no
            # journal at all, rather than one with half its meta.
            conn.execute("BEGIN IMMEDIATE")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            existing = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            if not existing:
                created = {
                    "schema": str(SCHEMA_VERSION),
                    "table_id": table_id,
                    "epoch": secrets.token_hex(6),
                    "genesis": json.dumps(dict(genesis or {}), sort_keys=True),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "head_pos": "0",
                    "head_hash": GENESIS_HASH,
                    "bdseq": "0",
                }
                created["origin"] = created["epoch"]
                conn.executemany("INSERT INTO meta VALUES (?, ?)", created.items())
                existing = created
            if existing.get("epoch") and not conn.execute("SELECT 1 FROM epochs").fetchone():
                # a journal from before epochs were recorded: it has had one epoch
                conn.execute(
                    "INSERT INTO epochs VALUES (?, 1, ?, 'the journal began')",
                    (existing["epoch"], existing.get("created", "")),
                )
                conn.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('origin', ?)", (existing["epoch"],)
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()
            raise
        if existing.get("table_id") != table_id:
            conn.close()
            raise JournalError(
                f"{path} is the journal of table {existing.get('table_id')!r}, not {table_id!r}"
            )
        schema = existing.get("schema", "0")
        if schema.isdigit() and int(schema) > SCHEMA_VERSION:
            conn.close()
            raise JournalError(f"{path} has journal schema {existing['schema']}, newer than ours")
        return cls._opened(conn, path)

    @classmethod
    def _opened(cls, conn: sqlite3.Connection, path: Path) -> Journal:
        try:
            return cls(conn, path)
        except (KeyError, ValueError, TypeError, *UNREADABLE) as exc:
            conn.close()
            if isinstance(exc, sqlite3.DatabaseError) and not unreadable(exc):
                raise
            raise JournalDamagedError(
                f"{path}: its meta table is damaged ({exc!r}): {damage_advice(path)}"
            ) from None

    @classmethod
    def open_existing(cls, path: Path, *, read_only: bool = False) -> Journal:
        """Open a journal that must exist (for ``tablectl journal``), whatever its table;
        ``read_only``: on a connection that cannot write (a reader beside the daemon)."""
        if not path.is_file():
            raise JournalError(f"no journal at {path}")
        try:
            conn = connect(path, read_only=read_only)
        except UNREADABLE as exc:
            raise _not_opened(path, exc) from None
        try:
            rows = conn.execute("SELECT value FROM meta WHERE key = 'table_id'").fetchall()
        except UNREADABLE as exc:
            conn.close()
            raise _not_opened(path, exc) from None
        if not rows:
            conn.close()
            raise JournalError(f"{path} is not a journal (no table id)")
        return cls._opened(conn, path)

    def close(self) -> None:
        """Close the database."""
        self._conn.close()

    def checkpoint(self) -> None:
        """Fold the WAL into the database file (at a clean shutdown)."""
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def append(
        self,
        *,
        input_row: tuple[str, str, str] | None,
        events: Sequence[NewEvent],
        dispatches: Sequence[NewDispatch] = (),
        command: NewCommand | None = None,
        live: bool = True,
        snapshot: TableState | None = None,
        epoch: NewEpoch | None = None,
        meta: Mapping[str, str | None] | None = None,
        origin: DeviceOrigin | None = None,
    ) -> Appended:
        """Write an input (``(ts, type, body)``), its events and the rest in one transaction.

        ``snapshot`` is the table after this input, between hands (written in the snapshot
        format, controller/shell/checkpoint.py, with the epoch and chain head it ends); ``epoch``
        begins a new epoch first; ``meta`` sets (None: removes) meta values; ``origin`` is the
        device's last numbered event once this input is in (it replaces the device's row).
        """
        conn = self._conn
        pos, head = self._head_pos, self._head_hash
        now_ns = time.time_ns()
        input_id: int | None = None
        seqs: list[int] = []
        dispatch_ids: list[int] = []
        outbox: list[tuple[int, int, str, str, Head]] = []
        response: Mapping[str, Any] | None = None
        epochs = self.epochs
        acked = self._take_acked()
        try:
            conn.execute("BEGIN IMMEDIATE")
            if acked:
                conn.executemany("DELETE FROM outbox WHERE id = ?", [(i,) for i in acked])
            if epoch is not None:
                started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                conn.execute(
                    "INSERT INTO epochs VALUES (?, ?, ?, ?)",
                    (epoch.name, epoch.first_seq, started, epoch.reason),
                )
                conn.execute("UPDATE meta SET value = ? WHERE key = 'epoch'", (epoch.name,))
                epochs = [*epochs, Epoch(epoch.name, epoch.first_seq)]
            if input_row is not None:
                input_id = next_key(conn, "inputs")
                pos, head = insert_row(conn, "inputs", pos, head, (input_id, *input_row))
            for event in events:
                seq = next_key(conn, "events")
                pos, head = insert_row(
                    conn,
                    "events",
                    pos,
                    head,
                    (seq, input_id, event.type, event.hand_id, event.body),
                )
                seqs.append(seq)
                for stream in STREAMS:
                    row_id = conn.execute(
                        "INSERT INTO outbox (seq, stream, live, created_ns) VALUES (?, ?, ?, ?)",
                        (seq, stream, int(live), now_ns),
                    ).lastrowid
                    assert row_id is not None
                    outbox.append((row_id, seq, stream, event.body, Head(pos, head)))
            for dispatch in dispatches:
                key = next_key(conn, "dispatches")
                pos, head = insert_row(
                    conn, "dispatches", pos, head, (key, input_id, dispatch.device, dispatch.body)
                )
                dispatch_ids.append(key)
            if command is not None:
                first = epochs[-1].first_seq  # numbered on the wire from the epoch's start
                response = dict(command.respond([s - first + 1 for s in seqs]))
                key = next_key(conn, "commands")
                content = (
                    key,
                    command.transaction,
                    command.verb,
                    command.request,
                    input_id,
                    json.dumps(response, separators=(",", ":"), ensure_ascii=False),
                )
                pos, head = insert_row(conn, "commands", pos, head, content)
            if origin is not None and input_id is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO origins VALUES (?, ?, ?, ?, ?)",
                    (
                        origin.device,
                        origin.boot_id,
                        origin.seq,
                        json.dumps(sorted(origin.parts)),
                        input_id,
                    ),
                )
            if snapshot is not None and input_id is not None:
                core, blob = (
                    FORMAT_NAME,
                    self._snapshot_bytes(snapshot, input_id, epochs, pos, head),
                )
                digest = hashlib.sha256(core.encode() + blob).hexdigest()
                conn.execute(
                    "INSERT INTO snapshots VALUES (?, ?, ?, ?)", (input_id, core, blob, digest)
                )
                conn.execute(  # keep the last few: older ones would never be read
                    "DELETE FROM snapshots WHERE input_id NOT IN "
                    "(SELECT input_id FROM snapshots ORDER BY input_id DESC LIMIT 3)"
                )
            conn.executemany(
                "UPDATE meta SET value = ? WHERE key = ?",
                [(str(pos), "head_pos"), (head, "head_hash")],
            )
            for name, value in (meta or {}).items():
                if value is None:
                    conn.execute("DELETE FROM meta WHERE key = ?", (name,))
                else:
                    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._return_acked(acked)
            raise
        self._head_pos, self._head_hash = pos, head
        self.epochs = epochs
        # (a transaction may end one epoch and begin the next: each event by its own key)
        rows = tuple(
            OutboxRow(row_id, seq, stream, live, now_ns, body, self.event_id(seq), chain)
            for row_id, seq, stream, body, chain in outbox
        )
        return Appended(input_id, seqs, dispatch_ids, response, rows)

    def _snapshot_bytes(
        self, state: TableState, input_id: int, epochs: Sequence[Epoch], pos: int, head: str
    ) -> bytes:
        """The snapshot of ``state`` as input ``input_id`` leaves it (inside its transaction:
        the last event key and the chain's head are this transaction's)."""
        row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'")
        last = row.fetchone()
        key = int(last[0]) if last else 0
        firsts = [e.first_seq for e in epochs]
        epoch = epochs[max(0, bisect.bisect_right(firsts, key) - 1)]
        seq = key - epoch.first_seq + 1 if key >= epoch.first_seq else 0
        snapshot = Snapshot(input_id, epoch.name, seq, Head(pos, head), state)
        return encode_snapshot(snapshot)

    @property
    def head(self) -> Head:
        """The last row of the chain (as this connection wrote or found it)."""
        return Head(self._head_pos, self._head_hash)

    def set_meta(self, values: Mapping[str, str | None]) -> None:
        """Set (None: remove) meta values, in one transaction."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for name, value in values.items():
                if value is None:
                    conn.execute("DELETE FROM meta WHERE key = ?", (name,))
                else:
                    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (a full disk)
                conn.execute("ROLLBACK")
            raise

    def cap_pages(self, pages: int) -> None:
        """Let the database grow to ``pages`` pages at most: a write past it fails as on a
        full disk (SQLite's ``max_page_count``; for this connection)."""
        self._conn.execute(f"PRAGMA max_page_count = {int(pages)}")
