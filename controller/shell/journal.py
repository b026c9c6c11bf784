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
"""

from __future__ import annotations

import bisect
import hashlib
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from controller.shell.chain import (
    CHAINED,
    GENESIS,
    GENESIS_HASH,
    SCHEMA,
    SCHEMA_VERSION,
    STREAMS,
    UNREADABLE,
    Head,
    JournalDamagedError,
    JournalError,
    VerifyReport,
    connect,
    damage_advice,
    damaged,
    insert_row,
    next_key,
    one_line,
    unreadable,
    verify_chain,
)
from controller.shell.segments import (
    LOCAL,
    PRUNED,
    STATES,
    Segment,
    SegmentError,
    SegmentRow,
    check,
    directory_of,
    file_sha256,
    read_header,
    read_rows,
)
from controller.table.event_types import JournalAccepted

__all__ = ["JournalDamagedError", "JournalError"]


class NewEvent(NamedTuple):
    """An event to journal: its type, hand and journal text (see :mod:`controller.table.codec`)."""

    type: str
    hand_id: str | None
    body: str


class NewDispatch(NamedTuple):
    """A device command to journal before it is sent."""

    device: str
    body: str


@dataclass
class NewCommand:
    """A dealer request to record in the inbox with its response.

    ``respond`` builds the response from the sequence numbers the events got, inside the
    transaction, so the stored response names the events it caused.
    """

    transaction: str
    verb: str
    request: str
    respond: Callable[[list[int]], Mapping[str, Any]]


@dataclass(frozen=True)
class Appended:
    """What one transaction wrote."""

    input_id: int | None
    seqs: list[int]
    dispatch_ids: list[int]
    response: Mapping[str, Any] | None = None
    #: The outbox rows it wrote, as :meth:`Journal.pending` would read them back.
    outbox: tuple[OutboxRow, ...] = ()


class DeviceOrigin(NamedTuple):
    """A device's last numbered event: its boot id, sequence number and the parts journaled."""

    device: str
    boot_id: int
    seq: int
    parts: frozenset[int]


class EventId(NamedTuple):
    """What an event is called on the wire: its epoch and its number in that epoch."""

    epoch: str
    seq: int


class Epoch(NamedTuple):
    """An epoch of the journal: its name and the journal key of its first event."""

    name: str
    first_seq: int


@dataclass(frozen=True)
class NewEpoch:
    """An epoch to begin in a transaction: events from journal key ``first_seq`` on are in it."""

    name: str
    first_seq: int
    reason: str


class OutboxRow(NamedTuple):
    """A message waiting for the broker: the event, the stream, and when it was journaled.

    ``seq`` is the event's journal key, ``event`` its id on the wire, ``chain`` the position
    and hash of its row in the chain.
    """

    id: int
    seq: int
    stream: str
    live: bool
    created_ns: int
    body: str
    event: EventId
    chain: Head


class StoredRow(NamedTuple):
    """A journaled row read back for replay: its key, input link and body."""

    key: int
    input_id: int | None
    body: str


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


def _same_kind(reason: str, segment: Segment) -> bool:
    """Whether two prunes were allowed for the same kind of reason (the pit's, the archive's)."""
    return reason.split(" ", 1)[0] == (segment.reason or "").split(" ", 1)[0]


def segment_confirmed(segment: Segment, confirmed: Mapping[str, int]) -> bool:
    """Whether the pit confirmed storing every event of ``segment``."""
    return all(confirmed.get(epoch, 0) >= last for epoch, (_, last) in segment.epochs.items())


def _not_opened(path: Path, exc: BaseException) -> JournalError:
    """Why a journal the tools asked for did not open: damage only on SQLite's own verdict (a
    full disk or a lock is said as such, never as a damaged file to salvage)."""
    if unreadable(exc):
        return JournalDamagedError(
            f"{path} is not a journal, or is damaged ({one_line(exc)}): {damage_advice(path)}"
        )
    return JournalError(f"{path} cannot be opened: {one_line(exc)}")


class Journal:
    """The journal database of one table."""

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

    # ------------------------------------------------------------------ opening

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
    def open_existing(cls, path: Path) -> Journal:
        """Open a journal that must exist (for ``tablectl journal``), whatever its table."""
        if not path.is_file():
            raise JournalError(f"no journal at {path}")
        try:
            conn = connect(path)
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

    def _meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    # ------------------------------------------------------------------ writing

    def append(
        self,
        *,
        input_row: tuple[str, str, str] | None,
        events: Sequence[NewEvent],
        dispatches: Sequence[NewDispatch] = (),
        command: NewCommand | None = None,
        live: bool = True,
        snapshot: tuple[str, bytes] | None = None,
        epoch: NewEpoch | None = None,
        meta: Mapping[str, str | None] | None = None,
        origin: DeviceOrigin | None = None,
    ) -> Appended:
        """Write an input (``(ts, type, body)``), its events and the rest in one transaction.

        ``snapshot`` is ``(core fingerprint, state)`` of the table after this input; ``epoch``
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
                core, blob = snapshot
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

    @property
    def head(self) -> Head:
        """The last row of the chain (as this connection wrote or found it)."""
        return Head(self._head_pos, self._head_hash)

    def meta_value(self, name: str) -> str | None:
        """One value of the meta table."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

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

    # ------------------------------------------------------------------ reading

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

    def latest_snapshot(self, core: str) -> tuple[int, bytes] | None:
        """``(input id, state)`` of the newest intact snapshot written by core ``core``."""
        for input_id, blob, digest in self._conn.execute(
            "SELECT input_id, state, digest FROM snapshots WHERE core = ? ORDER BY input_id DESC",
            (core,),
        ):
            if hashlib.sha256(core.encode() + blob).hexdigest() == digest:
                return int(input_id), bytes(blob)
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

    # ------------------------------------------------------------------ verifying

    def verify(self, since: Head = GENESIS, *, segments: bool = False) -> VerifyReport:
        """Walk the hash chain after ``since`` (every row by default); report every break.

        Rows archived in segments: with ``segments``, every segment's file is checked (its
        SHA-256, its rows' chain, its link to the previous segment) and the live rows must
        follow the last one; without, the walk starts at the last archived row (each segment's
        chain was checked when it was written). Breaks maintenance accepted
        (``journal.accepted``) are moved to ``report.accepted``.
        """
        report = VerifyReport(since=since)
        keys = {table: self._archived_max(f"$.keys.{table}[1]") for table in CHAINED}
        archived = self.archived_head()
        if archived.pos and since.pos <= archived.pos:
            records = self.segments()
            last = records[-1]
            self._verify_segments(records, report, files=segments)
            if not segments:
                self._check_archived_anchor(since, records, report)
            boundary = Head(last.last_pos, last.last_hash)
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
        self, records: Sequence[Segment], report: VerifyReport, *, files: bool
    ) -> None:
        """The chain across the segments' records (a deleted or reordered record); with
        ``files``, every local segment's file too (pruned ones are checked by their records)."""
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
            if segment.state == PRUNED:
                run = pruned_runs[-1] if pruned_runs else None
                if (
                    run is not None
                    and run[1] == segment.first_pos - 1
                    and _same_kind(run[3], segment)
                ):
                    pruned_runs[-1] = (run[0], segment.last_pos, run[2] + 1, segment.reason or "")
                else:
                    pruned_runs.append(
                        (segment.first_pos, segment.last_pos, 1, segment.reason or "")
                    )
                if (segment.reason or "").startswith("confirmed") and not segment_confirmed(
                    segment, confirmed
                ):
                    report.add(
                        segment.first_pos,
                        f"{where}: pruned as confirmed by the pit, but no confirmation covers it",
                    )
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
    def _check_archived_anchor(
        since: Head, records: Sequence[Segment], report: VerifyReport
    ) -> None:
        """The verified head, now archived, must still be where it was verified."""
        for segment in records:
            if segment.last_pos == since.pos and segment.last_hash != since.hash:
                report.add(
                    since.pos,
                    f"the row at position {since.pos}, verified before, was changed or removed "
                    f"(segment {segment.name} ends with another hash)",
                )

    # ------------------------------------------------------------------ segments

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

    # ------------------------------------------------------------------ the pit's confirmations

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
