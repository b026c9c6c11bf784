"""``tablectl journal salvage``: every intact row of a damaged journal, into a new file.

A journal SQLite calls damaged (a truncated file, a garbage header, flipped bytes) still holds
rows that are what the table wrote. Salvage reads the damaged file (a copy of it, the original
is never written) row by row where a whole table cannot be read, keeps each chained row whose
content still matches its hash, and writes them, with their positions and hashes, into a new
journal. The gaps stay gaps: the new journal's chain shows them, so the daemon started on it
raises the integrity alarm and holds the table until maintenance accepts it
(docs/operations.md, "A damaged journal"). Event and input numbers already given are never
given again.

What is kept: the meta table (or, when it is lost, the table and its genesis from the config),
the epochs, every intact input, event, inbox and dispatch row, the outbox rows of kept events,
and the archive segments whose files are intact (copied beside the new journal, with their
records; a damaged segment is named and its rows counted as lost: the new journal's chain then
has a gap there). Snapshots are not (they are a shortcut the daemon rebuilds).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.shell.chain import (
    CHAINED,
    GENESIS_HASH,
    KEY,
    SCHEMA,
    SCHEMA_VERSION,
    UNREADABLE,
    JournalError,
    connect,
    one_line,
    row_hash,
)
from controller.shell.journal_segments import segment_records
from controller.shell.segments import PRUNED, Segment, check, directory_of

CHUNK = 512  # keys read in one statement; a chunk that fails is read key by key
SHOWN = 20  # lost ranges named in the report (the rest are counted)


class SalvageError(JournalError):
    """Nothing could be salvaged (the reason says why)."""


@dataclass
class Row:
    """A chained row as read back: its table, key, content and place in the chain."""

    table: str
    key: int
    content: list[Any]
    pos: int
    prev: str
    hash: str


@dataclass
class SalvageReport:
    """What was kept, in which chain segments, and what could not be kept."""

    source: Path
    target: Path
    kept: dict[str, int] = field(default_factory=dict)
    segments: list[tuple[int, int]] = field(default_factory=list)
    lost: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # table -> (key, why)
    notes: list[str] = field(default_factory=list)
    damaged_segments: dict[str, str] = field(default_factory=dict)  # name -> the problem

    @property
    def complete(self) -> bool:
        """True when every row was kept and the chain is one segment."""
        return not any(self.lost.values()) and len(self.segments) <= 1

    def lines(self) -> list[str]:
        """The report, a line each: what was kept, then what was not."""
        total = sum(self.kept.values())
        per = ", ".join(f"{table} {count}" for table, count in self.kept.items())
        spans = ", ".join(f"{a}-{b}" for a, b in self.segments[:SHOWN]) or "none"
        if len(self.segments) > SHOWN:
            spans += f" and {len(self.segments) - SHOWN} more"
        out = [
            f"{self.target}: kept {total} rows ({per}) in {len(self.segments)} chain "
            f"segment(s), positions {spans}"
        ]
        ranges = [
            f"{table} {_span(keys)}: {why}"
            for table, lost in self.lost.items()
            for why, keys in _by_reason(lost)
        ]
        for text in ranges[:SHOWN]:
            out.append(f"could not keep {text}")
        if len(ranges) > SHOWN:
            out.append(f"could not keep {len(ranges) - SHOWN} more ranges of rows")
        for problem in self.damaged_segments.values():
            out.append(f"could not keep {problem}")
        out += self.notes
        return out


def salvage(source: Path, target: Path, table: Mapping[str, Any] | None = None) -> SalvageReport:
    """Copy every intact row of the journal at ``source`` into a new journal at ``target``.

    ``table`` is ``{"table_id", "genesis"}`` from the config, used when the journal's own meta
    table cannot be read.
    """
    if not source.is_file():
        raise SalvageError(f"no journal at {source}")
    if target.exists():
        raise SalvageError(f"{target} exists: salvage writes a new file, give another --out")
    report = SalvageReport(source, target)
    with tempfile.TemporaryDirectory(prefix="salvage-") as scratch:
        copy = Path(scratch) / "damaged.sqlite"
        shutil.copyfile(source, copy)
        for suffix in ("-wal",):  # committed transactions not yet in the file
            companion = source.with_name(source.name + suffix)
            if companion.is_file():
                shutil.copyfile(companion, copy.with_name(copy.name + suffix))
        try:
            conn = sqlite3.connect(copy, isolation_level=None)
        except UNREADABLE as exc:
            raise SalvageError(f"{source} cannot be opened at all ({one_line(exc)})") from None
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        try:
            _salvage(conn, report, table)
        finally:
            conn.close()
    return report


def _salvage(
    conn: sqlite3.Connection, report: SalvageReport, table: Mapping[str, Any] | None
) -> None:
    meta = _meta(conn, report)
    if "table_id" not in meta or "genesis" not in meta:
        if table is None:
            raise SalvageError(
                f"{report.source}: the journal's meta table (its table and genesis) is lost; "
                "give --config with the table's config"
            )
        meta.setdefault("table_id", str(table["table_id"]))
        meta.setdefault("genesis", json.dumps(dict(table["genesis"]), sort_keys=True))
        report.notes.append("the table and its genesis were taken from the config")
    issued = _issued(conn)
    segments = _archive_segments(conn, report)
    archived_top = {
        name: max((s.keys.get(name, (0, 0))[1] for s in segments), default=0) for name in CHAINED
    }
    rows: list[Row] = []
    for name in CHAINED:
        seen: set[int] = set(range(1, archived_top[name] + 1))  # in segments (or lost with one)
        kept = 0
        for row, why in _rows(conn, name, issued.get(name, 0)):
            seen.add(row.key)
            if why is not None:
                report.lost.setdefault(name, []).append((row.key, why))
                continue
            rows.append(row)
            kept += 1
        report.kept[name] = kept
        # every key up to the last one given was a row of this table (AUTOINCREMENT)
        missing = set(range(1, issued.get(name, 0) + 1)) - seen
        report.lost.setdefault(name, []).extend((key, "missing") for key in missing)
    rows.sort(key=lambda r: r.pos)
    report.segments = _segments(rows)
    epochs = _epochs(conn, meta)
    outbox = _outbox(conn, {r.key for r in rows if r.table == "events"}, report)
    head_pos = max([int(meta.get("head_pos", "0") or 0), *(r.pos for r in rows)], default=0)
    meta.update(
        head_pos=str(head_pos),
        head_hash=rows[-1].hash if rows else GENESIS_HASH,
        schema=str(SCHEMA_VERSION),
        salvaged=json.dumps(
            {
                "from": str(report.source),
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "kept": sum(report.kept.values()),
                "lost": sum(len(v) for v in report.lost.values()),
                "segments": len(report.segments),
            }
        ),
    )
    for gone in ("verified_pos", "verified_hash", "unchecked_from"):
        meta.pop(gone, None)  # the new file is verified from its first row at the next start
    meta.setdefault("epoch", epochs[-1][0])
    meta.setdefault("origin", epochs[0][0])
    kept_segments = [s for s in segments if s.name not in report.damaged_segments]
    _write(report.target, meta, epochs, rows, outbox, issued, kept_segments, report.source)
    report.notes.append("snapshots are not kept: the next start replays from the genesis")


def _archive_segments(conn: sqlite3.Connection, report: SalvageReport) -> list[Segment]:
    """The journal's archive segments: each local one's file is checked; a damaged one is not
    kept and its rows are named as lost (the others, and pruned records, are kept)."""
    try:
        found = segment_records(conn)
    except (*UNREADABLE, KeyError, ValueError, TypeError) as exc:
        report.notes.append(f"the archive segments' records could not be read ({one_line(exc)})")
        return []
    directory = directory_of(report.source)
    for segment in found:
        if segment.state == PRUNED:
            continue
        problems = check(directory, segment)
        if not problems:
            continue
        report.damaged_segments[segment.name] = problems[0]
        for name, (first, last) in segment.keys.items():
            report.lost.setdefault(name, []).extend(
                (key, f"in damaged segment {segment.name}") for key in range(first, last + 1)
            )
    return found


def _meta(conn: sqlite3.Connection, report: SalvageReport) -> dict[str, str]:
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
    except UNREADABLE as exc:
        report.notes.append(f"the meta table could not be read ({one_line(exc)})")
        return {}
    meta = {str(k): v for k, v in rows if isinstance(k, str) and isinstance(v, str)}
    try:
        json.loads(meta.get("genesis", "{}"))
    except ValueError:
        report.notes.append("the journal's genesis is damaged")
        meta.pop("genesis", None)
    return meta


def _issued(conn: sqlite3.Connection) -> dict[str, int]:
    """The highest key each table ever gave (never given again)."""
    issued: dict[str, int] = {}
    try:
        for name, seq in conn.execute("SELECT name, seq FROM sqlite_sequence"):
            if isinstance(name, str) and isinstance(seq, int):
                issued[name] = seq
    except UNREADABLE:
        pass
    for name in CHAINED:
        try:
            top = conn.execute(f"SELECT MAX({KEY[name]}) FROM {name}").fetchone()[0]  # noqa: S608
        except UNREADABLE:
            continue
        if isinstance(top, int):
            issued[name] = max(issued.get(name, 0), top)
    return issued


def _rows(conn: sqlite3.Connection, table: str, issued: int) -> Iterator[tuple[Row, str | None]]:
    """Every row of ``table`` up to key ``issued``: (row, None) when intact, (row or a stub,
    why) when not; a chunk SQLite cannot read is read again key by key."""
    columns = (*CHAINED[table], "pos", "prev", "hash")
    select = f"SELECT {', '.join(columns)} FROM {table} WHERE {KEY[table]} BETWEEN ? AND ?"  # noqa: S608
    low = 1
    empty = 0
    while low <= issued or (issued == 0 and empty < 8):
        high = low + CHUNK - 1
        try:
            found = conn.execute(select + f" ORDER BY {KEY[table]}", (low, high)).fetchall()
        except UNREADABLE:
            found = []
            for key in range(low, high + 1):
                try:
                    found += conn.execute(select, (key, key)).fetchall()
                except UNREADABLE as exc:
                    yield Row(table, key, [], 0, "", ""), f"unreadable ({one_line(exc)})"
        empty = 0 if found else empty + 1
        for values in found:
            yield _checked(table, values)
        low = high + 1


def _checked(table: str, values: tuple[Any, ...]) -> tuple[Row, str | None]:
    *content, pos, prev, digest = values
    key = content[0] if isinstance(content[0], int) else 0
    row = Row(table, key, content, pos if isinstance(pos, int) else 0, str(prev), str(digest))
    readable = all(v is None or isinstance(v, int | float | str) for v in content)
    if not (
        readable and isinstance(pos, int) and isinstance(prev, str) and isinstance(digest, str)
    ):
        return row, "damaged values"
    if row_hash(prev, table, content) != digest:
        return row, "content does not match its hash"
    return row, None


def _segments(rows: list[Row]) -> list[tuple[int, int]]:
    """Runs of rows that follow each other in the chain: (first position, last position)."""
    segments: list[tuple[int, int]] = []
    previous: Row | None = None
    for row in rows:
        follows = previous is not None and row.pos == previous.pos + 1 and row.prev == previous.hash
        if follows and segments:
            segments[-1] = (segments[-1][0], row.pos)
        else:
            segments.append((row.pos, row.pos))
        previous = row
    return segments


def _epochs(conn: sqlite3.Connection, meta: Mapping[str, str]) -> list[tuple[str, int, str, str]]:
    try:
        rows = conn.execute(
            "SELECT epoch, first_seq, started, reason FROM epochs ORDER BY first_seq"
        ).fetchall()
    except UNREADABLE:
        rows = []
    good = [tuple(r) for r in rows if isinstance(r[0], str) and isinstance(r[1], int)]
    if good:
        return [(str(e), int(f), str(s), str(r)) for e, f, s, r in good]
    epoch = meta.get("epoch") or f"salvaged-{int(time.time())}"
    return [(epoch, 1, meta.get("created", ""), "the journal began")]


def _outbox(
    conn: sqlite3.Connection, events: set[int], report: SalvageReport
) -> list[tuple[int, str, int, int]]:
    try:
        rows = conn.execute(
            "SELECT seq, stream, live, created_ns FROM outbox ORDER BY id"
        ).fetchall()
    except UNREADABLE as exc:
        report.notes.append(
            f"the outbox could not be read ({one_line(exc)}): events not yet published may "
            "never be; the pit asks for missing ones with its replay request"
        )
        return []
    return [
        (int(r[0]), str(r[1]), int(r[2]), int(r[3]))
        for r in rows
        if r[0] in events
        and isinstance(r[1], str)
        and isinstance(r[2], int)
        and isinstance(r[3], int)
    ]


def _write(
    target: Path,
    meta: Mapping[str, str],
    epochs: list[tuple[str, int, str, str]],
    rows: list[Row],
    outbox: list[tuple[int, str, int, int]],
    issued: Mapping[str, int],
    segments: list[Segment],
    source: Path,
) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    for segment in segments:  # the files first: a record never names a file not there
        if segment.state != PRUNED:
            directory = directory_of(target)
            directory.mkdir(exist_ok=True)
            shutil.copyfile(directory_of(source) / segment.name, directory / segment.name)
            with open(directory / segment.name, "rb+") as copied:
                os.fsync(copied.fileno())
    conn = connect(target)
    try:
        conn.executescript(SCHEMA)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO segments VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    s.name, s.first_pos, s.last_pos, s.prev_hash, s.last_hash, s.rows, s.bytes,
                    s.sha256, s.created, s.state, json.dumps(s.header, separators=(",", ":")),
                    s.reason,
                )
                for s in segments
            ],
        )  # fmt: skip
        conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        conn.executemany("INSERT INTO epochs VALUES (?, ?, ?, ?)", epochs)
        for row in rows:
            columns = (*CHAINED[row.table], "pos", "prev", "hash")
            marks = ", ".join("?" * len(columns))
            conn.execute(
                f"INSERT INTO {row.table} ({', '.join(columns)}) VALUES ({marks})",  # noqa: S608
                (*row.content, row.pos, row.prev, row.hash),
            )
        conn.executemany(
            "INSERT INTO outbox (seq, stream, live, created_ns) VALUES (?, ?, ?, ?)", outbox
        )
        for name in CHAINED:
            top = issued.get(name, 0)
            if (
                top
                and conn.execute(
                    "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?", (top, name)
                ).rowcount
                == 0
            ):
                conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, top))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except BaseException:
        conn.close()
        target.unlink(missing_ok=True)
        raise
    conn.close()


def _by_reason(lost: list[tuple[int, str]]) -> Iterator[tuple[str, list[int]]]:
    """Consecutive keys lost for the same reason, grouped."""
    group: list[int] = []
    reason = ""
    for key, why in sorted(lost):
        if group and (why != reason or key != group[-1] + 1):
            yield reason, group
            group = []
        reason = why
        group.append(key)
    if group:
        yield reason, group


def _span(keys: list[int]) -> str:
    return str(keys[0]) if len(keys) == 1 else f"{keys[0]}-{keys[-1]}"
