"""The journal's connection: an existing journal opens on a full disk (a tool, a restart, a second
connection), a new one there is refused, and any other failure of SQLite is refused with the
file closed behind it; SQLite's own verdict that a file is damaged is told from its other errors.

A full disk is a real small file system filled up (tests/disk.py: root only).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.shell.chain import (
    JournalDamagedError,
    JournalError,
    connect,
    is_damage,
    unreadable,
    verify_chain,
)
from controller.shell.journal import Journal, NewEvent
from controller.shell.space import is_full
from tests.disk import fill as fill_disk
from tests.disk import small_disk


def _journal(path: Path) -> Journal:
    journal = Journal.open(path, table_id="T1")
    for n in range(5):
        journal.append(input_row=("ts", "X", f'{{"n":{n}}}'), events=[NewEvent("a.b", None, "y")])
    return journal


def _open_files(path: Path) -> list[str]:
    """The files of this process open at ``path``, its write-ahead log or its shared memory."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # the listing's own descriptor is gone already
            target = os.readlink(fd)
            if target.startswith(str(path)):
                found.append(target)
    return found


def _refused(path: Path) -> sqlite3.OperationalError:
    """What ``connect`` raised for ``path``. The error holds the failed call's frame, and so a
    connection it left open, for as long as the caller keeps it."""
    with pytest.raises(sqlite3.OperationalError) as caught:
        connect(path)
    return caught.value


@contextlib.contextmanager
def _file_size_limit(size: int) -> Iterator[None]:
    """No file of this process may grow past ``size`` bytes (a write there fails with EFBIG
    rather than killing the process with SIGXFSZ)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


# --------------------------------------------------------------------------- a full disk


def test_an_existing_journal_opens_and_verifies_on_a_disk_with_no_byte_free(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", "2m") as disk:
        path = disk / "j.sqlite"
        writer = _journal(path)  # the daemon, still running
        fill_disk(disk / "filler", 0)
        # what connect meets: SQLite writes the setting of auto_vacuum, and cannot
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as plain:
            with pytest.raises(sqlite3.OperationalError) as caught:
                plain.execute("PRAGMA auto_vacuum=INCREMENTAL")
            assert caught.value.sqlite_errorcode == sqlite3.SQLITE_FULL
        conn = connect(path)
        try:
            report = verify_chain(conn)
            assert (report.ok, report.rows) == (True, 10)
        finally:
            conn.close()
        writer.close()


def test_a_new_journal_on_a_disk_with_no_byte_free_is_refused_and_left_closed(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", "2m") as disk:
        fill_disk(disk / "filler", 0)
        path = disk / "j.sqlite"
        refused = _refused(path)
        assert _open_files(path) == []
        assert is_full(refused, disk)
        assert path.stat().st_size == 0  # SQLite made the file, nothing in it


def test_a_file_that_is_not_yet_a_journal_on_a_disk_with_no_byte_free_is_refused_and_left_closed(
    tmp_path: Path,
) -> None:
    # one byte is content enough to count as existing: connect goes on past auto_vacuum, and
    # the switch to WAL is what fails
    with small_disk(tmp_path / "disk", "2m") as disk:
        path = disk / "j.sqlite"
        path.write_bytes(b"x")
        fill_disk(disk / "filler", 0)
        refused = _refused(path)
        assert refused.sqlite_errorcode == sqlite3.SQLITE_FULL
        assert _open_files(path) == []
        assert path.read_bytes() == b"x"


# --------------------------------------------------------------------------- other failures


def test_a_journal_whose_write_ahead_log_cannot_be_opened_is_refused_and_left_closed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.sqlite"
    _journal(path).close()
    (tmp_path / "j.sqlite-wal").mkdir()  # where SQLite must open its log
    refused = _refused(path)
    assert _open_files(path) == []
    assert refused.sqlite_errorcode == sqlite3.SQLITE_CANTOPEN


def test_a_journal_that_cannot_grow_for_another_reason_than_a_full_disk_is_refused(
    tmp_path: Path,
) -> None:
    """A write past the file size limit fails with EFBIG, which SQLite reports as an I/O error
    (SQLITE_IOERR_WRITE, 778: its low byte, the primary code, is SQLITE_IOERR). A new journal
    is written as it opens (its switch to WAL), and refused there with its file closed."""
    path = tmp_path / "j.sqlite"
    with _file_size_limit(0):
        refused = _refused(path)
    assert _open_files(path) == []
    assert refused.sqlite_errorcode == sqlite3.SQLITE_IOERR_WRITE
    assert not is_full(refused, tmp_path)


def test_opening_an_existing_journal_writes_nothing(tmp_path: Path) -> None:
    """The daemon's connection is the journal's only writer (SQLite before 3.51.3 can lose a
    commit when two connections write and checkpoint at once: sqlite.org/wal.html#walresetbug):
    a tool, the live verify or a retention read beside it open the journal without a write."""
    path = tmp_path / "j.sqlite"
    writer = _journal(path)
    writer.checkpoint()  # the WAL folded in and emptied: any write would show in it
    wal = tmp_path / "j.sqlite-wal"
    content, log = path.read_bytes(), wal.stat().st_size
    for read_only in (False, True):
        reader = Journal.open_existing(path, read_only=read_only)
        assert reader.verify().ok
        reader.close()
    assert wal.stat().st_size == log == 0
    assert path.read_bytes() == content
    writer.close()


def test_a_read_only_connection_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _journal(path).close()
    conn = connect(path, read_only=True)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("UPDATE meta SET value = 'x' WHERE key = 'table_id'")
        assert conn.execute("SELECT value FROM meta WHERE key = 'table_id'").fetchone() == ("T1",)
    finally:
        conn.close()


# --------------------------------------------------------------------------- damage


def _error(conn: sqlite3.Connection, sql: str) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as caught:
        conn.execute(sql)
    return caught.value


def test_sqlites_own_verdict_that_a_file_is_damaged_is_told_from_its_other_errors(
    tmp_path: Path,
) -> None:
    conn = connect(tmp_path / "j.sqlite")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    not_a_database = tmp_path / "notes.txt"
    not_a_database.write_text("a page of notes, not a database\n" * 100)
    other = sqlite3.connect(not_a_database)
    try:
        # damage: the journal's tables not as it made them, or no database at all
        assert is_damage(_error(conn, "SELECT * FROM events"))  # no such table
        assert is_damage(_error(conn, "SELECT hash FROM meta"))  # no such column
        assert is_damage(_error(other, "SELECT * FROM meta"))  # file is not a database
        # not damage: another error of the same code, or of no SQLite code at all
        assert not is_damage(_error(conn, "SELEC 1"))  # a syntax error: SQLITE_ERROR too
        assert not is_damage(sqlite3.OperationalError("no such table: meta"))  # not SQLite's
        conn.close()
        assert not is_damage(_error(conn, "SELECT 1"))  # a closed connection: no SQLite code
        assert not is_damage(ValueError("no such table: meta"))
    finally:
        conn.close()
        other.close()


def test_an_error_message_of_sqlites_that_is_not_utf8_is_unreadable_too() -> None:
    with pytest.raises(UnicodeDecodeError) as caught:
        b"malformed database schema (\xff)".decode()
    assert unreadable(caught.value)
    assert not unreadable(sqlite3.OperationalError("database is locked"))


@pytest.mark.parametrize("where", ["full-disk", "log-not-openable"])
def test_the_tools_say_a_journal_that_cannot_be_opened_is_not_damaged_unless_sqlite_says_so(
    tmp_path: Path, where: str
) -> None:
    """``tablectl journal`` opens a closed journal: a full disk or a log SQLite cannot open is
    said as what it is, never as damage to salvage."""
    with contextlib.ExitStack() as stack:
        if where == "full-disk":
            disk = stack.enter_context(small_disk(tmp_path / "disk", "2m"))
            path = disk / "j.sqlite"
            _journal(path).close()
            fill_disk(disk / "filler", 0)
        else:
            path = tmp_path / "j.sqlite"
            _journal(path).close()
            (tmp_path / "j.sqlite-wal").mkdir()
        with pytest.raises(JournalError) as caught:
            Journal.open_existing(path)
        assert not isinstance(caught.value, JournalDamagedError)
        assert str(caught.value).startswith(f"{path} cannot be opened: ")
        assert "salvage" not in str(caught.value)


def test_the_tools_say_a_file_that_is_not_a_journal_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    path.write_bytes(b"not a database at all, " * 100)
    with pytest.raises(JournalDamagedError, match="is not a journal, or is damaged"):
        Journal.open_existing(path)
