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
    KINDS,
    LOCK_KEY,
    MONTH,
    TOGETHER,
    ByMonth,
    Partitions,
    add_months,
    default_name,
    month_of,
    months,
    of_kind,
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
            for kind in KINDS:
                keep = retention.months.get(kind)
                if keep is None:
                    continue
                cutoff = add_months(this, -keep)
                for month, group in self._old_months(kind, cutoff):
                    since = max((restored.get((s.table, month), -1.0) for s, _ in group))
                    if since >= 0 and stamp < since + retention.restored_days * 86400:
                        done.kept_restored.extend((s.table, month) for s, _ in group)
                        continue
                    why = self._detach(group, retention.lock_timeout)
                    if why is not None:
                        done.deferred.extend((s.table, month, why) for s, _ in group)
                        continue
                    for spec, name in group:
                        done.archived.append(self._archive_and_drop(spec, month, name, stamp))
            for spec in self._partitioned():
                row = self.db.one(f"SELECT count(*) FROM {default_name(spec.table)}")  # noqa: S608
                if row and int(row[0]):
                    done.default_rows[spec.table] = int(row[0])
        return done

    def _partitioned(self) -> list[ByMonth]:
        """The tables of :data:`BY_MONTH` partitioned on this store (a store not migrated to
        pit schema 18 has the first eight)."""
        return [spec for spec in BY_MONTH if self.partitions.partitioned(spec.table)]

    def _old_months(self, kind: str, cutoff: str) -> list[tuple[str, list[tuple[ByMonth, str]]]]:
        """The months of ``kind`` before ``cutoff`` still attached, oldest first, each with
        what leaves at once: its tables' partitions together (a kind of :data:`TOGETHER`),
        or one table's each (the others: a table waiting for its lock holds no other back)."""
        found: dict[str, list[tuple[ByMonth, str]]] = {}
        for spec in of_kind(kind):
            if not self.partitions.partitioned(spec.table):
                continue
            for month, name in self.partitions.attached(spec.table).items():
                if month < cutoff:
                    found.setdefault(month, []).append((spec, name))
        out: list[tuple[str, list[tuple[ByMonth, str]]]] = []
        for month in sorted(found):
            if kind in TOGETHER:
                out.append((month, found[month]))
            else:
                out.extend((month, [one]) for one in found[month])
        return out

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

    def _detach(self, group: list[tuple[ByMonth, str]], lock_timeout: float) -> str | None:
        """Detach a month's partitions of ``group`` (several: in one transaction, so that no
        reader sees one of them without the others); None, or why it waits for the next
        round."""
        db = self.db
        spec, name = group[0]
        try:
            if len(group) > 1 or self.partitions.has_default(spec.table):
                with db.transaction():
                    db.execute(f"SET LOCAL lock_timeout = '{int(lock_timeout * 1000)}ms'")
                    db.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,))
                    for spec, name in group:
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
            tables = ", ".join(s.table for s, _ in group)
            log.warning("pit.archive.detach_waits", partitions=[n for _, n in group])
            return f"the queries on {tables} held it longer than {lock_timeout:g} s"
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
            for group in self._restore_groups(manifest):
                entries = []
                for spec, table in group:
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
                    else:
                        entries.append((spec, entry, [str(c) for c in table["columns"]]))
                if not entries:
                    continue
                for spec, entry, columns in entries:  # every file checked before any is read
                    self._check_file(spec, entry, columns)
                with self.db.transaction():
                    self.db.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,))
                    for spec, entry, columns in entries:
                        self._load(spec, month, entry, columns)
                    if entries[0][0].kind == "decks":
                        self._count_late_decks(month, {s.table for s, _, _ in entries})
                    for spec, entry, _ in entries:
                        self.partitions.attach_month(spec, month, filled=True)
                        self.db.execute(
                            "UPDATE archived SET restored_at = ? WHERE relation = ? AND month = ?",
                            (stamp, spec.table, month),
                        )
                        log.info(
                            "pit.archive.restored", table=spec.table, month=month, rows=entry.rows
                        )
                        done.append((entry, "restored"))
        return done

    def _restore_groups(self, manifest: dict[str, Any]) -> list[list[tuple[ByMonth, Any]]]:
        """The month's tables in the manifest, in what comes back at once: a kind of
        :data:`TOGETHER` whole (one transaction: no reader sees its decks without their
        counts), any other table alone."""
        groups: list[list[tuple[ByMonth, Any]]] = []
        for kind in KINDS:
            present = [
                (spec, manifest["tables"][spec.table])
                for spec in of_kind(kind)
                if isinstance(manifest["tables"].get(spec.table), dict)
            ]
            if kind in TOGETHER:
                if present:
                    groups.append(present)
            else:
                groups.extend([one] for one in present)
        return groups

    def _check_file(self, spec: ByMonth, entry: Archived, columns: list[str]) -> None:
        """An archived file as its manifest says (its SHA-256), of the table's columns."""
        assert self.directory is not None
        path = self.directory / entry.file
        if not path.exists():
            raise ArchiveError(f"{path}: missing (the manifest names it)")
        found = file_sha256(path)
        if found != entry.sha256:
            raise DamagedError(
                f"{path}: SHA-256 {found}, the manifest says {entry.sha256}: not restored"
            )
        if not self.partitions.partitioned(spec.table):
            raise ArchiveError(
                f"{spec.table} is not partitioned by month on this store (pit schema 18: "
                "`tablectl pit run` or `tablectl pit user list` migrates it)"
            )
        current = set(self.partitions.columns(spec.table))
        unknown = [c for c in columns if c not in current]
        if unknown:
            raise ArchiveError(f"{path}: columns {unknown} are not {spec.table}'s any more")

    def _load(self, spec: ByMonth, month: str, entry: Archived, columns: list[str]) -> None:
        """A month's file copied into a new table of its partition's name, its rows counted
        (in the caller's transaction; attached by it)."""
        assert self.directory is not None
        path = self.directory / entry.file
        name = partition_name(spec.table, month)
        db = self.db
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

    def _count_late_decks(self, month: str, loaded: set[str]) -> None:
        """The decks of a restored month that came while it was archived (in the default
        partition, with their own counts there): each moved into the month's decks unless it
        is one of them already (a redelivery), and its hour counted in the month's hours once;
        the default's hours of the month, which counted them, dropped. The month's hours then
        count its decks, as they did when it was archived (SHF-RAND's kept tallies hold by
        it)."""
        if not {"shuffler_decks", "shuffler_hours"} <= loaded:
            raise ArchiveError(
                f"{month}: the archive holds the decks or their hours without the other: "
                "not restored (they are archived together)"
            )
        db = self.db
        lo, hi = month, add_months(month, 1)
        decks = partition_name("shuffler_decks", month)
        hours = partition_name("shuffler_hours", month)
        names = ", ".join(self.partitions.columns("shuffler_decks"))
        # the month's table has no key yet (attach adds it): a redelivery is found by a join
        moved = db.all(
            f"WITH late AS (DELETE FROM {default_name('shuffler_decks')} "  # noqa: S608
            f"WHERE ts >= ? AND ts < ? RETURNING {names}), "
            f"added AS (INSERT INTO {decks} ({names}) SELECT {names} FROM late l "
            f"WHERE NOT EXISTS (SELECT 1 FROM {decks} d WHERE d.table_id = l.table_id "
            "AND d.epoch = l.epoch AND d.seq = l.seq AND d.ts = l.ts) "
            "RETURNING table_id, device, ts) "
            "SELECT table_id, device, substr(ts, 1, 13), count(*) FROM added "
            "GROUP BY table_id, device, substr(ts, 1, 13)",
            (lo, hi),
        )
        db.execute(
            f"DELETE FROM {default_name('shuffler_hours')} WHERE hour >= ? AND hour < ?",  # noqa: S608
            (lo, hi),
        )
        for table, device, hour, count in moved:
            changed = db.execute(
                f"UPDATE {hours} SET decks = decks + ? "  # noqa: S608
                "WHERE table_id = ? AND device = ? AND hour = ?",
                (int(count), table, device, hour),
            ).rowcount
            if not changed:
                db.execute(
                    f"INSERT INTO {hours} (table_id, device, hour, decks) "  # noqa: S608
                    "VALUES (?, ?, ?, ?)",
                    (table, device, hour, int(count)),
                )
        if moved:
            log.info("pit.archive.late_decks", month=month, decks=sum(int(r[3]) for r in moved))


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
