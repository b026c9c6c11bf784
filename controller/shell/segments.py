"""Archive segments: closed hands moved out of the live journal into immutable files.

A segment holds a run of consecutive chained rows (inputs, events, inbox and dispatch rows, in
chain order) that left the live database. Its file, ``{first_pos:012d}-{last_pos:012d}.seg`` in
the journal's segment directory (``journal.sqlite`` → ``journal.segments/``), is gzip-compressed
JSON lines (docs/operations.md, "Retention"):

* the first line is the header: ``format`` (``tablectl.segment/1``), ``table_id``, the first
  and last chain positions, ``prev_hash`` (the chain hash before its first row) and
  ``last_hash`` (the hash of its last row), ``rows``, ``epochs`` (each epoch's first and last
  event number in the segment), ``hands`` (the hand ids), ``first_ts``/``last_ts`` (the first
  and last input's time), ``keys`` (each table's first and last key) and ``accepted`` (the
  furthest position and input maintenance accepted in a ``journal.accepted`` event in it);
* every other line is one row: ``[pos, table, content, prev, hash]`` with the content as the
  chain hashes it (:func:`controller.shell.chain.row_hash`).

The live database's ``segments`` table records each segment (its header, the file's size and
SHA-256, its state: ``local``, ``archived`` once a verified copy is in the archive directory,
``pruned`` once the file is gone, with the reason it was allowed). A pruned segment's record
stays, so the chain is still checked across the gap; the retention round then compacts the
records of consecutive pruned segments into one record of the run
(controller/shell/pruned_runs.py).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import itertools
import json
import os
import zlib
from collections.abc import Callable, Collection, Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple

from controller.shell.chain import row_hash

FORMAT = "tablectl.segment/1"
LOCAL, ARCHIVED, PRUNED = "local", "archived", "pruned"
STATES = (LOCAL, ARCHIVED, PRUNED)
SUFFIX = ".seg"


class SegmentError(RuntimeError):
    """A segment file cannot be read as the table wrote it (the reason says why)."""


class SegmentRow(NamedTuple):
    """One chained row as a segment holds it."""

    pos: int
    table: str
    content: list[Any]
    prev: str
    hash: str


@dataclass(frozen=True)
class Segment:
    """A segment as the live database records it."""

    name: str
    first_pos: int
    last_pos: int
    prev_hash: str
    last_hash: str
    rows: int
    bytes: int
    sha256: str
    created: str
    state: str
    header: Mapping[str, Any]
    reason: str | None = None

    @property
    def epochs(self) -> dict[str, list[int]]:
        """Each epoch's first and last event number in the segment."""
        return dict(self.header.get("epochs", {}))

    @property
    def keys(self) -> dict[str, list[int]]:
        """Each table's first and last key in the segment."""
        return dict(self.header.get("keys", {}))

    @property
    def count(self) -> int:
        """How many segments the record stands for (a run of pruned ones: more than one)."""
        count = self.header.get("segments", 1)
        return count if isinstance(count, int) and count > 0 else 1

    def span(self) -> str:
        """Its positions, as text."""
        return f"positions {self.first_pos}-{self.last_pos}"


def directory_of(journal: Path) -> Path:
    """Where the segments of the journal at ``journal`` live."""
    return journal.with_name(journal.stem + ".segments")


def segment_name(first_pos: int, last_pos: int) -> str:
    """The file name of the segment of positions ``first_pos``..``last_pos``."""
    return f"{first_pos:012d}-{last_pos:012d}{SUFFIX}"


class _Hashing:
    """A binary file that hashes what is written to it (the segment's SHA-256, in one pass)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(
    directory: Path, header: Mapping[str, Any], rows: list[SegmentRow]
) -> tuple[Path, int, str]:
    """Write a segment to a temporary file and fsync it; ``(temporary path, bytes, sha256)``.

    :func:`publish` renames it into place.
    """
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{header['name']}.tmp"
    with open(temporary, "wb") as raw:
        hashing = _Hashing(raw)
        # mtime 0: the same rows give the same bytes
        with gzip.GzipFile(fileobj=hashing, mode="wb", compresslevel=6, mtime=0) as out:
            out.write(_line(header))
            for row in rows:
                out.write(_line(list(row)))
        raw.flush()
        os.fsync(raw.fileno())
    return temporary, hashing.size, hashing.digest.hexdigest()


def publish(temporary: Path, name: str) -> Path:
    """Rename a written segment into place and make the rename durable."""
    final = temporary.with_name(name)
    os.replace(temporary, final)
    fsync_directory(temporary.parent)
    return final


def _line(value: Any) -> bytes:
    return (json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _open(path: Path) -> tuple[IO[str], dict[str, Any]]:
    """A segment file opened, and its header read (:class:`SegmentError`: it cannot be)."""
    try:
        source = gzip.open(path, "rt", encoding="utf-8")  # noqa: SIM115 (the caller closes it)
    except OSError as exc:
        raise SegmentError(f"unreadable ({exc})") from None
    try:
        header = json.loads(source.readline())
    except (OSError, EOFError, zlib.error, ValueError) as exc:
        source.close()
        raise SegmentError(f"unreadable ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        source.close()
        raise SegmentError(f"not a {FORMAT} file")
    return source, header


def read_header(path: Path) -> dict[str, Any]:
    """The header of a segment file (:class:`SegmentError` when it cannot be read)."""
    source, header = _open(path)
    source.close()
    return header


def read_rows(path: Path) -> tuple[dict[str, Any], Generator[SegmentRow, None, None]]:
    """The header and rows of a segment file (:class:`SegmentError` when it cannot be read)."""
    source, header = _open(path)

    def rows() -> Generator[SegmentRow, None, None]:
        with source:
            try:
                for line in source:
                    pos, table, content, prev, digest = json.loads(line)
                    yield SegmentRow(pos, table, content, prev, digest)
            except (OSError, EOFError, zlib.error, ValueError, TypeError) as exc:
                raise SegmentError(f"unreadable ({exc})") from None

    return header, rows()


def _chain_problem(
    rows: Iterator[SegmentRow], first_pos: int, prev_hash: str, count: int, last_hash: str
) -> str | None:
    """What is wrong with a segment's rows (None: they chain from ``prev_hash`` at
    ``first_pos`` to ``last_hash``, ``count`` of them)."""
    expected_pos, expected_prev, seen = first_pos, prev_hash, 0
    for seen, row in enumerate(rows, 1):  # noqa: B007 (counted after the loop)
        if row.pos != expected_pos:
            return f"position {expected_pos} is missing or out of order"
        if row.prev != expected_prev or row_hash(row.prev, row.table, row.content) != row.hash:
            return f"the row at position {row.pos} does not match its hash"
        expected_pos, expected_prev = row.pos + 1, row.hash
    if seen != count or expected_prev != last_hash:
        return f"ends at position {expected_pos - 1}, not as recorded"
    return None


def check(directory: Path, segment: Segment) -> list[str]:
    """Every problem of one local segment's file, a line each ("": none): its SHA-256 against
    the record, its rows' chain from ``prev_hash`` to ``last_hash``."""
    where = f"segment {segment.name} ({segment.span()})"
    path = directory / segment.name
    if not path.is_file():
        return [f"{where}: the file is missing (deleted or moved)"]
    if file_sha256(path) != segment.sha256:
        return [f"{where}: the file's sha256 does not match its record (changed or damaged)"]
    problems: list[str] = []
    try:
        header, rows = read_rows(path)
        if header.get("first_pos") != segment.first_pos or header.get("prev_hash") != (
            segment.prev_hash
        ):
            problems.append(f"{where}: its header is another segment's (files swapped)")
        problem = _chain_problem(
            rows, segment.first_pos, segment.prev_hash, segment.rows, segment.last_hash
        )
        if problem is not None:
            problems.append(f"{where}: {problem}")
    except SegmentError as exc:
        problems.append(f"{where}: {exc}")
    return problems


def verified_header(path: Path) -> dict[str, Any]:
    """The header of a segment file whose rows chain as its header says, from its ``prev_hash``
    to its ``last_hash`` (a file copied back, with no record of its own to compare it with);
    :class:`SegmentError` when they do not or it cannot be read."""
    header, rows = read_rows(path)
    try:
        first_pos, prev_hash = int(header["first_pos"]), str(header["prev_hash"])
        count, last_hash = int(header["rows"]), str(header["last_hash"])
    except (KeyError, TypeError, ValueError):
        next(rows, None)  # (started, so that closing it closes the file)
        rows.close()
        raise SegmentError("its header lacks its positions or hashes") from None
    problem = _chain_problem(rows, first_pos, prev_hash, count, last_hash)
    if problem is not None:
        raise SegmentError(problem)
    return header


def orphans(
    directory: Path, unrecorded: Callable[[list[str]], Collection[str]], chunk: int = 256
) -> list[Path]:
    """Files in the segment directory no record names: a crash's leftovers (a temporary file,
    or a segment whose rows were never deleted from the live database). ``unrecorded`` says
    which of a few names no record names: the directory is read ``chunk`` names at a time, so
    what this holds does not grow with the number of segments."""
    if not directory.is_dir():
        return []
    found: list[Path] = []
    with os.scandir(directory) as entries:
        names = (entry.name for entry in entries if entry.is_file())
        while batch := list(itertools.islice(names, chunk)):
            unknown = set(unrecorded(batch))
            found.extend(directory / n for n in batch if n.endswith(".tmp") or n in unknown)
    return sorted(found)


def remove(path: Path) -> None:
    """Delete a file (gone already: fine) and make that durable."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        fsync_directory(path.parent)
