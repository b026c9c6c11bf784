"""``tablectl pit archive run|list|restore``: retention and the archive of a PostgreSQL store
(:mod:`controller.pit.archive`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from controller.config import ConfigError
from controller.shell.cli import add_verb, add_verb_group, config_path

if TYPE_CHECKING:
    from controller.pit.archive import Archive
    from controller.pit.config import PitConfig

T = TypeVar("T")


def add_parsers(verbs: Any) -> None:
    """Register ``tablectl pit archive`` under ``tablectl pit``."""
    group = add_verb_group(
        verbs,
        "archive",
        "run|list|restore",
        help="the store for years: months archived and read back",
        description="Keep each data kind's months online for as long as the pit config's "
        "[retention] says, archive the older ones to compressed files, and read an archived "
        "month back for an audit. PostgreSQL stores only: a SQLite store keeps every row.",
    )
    run = add_verb(
        group,
        "run",
        archive_run,
        help="one round: months ahead made, older months archived",
        description="Make the partitions of the months ahead, then detach every month older "
        "than its data kind keeps online, write it to a gzip'd COPY file with a manifest and "
        "its SHA-256 under [retention] archive_dir, and drop it (systemd's "
        "tablectl-pit-archive.timer runs it daily). Exit status 1: a month waited for its lock "
        "and is left to the next round; 2: the config or the store cannot be used.",
    )
    listing = add_verb(
        group,
        "list",
        archive_list,
        help="the months archived, one table a line",
        description="List every table's month in the archive, oldest first: its rows, the "
        "file, its size and SHA-256, when it was archived and whether it is online again.",
    )
    listing.add_argument(
        "--json", action="store_true", help="one JSON object a line instead of text"
    )
    restore = add_verb(
        group,
        "restore",
        archive_restore,
        help="bring an archived month back online for an audit",
        description="Check each file of an archived month against its SHA-256 and attach its "
        "rows again, so that the API and the console read them; a later round archives the "
        "month again once [retention] restored_days have passed. Exit status 1: a file is not "
        "as archived (nothing of that table is restored).",
    )
    restore.add_argument("month", help="the month, YYYY-MM")
    for verb in (run, listing, restore):
        verb.add_argument("--config", type=Path, default=None, help="pit config file (its store)")


class _RefusedError(Exception):
    """Printed already; the exit status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _with_archive(verb: str, path: Path | None, call: Callable[[Archive, PitConfig], T]) -> T:
    """``call`` with the archive of the config's store (closed after); :class:`_RefusedError` once
    a line says why it cannot be used."""
    from controller.pit.archive import Archive, ArchiveError  # noqa: PLC0415
    from controller.pit.config import CONFIG_ENV, DEFAULT_PIT_CONFIG, load_pit_config  # noqa: PLC0415
    from controller.pit.db import StoreError, transient  # noqa: PLC0415

    where = f"tablectl pit archive {verb}"
    try:
        config = load_pit_config(config_path(path, CONFIG_ENV, DEFAULT_PIT_CONFIG))
    except ConfigError as exc:
        print(f"{where}: {exc}", file=sys.stderr)
        raise _RefusedError(2) from None
    try:
        archive = Archive(config.store.url, config.retention.archive_dir)
    except (ArchiveError, StoreError) as exc:
        print(f"{where}: {exc}", file=sys.stderr)
        raise _RefusedError(2) from None
    try:
        _migrated(config.store.url)  # as `pit user list`: never a store made here
        return call(archive, config)
    except ArchiveError as exc:
        print(f"{where}: {exc}", file=sys.stderr)
        raise _RefusedError(exc.status) from None
    except Exception as exc:
        if not transient(exc):
            raise
        print(f"{where}: the store: {exc}", file=sys.stderr)
        raise _RefusedError(2) from None
    finally:
        archive.close()


def _migrated(url: str) -> None:
    """The store of ``url`` migrated to this code's schema (ArchiveError: it holds none)."""
    from controller.pit.archive import ArchiveError  # noqa: PLC0415
    from controller.pit.store import Store  # noqa: PLC0415

    store = Store(url)
    try:
        if store.schema_version() == 0:
            raise ArchiveError("the store holds no pit schema (`tablectl pit run` makes it)")
        store.migrate()
    finally:
        store.close()


def archive_run(args: argparse.Namespace) -> int:
    """``tablectl pit archive run``."""
    from controller.pit.archive import Retention, Round  # noqa: PLC0415

    def run(archive: Archive, config: PitConfig) -> Round:
        retention = config.retention
        return archive.run(
            Retention(
                months=retention.kept(),
                directory=retention.archive_dir or Path(),
                restored_days=retention.restored_days,
                lock_timeout=retention.lock_timeout,
            )
        )

    try:
        done = _with_archive("run", args.config, run)
    except _RefusedError as refused:
        return refused.status
    for name in done.made:
        print(f"made {name}")
    for entry in done.archived:
        print(
            f"archived {entry.relation} {entry.month}: {entry.rows} rows, {entry.file} "
            f"({entry.bytes} bytes, sha256 {entry.sha256})"
        )
    for table, month in done.kept_restored:
        print(f"kept {table} {month}: brought back for an audit")
    for table, rows in sorted(done.default_rows.items()):
        print(f"{table}: {rows} rows in no month's partition (its default partition)")
    for table, month, why in done.deferred:
        print(f"tablectl pit archive run: {table} {month} waits: {why}", file=sys.stderr)
    return 1 if done.deferred else 0


def archive_list(args: argparse.Namespace) -> int:
    """``tablectl pit archive list [--json]``."""
    from controller.pit.archive import as_json  # noqa: PLC0415

    try:
        entries = _with_archive("list", args.config, lambda archive, _: archive.months())
    except _RefusedError as refused:
        return refused.status
    for entry in entries:
        shown = as_json(entry)
        if args.json:
            print(json.dumps(shown))
            continue
        online = "" if entry.restored_at is None else f"  online again since {shown['restored_at']}"
        print(
            f"{entry.month}  {entry.relation}  {entry.rows} rows  {entry.file}  {entry.bytes} "
            f"bytes  sha256 {entry.sha256}  archived {shown['archived_at']}{online}"
        )
    return 0


def archive_restore(args: argparse.Namespace) -> int:
    """``tablectl pit archive restore MONTH``."""
    month = str(args.month)
    try:
        done = _with_archive(
            "restore", args.config, lambda archive, _: archive.restore(month, time.time())
        )
    except _RefusedError as refused:
        return refused.status
    for entry, what in done:
        print(f"{what} {entry.relation} {month}: {entry.rows} rows")
    return 0
