"""The journal's tables and its hash chain: schema, row hashes, inserts, verification.

Every row of the chained tables carries a position in one chain over the whole journal and the
SHA-256 of the previous row's hash and its own content. :func:`verify_chain` walks the chain and
names every row that was edited, inserted or deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

SCHEMA_VERSION = 1
GENESIS_HASH = "0" * 64

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inputs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pos INTEGER NOT NULL UNIQUE,
    ts TEXT NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    pos INTEGER NOT NULL UNIQUE,
    input_id INTEGER,
    type TEXT NOT NULL,
    hand_id TEXT,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_hand ON events (hand_id);
CREATE TABLE IF NOT EXISTS commands (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pos INTEGER NOT NULL UNIQUE,
    txn TEXT NOT NULL UNIQUE,
    verb TEXT NOT NULL,
    request TEXT NOT NULL,
    input_id INTEGER,
    response TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dispatches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pos INTEGER NOT NULL UNIQUE,
    input_id INTEGER,
    device TEXT NOT NULL,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    input_id INTEGER PRIMARY KEY,
    core TEXT NOT NULL,
    state BLOB NOT NULL,
    digest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS epochs (
    epoch TEXT PRIMARY KEY,
    first_seq INTEGER NOT NULL UNIQUE,
    started TEXT NOT NULL,
    reason TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_type ON events (type);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    seq INTEGER NOT NULL,
    stream TEXT NOT NULL,
    live INTEGER NOT NULL,
    created_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS segments (
    name TEXT PRIMARY KEY,
    first_pos INTEGER NOT NULL UNIQUE,
    last_pos INTEGER NOT NULL,
    prev_hash TEXT NOT NULL,
    last_hash TEXT NOT NULL,
    rows INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    created TEXT NOT NULL,
    state TEXT NOT NULL,
    header TEXT NOT NULL,
    reason TEXT
);
CREATE TABLE IF NOT EXISTS confirmations (
    epoch TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    pit TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS origins (
    device TEXT PRIMARY KEY,
    boot_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    parts TEXT NOT NULL,
    input_id INTEGER NOT NULL
);
"""

#: The chained tables and the columns their hash covers, in order.
CHAINED: dict[str, tuple[str, ...]] = {
    "inputs": ("id", "ts", "type", "body"),
    "events": ("seq", "input_id", "type", "hand_id", "body"),
    "commands": ("id", "txn", "verb", "request", "input_id", "response"),
    "dispatches": ("id", "input_id", "device", "body"),
}
KEY = {"inputs": "id", "events": "seq", "commands": "id", "dispatches": "id"}

#: The two streams every event is published on.
STREAMS = ("public", "secure")


def row_hash(prev: str, table: str, content: Sequence[Any]) -> str:
    """The chain hash of one row: SHA-256 over the previous hash, the table and the content."""
    text = json.dumps([prev, table, list(content)], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class JournalError(RuntimeError):
    """The journal cannot be used (wrong table, newer schema, not a journal)."""


class JournalDamagedError(JournalError):
    """The journal file is damaged: SQLite cannot read it, or a row is not what it wrote."""


def damaged(path: Path, exc: BaseException) -> JournalDamagedError:
    """The one-line error of a damaged journal: what SQLite said and what to do."""
    return JournalDamagedError(f"{path} is damaged ({one_line(exc)}): {damage_advice(path)}")


def one_line(exc: BaseException) -> str:
    """What ``exc`` says, on one line: SQLite quotes the damaged bytes of the file back in its
    messages (a flipped byte in the schema can be a newline), and a failure is one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(exc))


def damage_advice(path: Path) -> str:
    """What to do with a damaged journal, in one sentence."""
    return (
        f"keep the file and run `tablectl journal salvage --journal {path} --out NEW.sqlite`, "
        "which copies every intact row into NEW, then point [journal] path at NEW "
        '(docs/operations.md, "A damaged journal")'
    )


#: What reading a damaged journal can raise: SQLite's errors, and an error message of SQLite's
#: that quotes damaged bytes and so is not UTF-8 itself.
UNREADABLE = (sqlite3.DatabaseError, UnicodeDecodeError)

#: What SQLite says of a journal whose schema (its own record of the tables) is damaged.
_SCHEMA_DAMAGE = ("no such table", "no such column", "malformed database schema")


def unreadable(exc: BaseException) -> bool:
    """True for what reading a damaged journal raised (ask it only of such a read)."""
    return isinstance(exc, UnicodeDecodeError) or is_damage(exc)


def is_damage(exc: BaseException) -> bool:
    """True for SQLite's own verdict that a file is damaged or not a database at all, or that
    the journal's tables are not there as the journal made them."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return True
    return code == sqlite3.SQLITE_ERROR and str(exc).startswith(_SCHEMA_DAMAGE)


@dataclass(frozen=True)
class Head:
    """A point of the chain: a position and the hash of the row there (0: before the first)."""

    pos: int
    hash: str


GENESIS = Head(0, GENESIS_HASH)


@dataclass(frozen=True)
class Break:
    """One problem of the chain; ``pos`` is the first position it concerns (0: the journal)."""

    pos: int
    text: str


@dataclass
class VerifyReport:
    """The result of :func:`verify_chain`: rows checked, breaks found, where the chain ends."""

    rows: int = 0
    breaks: list[Break] = field(default_factory=list)
    head: Head = GENESIS
    since: Head = GENESIS
    accepted: list[Break] = field(default_factory=list)  # breaks maintenance accepted
    damaged: str | None = None  # SQLite found the file damaged: where and how
    segments: int = 0  # archive segments whose files were checked
    pruned: list[str] = field(default_factory=list)  # pruned ranges, each with why it was allowed

    @property
    def problems(self) -> list[str]:
        """Every break, as text."""
        return [b.text for b in self.breaks]

    @property
    def ok(self) -> bool:
        """True when the chain is intact."""
        return not self.breaks

    def add(self, pos: int, text: str) -> None:
        """Record a break at ``pos``."""
        self.breaks.append(Break(pos, text))


def connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """A connection with the journal's settings (WAL, synchronous=FULL, explicit transactions).

    Opening an existing journal writes nothing, and a ``read_only`` connection cannot write at
    all (``query_only``): the daemon's connection is the journal's only writer. SQLite before
    3.51.3 (Debian 12 ships 3.40.1) has a race in WAL mode that can lose a committed write when
    one connection's commit resets the WAL while another connection starts a checkpoint
    (https://sqlite.org/wal.html#walresetbug); with one writing connection, every commit and
    every automatic checkpoint come from that connection one after the other, and the race has
    no second party (docs/operations.md, "The journal").
    """
    # sqlite3 waits 5 s on a lock by default, as long as the busy_timeout set below
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    # Damaged text reads back as what it is (U+FFFD where it is not UTF-8) rather than ending
    # the read: the row then fails its hash, and the rest of the journal stays readable.
    conn.text_factory = _lenient
    try:
        # A new journal gives the pages its archived rows leave back to the file system
        # (retention counts the file's size): set before its first page is written. Setting it
        # on an existing journal, even to the value it has, is a write transaction: never done.
        if not read_only and conn.execute("PRAGMA page_count").fetchone()[0] == 0:
            conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        # a no-op on a journal already in WAL mode (the mode is the file's, read from it)
        conn.execute("PRAGMA journal_mode=WAL")
        # the WAL shrinks back to this after a checkpoint (an archive's large delete grew it)
        conn.execute("PRAGMA journal_size_limit=8388608")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA foreign_keys=OFF")
        if read_only:
            conn.execute("PRAGMA query_only=ON")
    except BaseException:
        # the error's traceback would otherwise keep the file open for as long as it is kept
        conn.close()
        raise
    return conn


def next_key(conn: sqlite3.Connection, table: str) -> int:
    # The key an AUTOINCREMENT insert would take; computed first because the hash covers it.
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
    return (int(row[0]) if row else 0) + 1


def insert_row(
    conn: sqlite3.Connection, table: str, pos: int, head: str, content: tuple[Any, ...]
) -> tuple[int, str]:
    pos += 1
    digest = row_hash(head, table, content)
    columns = (*CHAINED[table], "pos", "prev", "hash")
    marks = ", ".join("?" * len(columns))
    conn.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",  # noqa: S608
        (*content, pos, head, digest),
    )
    return pos, digest


class _Row(NamedTuple):
    pos: int
    table: str
    content: list[Any]
    prev: str
    hash: str


def _readable(value: Any) -> bool:
    return value is None or isinstance(value, int | float | str)


def _rows(conn: sqlite3.Connection, table: str, after: int, report: VerifyReport) -> Iterator[_Row]:
    """The chained rows of ``table`` after position ``after``, in order of position.

    A row whose position, links or content SQLite no longer gives as the journal wrote them
    (a damaged record reads back as another type) is reported and left out of the walk.
    """
    columns = CHAINED[table]
    select = ", ".join((*columns, "pos", "prev", "hash"))
    cursor = conn.execute(
        f"SELECT {select} FROM {table} WHERE pos > ? ORDER BY pos",  # noqa: S608
        (after,),
    )
    for row in cursor:
        *content, pos, prev, digest = row
        if not (
            isinstance(pos, int)
            and isinstance(prev, str)
            and isinstance(digest, str)
            and all(_readable(v) for v in content)
        ):
            key = content[0] if content and _readable(content[0]) else "?"
            where = f"position {pos}" if isinstance(pos, int) else "no readable position"
            report.add(
                pos if isinstance(pos, int) else after + 1,
                f"{table} {KEY[table]} {key} ({where}): the row is damaged (unreadable values)",
            )
            continue
        yield _Row(pos, table, content, prev, digest)


def _lenient(data: bytes) -> str:
    # Damaged text reads back as what it is (with U+FFFD where it is not UTF-8): the row then
    # fails its hash instead of ending the walk with a decoding error.
    return data.decode("utf-8", "replace")


def verify_chain(
    conn: sqlite3.Connection,
    since: Head = GENESIS,
    *,
    archived: Mapping[str, int] | None = None,
    after_archive: bool = False,
    report: VerifyReport | None = None,
) -> VerifyReport:
    """Walk the hash chain after ``since`` (from the genesis: every row); report every break.

    ``archived`` gives each table's highest key in archive segments. With ``after_archive``,
    ``since`` is the last archived row: it is not in the database, and no live row may sit at
    or before it.

    The whole walk is one read transaction: on a journal the daemon is writing, the rows it
    commits meanwhile are either all seen or not at all, so a live journal verifies as it is.
    The row at ``since`` must still carry the hash it had when it was verified (a rewritten
    chain does not). SQLite's own verdict that the file is damaged is reported as the last
    break (``tablectl journal salvage`` keeps the intact rows).
    """
    if report is None:
        report = VerifyReport(since=since)
    factory = conn.text_factory
    conn.text_factory = _lenient
    try:
        with read_transaction(conn):
            _walk(conn, since, report, archived or {}, after_archive=after_archive)
    except UNREADABLE as exc:
        if not unreadable(exc):
            raise
        report.damaged = f"the file is damaged after position {report.head.pos} ({one_line(exc)})"
        report.add(report.head.pos + 1, report.damaged)
    finally:
        conn.text_factory = factory
    return report


@contextlib.contextmanager
def read_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One read of the database as it is when the first statement inside runs: what another
    connection commits meanwhile is not seen half. Inside a transaction already, it adds
    nothing."""
    began = not conn.in_transaction
    if began:
        conn.execute("BEGIN")
    try:
        yield
    finally:
        if began and conn.in_transaction:
            # a read: nothing to keep, and an error of the reader is the one to report
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")


def _walk(
    conn: sqlite3.Connection,
    since: Head,
    report: VerifyReport,
    archived: Mapping[str, int],
    *,
    after_archive: bool,
) -> None:
    if after_archive:
        for table in CHAINED:
            row = conn.execute(
                f"SELECT MAX(pos) FROM {table} WHERE pos <= ?",  # noqa: S608
                (since.pos,),
            ).fetchone()
            if row[0] is not None:
                report.add(
                    int(row[0]),
                    f"{table}: a live row at position {row[0]}, which an archive segment "
                    "holds (a row in two places)",
                )
    elif since.pos > 0:
        anchor = [
            row
            for table in CHAINED
            for row in conn.execute(
                f"SELECT hash FROM {table} WHERE pos = ?",  # noqa: S608
                (since.pos,),
            )
        ]
        if [r[0] for r in anchor] != [since.hash]:
            report.add(
                since.pos,
                f"the row at position {since.pos}, verified before, was changed or removed "
                "(the chain before it was rewritten)",
            )
    report.head = since
    expected_prev = since.hash
    expected_pos = since.pos + 1
    streams = [_rows(conn, table, since.pos, report) for table in CHAINED]
    for row in heapq.merge(*streams, key=lambda r: r.pos):
        report.rows += 1
        where = f"{row.table} {KEY[row.table]} {row.content[0]} (position {row.pos})"
        if row.pos != expected_pos:
            if row.pos > expected_pos:
                report.add(
                    expected_pos, f"{where}: position {expected_pos} is missing (a row was deleted)"
                )
            else:
                report.add(row.pos, f"{where}: position used twice")
        expected_pos = row.pos + 1
        if row.prev != expected_prev:
            report.add(row.pos, f"{where}: does not follow the previous row")
        if row_hash(row.prev, row.table, row.content) != row.hash:
            report.add(row.pos, f"{where}: content does not match its hash (edited or damaged)")
        expected_prev = row.hash
        report.head = Head(row.pos, row.hash)
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    head_pos, head_hash = meta.get("head_pos", "0"), meta.get("head_hash", GENESIS_HASH)
    last = report.head
    if str(last.pos) != head_pos or last.hash != head_hash:
        # whether the file holds a row the walk did not reach tells a row deleted from one
        # that is there but out of the chain's order
        highest = max(
            (
                conn.execute(f"SELECT MAX(pos) FROM {table}").fetchone()[0] or 0  # noqa: S608
                for table in CHAINED
            ),
            default=0,
        )
        report.add(
            last.pos + 1,
            f"the chain ends at position {last.pos} but the journal head is at {head_pos}: "
            "rows were deleted from the end, or added outside the journal "
            f"(the highest position in the file is {highest})",
        )
    for table in CHAINED:
        row = conn.execute(f"SELECT MAX({KEY[table]}) FROM {table}").fetchone()  # noqa: S608
        issued = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
        top = row[0] if isinstance(row[0], int) else 0
        top = max(top, archived.get(table, 0))
        if issued and isinstance(issued[0], int) and top < issued[0]:
            report.add(
                last.pos + 1,
                f"{table}: key {issued[0]} was issued but the last row is {top} "
                "(rows deleted from the end)",
            )
