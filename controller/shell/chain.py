"""The journal's tables and its hash chain: schema, row hashes, inserts, verification.

Every row of the chained tables carries a position in one chain over the whole journal and the
SHA-256 of the previous row's hash and its own content. :func:`verify_chain` walks the chain and
names every row that was edited, inserted or deleted.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    seq INTEGER NOT NULL,
    stream TEXT NOT NULL,
    live INTEGER NOT NULL,
    created_ns INTEGER NOT NULL
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


@dataclass
class VerifyReport:
    """The result of :meth:`Journal.verify`."""

    rows: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the chain is intact."""
        return not self.problems


def connect(path: Path) -> sqlite3.Connection:
    """A connection with the journal's settings (WAL, synchronous=FULL, explicit transactions)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=5000")
    conn.execute("PRAGMA foreign_keys=OFF")
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


def verify_chain(conn: sqlite3.Connection) -> VerifyReport:
    """Walk the hash chain over every chained row of a journal; report every break."""
    report = VerifyReport()
    rows: list[tuple[int, str, list[Any], str, str]] = []
    for table, columns in CHAINED.items():
        select = ", ".join((*columns, "pos", "prev", "hash"))
        for row in conn.execute(f"SELECT {select} FROM {table}"):  # noqa: S608
            *content, pos, prev, digest = row
            rows.append((pos, table, content, prev, digest))
    rows.sort(key=lambda r: r[0])
    report.rows = len(rows)
    expected_prev = GENESIS_HASH
    expected_pos = 1
    for pos, table, content, prev, digest in rows:
        where = f"{table} {KEY[table]} {content[0]} (position {pos})"
        if pos != expected_pos:
            report.problems.append(
                f"{where}: position {expected_pos} is missing (a row was deleted)"
                if pos > expected_pos
                else f"{where}: position used twice"
            )
        expected_pos = pos + 1
        if prev != expected_prev:
            report.problems.append(f"{where}: does not follow the previous row")
        if row_hash(prev, table, content) != digest:
            report.problems.append(f"{where}: content does not match its hash (edited)")
        expected_prev = digest
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    head_pos, head_hash = int(meta.get("head_pos", "0")), meta.get("head_hash", GENESIS_HASH)
    last_pos = rows[-1][0] if rows else 0
    if head_pos != last_pos or head_hash != expected_prev:
        report.problems.append(
            f"the chain ends at position {last_pos} but the journal head is at {head_pos}: "
            "rows were deleted from the end, or added outside the journal"
        )
    for table in CHAINED:
        row = conn.execute(
            f"SELECT MAX({KEY[table]}) FROM {table}"  # noqa: S608
        ).fetchone()
        issued = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
        if issued and (row[0] or 0) < issued[0]:
            report.problems.append(
                f"{table}: key {issued[0]} was issued but the last row is {row[0] or 0} "
                "(rows deleted from the end)"
            )
    return report
