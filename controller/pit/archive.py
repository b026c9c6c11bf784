"""Retention and the archive of a PostgreSQL store (``tablectl pit archive run|list|restore``).

Each data kind (:data:`controller.pit.partitions.KINDS`) keeps this month and the
``[retention] <kind>_months`` before it online. A round (``archive run``, daily from
``systemd/tablectl-pit-archive.timer``) makes the months ahead, then takes each older month of
each table of the kind through three steps, each safe to stop at:

1. **detach** the month's partition: ``DETACH PARTITION … CONCURRENTLY`` when the table has no
   default partition; with one (the pit's tables have one, as a safety net) PostgreSQL refuses
   ``CONCURRENTLY``, and a plain ``DETACH`` takes its ``ACCESS EXCLUSIVE`` lock on the table
   for a catalog change of milliseconds, waiting at most ``[retention] lock_timeout`` for the
   queries before it (longer: the month waits for the next round);
2. **archive** the detached table: ``COPY … TO STDOUT`` (PostgreSQL's text format), gzip'd into
   ``<archive_dir>/<YYYY-MM>/<table>.copy.gz``, its rows counted against the table's, written
   to a temporary name, synced and renamed, then named with its rows, columns and SHA-256 in
   ``<YYYY-MM>/manifest.json`` (written the same way);
3. **drop** the table, in the transaction that records the month in ``archived``.

A round stopped between steps leaves a detached table of the partition's name: the next round
archives and drops it first. ``archive restore MONTH`` reads a month back for an audit: each
file checked against its SHA-256, copied into a new table, the rows of that month the default
partition took meanwhile moved in, and attached, in one transaction; the pit's pages and API
read it as any other month until ``[retention] restored_days`` have passed, when a round
archives it again. A round and a restore hold an advisory lock of the store: one at a time.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import structlog

from controller.pit.db import Db
from controller.pit.partitions import (
    AHEAD,
    BY_MONTH,
    BY_NAME,
    LOCK_KEY,
    MONTH,
    ByMonth,
    Partitions,
    add_months,
    default_name,
    month_of,
    months,
    partition_name,
)

log = structlog.get_logger("tablectl.pit.archive")

#: The format of a month's manifest.
FORMAT = "tablectl-pit-archive/1"
#: The advisory lock a round and a restore hold for their whole run.
ROUND_KEY = LOCK_KEY + 1
_DETACHED = re.compile(r"^(?P<table>[a-z_]+)_p(?P<year>\d{4})_(?P<month>\d{2})$")
_CHUNK = 1 << 20


class ArchiveError(RuntimeError):
    """The archive cannot do what was asked (said in one line); ``status``: the exit status."""

    status = 2


class DamagedError(ArchiveError):
    """An archived file is not as it was archived (its SHA-256, its rows)."""

    status = 1


@dataclass(frozen=True)
class Archived:
    """One table's month in the archive."""

    relation: str
    month: str
    kind: str
    rows: int
    file: str  # relative to the archive directory
    sha256: str
    bytes: int
    archived_at: float
    restored_at: float | None = None


@dataclass
class Round:
    """What one round did."""

    made: list[str] = field(default_factory=list)  # partitions made ahead
    archived: list[Archived] = field(default_factory=list)
    kept_restored: list[tuple[str, str]] = field(default_factory=list)  # (table, month)
    deferred: list[tuple[str, str, str]] = field(default_factory=list)  # (table, month, why)
    default_rows: dict[str, int] = field(default_factory=dict)  # table → rows not in a month


@dataclass(frozen=True)
class Retention:
    """What a round keeps: months online per kind, where archives go, the waits."""

    months: dict[str, int]
    directory: Path
    restored_days: float = 7.0
    lock_timeout: float = 5.0


class _Hashing:
    """A file that hashes and counts what is written to it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def _sync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rfc3339(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read a megabyte at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class Archive:
    """Retention, archive and restore on one PostgreSQL store."""

    def __init__(self, url: str, directory: Path | None) -> None:
        self.db = Db(url)
        if self.db.dialect != "postgresql":
            self.db.close()
            raise ArchiveError(
                "a SQLite store keeps every row: partitions, retention and archives are "
                'PostgreSQL\'s (docs/pit.md, "The store for years")'
            )
        self.directory = directory
        self.partitions = Partitions(self.db)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    # ------------------------------------------------------------------ the lock

    @contextlib.contextmanager
    def _round_lock(self) -> Iterator[None]:
        row = self.db.one("SELECT pg_try_advisory_lock(?)", (ROUND_KEY,))
        if not row or not row[0]:
            raise ArchiveError("another archive round or restore runs on this store: try later")
        try:
            yield
        finally:
            if not self.db.broken:
                self.db.execute("SELECT pg_advisory_unlock(?)", (ROUND_KEY,))

    def _check_store(self) -> None:
        if not self.partitions.partitioned("events"):
            raise ArchiveError(
                "the store is not partitioned by month (pit schema 11: `tablectl pit run` or "
                "`tablectl pit user list` migrates it)"
            )

    def _need_directory(self) -> Path:
        if self.directory is None:
            raise ArchiveError("[retention] archive_dir is not set: where archived months go")
        if not self.directory.is_dir():
            raise ArchiveError(f"{self.directory}: no such directory (the archive's)")
        return self.directory

    # ------------------------------------------------------------------ a round

    def run(self, retention: Retention, now: float | None = None) -> Round:
        """One round: the months ahead made, every month older than its kind keeps archived
        and dropped (and what an earlier round left detached)."""
        stamp = time.time() if now is None else now
        self._check_store()
        done = Round()
        with self._round_lock():
            this = month_of(stamp)
            done.made = self.partitions.ensure(
                months(this, add_months(this, AHEAD)), lock_timeout=retention.lock_timeout
            )
            if retention.months:
                self.directory = retention.directory
                self._need_directory()
            for spec, month, name in self._leftovers():
                done.archived.append(self._archive_and_drop(spec, month, name, stamp))
            restored = self._restored()
            for spec in BY_MONTH:
                keep = retention.months.get(spec.kind)
                if keep is None:
                    continue
                cutoff = add_months(this, -keep)
                for month, name in sorted(self.partitions.attached(spec.table).items()):
                    if month >= cutoff:
                        continue
                    since = restored.get((spec.table, month))
                    if since is not None and stamp < since + retention.restored_days * 86400:
                        done.kept_restored.append((spec.table, month))
                        continue
                    why = self._detach(spec, name, retention.lock_timeout)
                    if why is not None:
                        done.deferred.append((spec.table, month, why))
                        continue
                    done.archived.append(self._archive_and_drop(spec, month, name, stamp))
            for spec in BY_MONTH:
                row = self.db.one(f"SELECT count(*) FROM {default_name(spec.table)}")  # noqa: S608
                if row and int(row[0]):
                    done.default_rows[spec.table] = int(row[0])
        return done

    def _restored(self) -> dict[tuple[str, str], float]:
        return {
            (str(r[0]), str(r[1])): float(r[2])
            for r in self.db.all(
                "SELECT relation, month, restored_at FROM archived WHERE restored_at IS NOT NULL"
            )
        }

    def _leftovers(self) -> list[tuple[ByMonth, str, str]]:
        """Partitions an interrupted round detached and did not drop (a ``DETACH …
        CONCURRENTLY`` stopped half way is finished first)."""
        for name, parent in self.db.all(
            "SELECT c.relname, p.relname FROM pg_inherits i JOIN pg_class c ON "
            "c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE i.inhdetachpending"
        ):
            if str(parent) in BY_NAME:
                self.db.execute(f"ALTER TABLE {parent} DETACH PARTITION {name} FINALIZE")
        out: list[tuple[ByMonth, str, str]] = []
        rows = self.db.all(
            "SELECT c.relname FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = "
            "current_schema()::regnamespace AND NOT c.relispartition AND c.relname ~ ?",
            ("^[a-z_]+_p[0-9]{4}_[0-9]{2}$",),
        )
        for (name,) in rows:
            found = _DETACHED.match(str(name))
            if found is None or found.group("table") not in BY_NAME:
                continue
            month = f"{found.group('year')}-{found.group('month')}"
            if MONTH.match(month):
                out.append((BY_NAME[found.group("table")], month, str(name)))
        return sorted(out, key=lambda item: (item[1], item[2]))

    def _detach(self, spec: ByMonth, name: str, lock_timeout: float) -> str | None:
        """Detach a month's partition; None, or why it waits for the next round."""
        db = self.db
        try:
            if self.partitions.has_default(spec.table):
                with db.transaction():
                    db.execute(f"SET LOCAL lock_timeout = '{int(lock_timeout * 1000)}ms'")
                    db.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,))
                    db.execute(f"ALTER TABLE {spec.table} DETACH PARTITION {name}")
            else:  # no default partition: the lock that blocks nothing
                db.execute(f"SET lock_timeout = '{int(lock_timeout * 1000)}ms'")
                try:
                    db.execute(f"ALTER TABLE {spec.table} DETACH PARTITION {name} CONCURRENTLY")
                finally:
                    db.execute("RESET lock_timeout")
        except Exception as exc:
            if db.broken or getattr(exc, "sqlstate", None) != "55P03":  # lock_not_available
                raise
            log.warning("pit.archive.detach_waits", table=spec.table, partition=name)
            return f"the queries on {spec.table} held it longer than {lock_timeout:g} s"
        return None

    def _archive_and_drop(self, spec: ByMonth, month: str, name: str, now: float) -> Archived:
        """Archive a detached month, then drop it and record it (its file first, synced)."""
        directory = self._need_directory()
        db = self.db
        folder = directory / month
        folder.mkdir(exist_ok=True)
        relative = f"{month}/{spec.table}.copy.gz"
        final = directory / relative
        temporary = folder / f".{spec.table}.copy.gz.tmp"
        columns = self.partitions.columns(name)
        rows = 0
        with temporary.open("wb") as raw:
            hashing = _Hashing(raw)
            with gzip.GzipFile(fileobj=hashing, mode="wb", mtime=0) as zipped:
                for chunk in db.copy_out(f"COPY {name} ({', '.join(columns)}) TO STDOUT"):
                    rows += chunk.count(b"\n")  # the text format: one line a row
                    zipped.write(chunk)
            raw.flush()
            os.fsync(raw.fileno())
        counted = db.one(f"SELECT count(*) FROM {name}")  # noqa: S608
        if counted is None or int(counted[0]) != rows:
            temporary.unlink(missing_ok=True)
            raise ArchiveError(
                f"{name}: {rows} rows written to the archive, {counted and counted[0]} in the "
                "table: nothing dropped"
            )
        temporary.replace(final)
        _sync_directory(folder)
        entry = Archived(
            relation=spec.table,
            month=month,
            kind=spec.kind,
            rows=rows,
            file=relative,
            sha256=hashing.sha256.hexdigest(),
            bytes=hashing.size,
            archived_at=now,
        )
        self._write_manifest(folder, month, entry, columns)
        with db.transaction():
            db.execute(
                "INSERT INTO archived (relation, month, kind, rows, file, sha256, bytes, "
                "archived_at, restored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL) "
                "ON CONFLICT (relation, month) DO UPDATE SET kind = excluded.kind, "
                "rows = excluded.rows, file = excluded.file, sha256 = excluded.sha256, "
                "bytes = excluded.bytes, archived_at = excluded.archived_at, restored_at = NULL",
                (
                    entry.relation,
                    entry.month,
                    entry.kind,
                    entry.rows,
                    entry.file,
                    entry.sha256,
                    entry.bytes,
                    entry.archived_at,
                ),
            )
            db.execute(f"DROP TABLE {name}")
        log.info("pit.archive.archived", table=spec.table, month=month, rows=rows, file=relative)
        return entry

    def _write_manifest(
        self, folder: Path, month: str, entry: Archived, columns: list[str]
    ) -> None:
        path = folder / "manifest.json"
        manifest = self._manifest(folder) or {"format": FORMAT, "month": month, "tables": {}}
        manifest["tables"][entry.relation] = {
            "kind": entry.kind,
            "file": Path(entry.file).name,
            "rows": entry.rows,
            "bytes": entry.bytes,
            "sha256": entry.sha256,
            "columns": columns,
            "archived_at": _rfc3339(entry.archived_at),
        }
        temporary = folder / ".manifest.json.tmp"
        with temporary.open("w", encoding="utf-8") as out:
            json.dump(manifest, out, indent=2, sort_keys=True)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        temporary.replace(path)
        _sync_directory(folder)

    @staticmethod
    def _manifest(folder: Path) -> dict[str, Any] | None:
        path = folder / "manifest.json"
        if not path.exists():
            return None
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ArchiveError(f"{path}: not a manifest ({exc})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ArchiveError(f"{path}: not a manifest of {FORMAT}")
        if not isinstance(manifest.get("tables"), dict):
            raise ArchiveError(f"{path}: no tables")
        return manifest

    # ------------------------------------------------------------------ reading

    def months(self) -> list[Archived]:
        """Every table's month in the archive, oldest first."""
        return archived_rows(self.db)

    def restore(self, month: str, now: float | None = None) -> list[tuple[Archived, str]]:
        """Bring an archived month back online for an audit: each table's file checked
        against its SHA-256 and copied into a partition attached in one transaction; each
        table and what became of it (``restored``, or ``online`` already)."""
        stamp = time.time() if now is None else now
        if MONTH.match(month) is None:
            raise ArchiveError(f"{month!r} is not a month (YYYY-MM)")
        self._check_store()
        directory = self._need_directory()
        folder = directory / month
        manifest = self._manifest(folder)
        if manifest is None:
            raise ArchiveError(f"no archive of {month} in {directory}")
        done: list[tuple[Archived, str]] = []
        with self._round_lock():
            for spec in BY_MONTH:
                table = manifest["tables"].get(spec.table)
                if not isinstance(table, dict):
                    continue
                entry = Archived(
                    relation=spec.table,
                    month=month,
                    kind=spec.kind,
                    rows=int(table["rows"]),
                    file=f"{month}/{table['file']}",
                    sha256=str(table["sha256"]),
                    bytes=int(table["bytes"]),
                    archived_at=0.0,
                    restored_at=stamp,
                )
                if month in self.partitions.attached(spec.table):
                    done.append((entry, "online"))
                    continue
                self._restore_table(spec, month, entry, [str(c) for c in table["columns"]])
                done.append((entry, "restored"))
                with self.db.transaction():
                    self.db.execute(
                        "UPDATE archived SET restored_at = ? WHERE relation = ? AND month = ?",
                        (stamp, spec.table, month),
                    )
        return done

    def _restore_table(
        self, spec: ByMonth, month: str, entry: Archived, columns: list[str]
    ) -> None:
        assert self.directory is not None
        path = self.directory / entry.file
        if not path.exists():
            raise ArchiveError(f"{path}: missing (the manifest names it)")
        found = file_sha256(path)
        if found != entry.sha256:
            raise DamagedError(
                f"{path}: SHA-256 {found}, the manifest says {entry.sha256}: not restored"
            )
        current = set(self.partitions.columns(spec.table))
        unknown = [c for c in columns if c not in current]
        if unknown:
            raise ArchiveError(f"{path}: columns {unknown} are not {spec.table}'s any more")
        name = partition_name(spec.table, month)
        db = self.db
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,))
            if self.partitions.exists(name):
                raise ArchiveError(
                    f"{name} exists and is not attached: `tablectl pit archive run` archives it"
                )
            db.execute(f"CREATE TABLE {name} (LIKE {spec.table} INCLUDING DEFAULTS)")

            def chunks() -> Iterator[bytes]:
                with gzip.open(path, "rb") as source:
                    while chunk := source.read(_CHUNK):
                        yield chunk

            db.copy_in(f"COPY {name} ({', '.join(columns)}) FROM STDIN", chunks())
            counted = db.one(f"SELECT count(*) FROM {name}")  # noqa: S608
            if counted is None or int(counted[0]) != entry.rows:
                raise DamagedError(
                    f"{path}: {counted and counted[0]} rows read, the manifest says {entry.rows}"
                )
            self.partitions.attach_month(spec, month, filled=True)
        log.info("pit.archive.restored", table=spec.table, month=month, rows=entry.rows)


def archived_rows(db: Db) -> list[Archived]:
    """What ``archived`` records, oldest month first."""
    rows = db.all(
        "SELECT relation, month, kind, rows, file, sha256, bytes, archived_at, restored_at "
        "FROM archived ORDER BY month, relation"
    )
    return [
        Archived(
            relation=str(r[0]),
            month=str(r[1]),
            kind=str(r[2]),
            rows=int(r[3]),
            file=str(r[4]),
            sha256=str(r[5]),
            bytes=int(r[6]),
            archived_at=float(r[7]),
            restored_at=None if r[8] is None else float(r[8]),
        )
        for r in rows
    ]


def as_json(entry: Archived) -> dict[str, Any]:
    """An archived month as ``archive list --json`` prints it."""
    out = asdict(entry)
    out["archived_at"] = _rfc3339(entry.archived_at)
    out["restored_at"] = None if entry.restored_at is None else _rfc3339(entry.restored_at)
    return out
