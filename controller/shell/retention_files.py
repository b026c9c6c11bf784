"""The file work of a retention round, off the journal's writer thread: reading the rows a segment
will hold (on a connection of their own, checked against their hashes) with the segment's header,
and copying a segment to the archive directory (controller/shell/retention.py runs the round;
controller/shell/segments.py writes and reads the files).
"""

from __future__ import annotations

import bisect
import heapq
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from controller.shell.chain import CHAINED, Head, connect, row_hash
from controller.shell.journal import Epoch
from controller.shell.segments import (
    FORMAT,
    SegmentRow,
    file_sha256,
    fsync_directory,
    segment_name,
)
from controller.table.event_types import JournalAccepted


class ArchiveError(RuntimeError):
    """A segment could not be written as planned (the reason says why); nothing moved."""


def read_range(
    path: Path, prev: Head, last: int, table_id: str, epochs: list[Epoch]
) -> tuple[list[SegmentRow], dict[str, Any]]:
    """The chained rows after ``prev`` up to ``last`` (on a connection of their own), checked
    against their hashes, and the header of the segment that will hold them."""
    conn = connect(path, read_only=True)
    try:
        conn.execute("BEGIN")
        rows = list(_merged(conn, prev.pos, last))
        conn.execute("ROLLBACK")
    finally:
        conn.close()
    expected_pos, expected_prev = prev.pos + 1, prev.hash
    for row in rows:
        if row.pos != expected_pos or row.prev != expected_prev:
            raise ArchiveError(f"the chain breaks at position {expected_pos}: nothing archived")
        if row_hash(row.prev, row.table, row.content) != row.hash:
            raise ArchiveError(f"the row at position {row.pos} does not match its hash")
        expected_pos, expected_prev = row.pos + 1, row.hash
    if expected_pos != last + 1:
        raise ArchiveError(f"positions {expected_pos}-{last} are missing: nothing archived")
    return rows, _header(rows, prev, table_id, epochs)


def _merged(conn: Any, after: int, last: int) -> Iterator[SegmentRow]:
    def rows(table: str) -> Iterator[SegmentRow]:
        columns = ", ".join((*CHAINED[table], "pos", "prev", "hash"))
        for *content, pos, prev, digest in conn.execute(
            f"SELECT {columns} FROM {table} WHERE pos > ? AND pos <= ? ORDER BY pos",  # noqa: S608
            (after, last),
        ):
            yield SegmentRow(pos, table, content, prev, digest)

    return heapq.merge(*(rows(t) for t in CHAINED), key=lambda r: r.pos)


def _header(
    rows: list[SegmentRow], prev: Head, table_id: str, epochs: list[Epoch]
) -> dict[str, Any]:
    keys: dict[str, list[int]] = {}
    spans: dict[str, list[int]] = {}
    hands: list[str] = []
    times: list[str] = []
    accepted: dict[str, int] = {}
    firsts = [e.first_seq for e in epochs]
    for row in rows:
        key = int(row.content[0])
        span = keys.setdefault(row.table, [key, key])
        span[1] = key
        if row.table == "inputs":
            times.append(str(row.content[1]))
        elif row.table == "events":
            epoch = epochs[max(0, bisect.bisect_right(firsts, key) - 1)]
            number = key - epoch.first_seq + 1
            spans.setdefault(epoch.name, [number, number])[1] = number
            hand = row.content[3]
            if hand is not None and (not hands or hands[-1] != hand) and hand not in hands[-3:]:
                hands.append(str(hand))
            if row.content[2] == JournalAccepted.TYPE:
                _accepted(str(row.content[4]), accepted)
    first, last = rows[0].pos, rows[-1].pos
    return {
        "format": FORMAT,
        "name": segment_name(first, last),
        "table_id": table_id,
        "first_pos": first,
        "last_pos": last,
        "prev_hash": prev.hash,
        "last_hash": rows[-1].hash,
        "rows": len(rows),
        "epochs": spans,
        "hands": hands,
        "first_ts": min(times) if times else None,
        "last_ts": max(times) if times else None,
        "keys": keys,
        "accepted": accepted,
    }


def _accepted(body: str, into: dict[str, int]) -> None:
    try:
        data = json.loads(body)["data"]
    except (ValueError, KeyError, TypeError):
        return
    for name in ("through", "input_through"):
        value = data.get(name) if isinstance(data, dict) else None
        if isinstance(value, int):
            into[name] = max(into.get(name, 0), value)


def copy_verified(source: Path, archive: Path, sha256: str) -> Path:
    """Copy a segment into ``archive`` (temporary name, fsync, rename, directory fsync) and
    compare the copy's SHA-256; :class:`ArchiveError` when it differs."""
    if not archive.is_dir():
        raise ArchiveError(f"the archive directory {archive} is not there (not mounted?)")
    final = archive / source.name
    if final.is_file() and file_sha256(final) == sha256:
        return final  # copied before a crash kept the state from being recorded
    temporary = archive / f".{source.name}.tmp"
    shutil.copyfile(source, temporary)
    with open(temporary, "rb+") as copied:
        os.fsync(copied.fileno())
    os.replace(temporary, final)
    fsync_directory(archive)
    if file_sha256(final) != sha256:
        raise ArchiveError(f"the copy {final} does not read back as written")
    return final
