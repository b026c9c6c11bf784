"""The journal's chain names each break where it is: the position of the row edited, of the row
deleted from the middle, the end the chain stops at when rows were deleted from it, and the key
issued but gone; a chain rewritten under a verified head at that head's position.

Each break is asserted whole, its position and its text: a row SQLite reads back as other types
(named by its key, or "?"), a file SQLite finds damaged (just after the last row read), a journal
head other than the chain's end, a position used twice, a link or a hash replaced by one that
sorts before or after the right one, rows archived and still live; and an intact chain verifies
from every point of it."""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import astuple
from pathlib import Path

import pytest

from controller.shell.chain import (
    GENESIS,
    KEY,
    Break,
    Head,
    VerifyReport,
    connect,
    verify_chain,
)
from controller.shell.journal import NewEvent
from tests.shell.test_integrity import events, journal_at, rewrite_chain


def _five_events(path: Path) -> Head:
    """A journal in ``path`` with five events; its head."""
    journal = journal_at(path)
    events(journal, 5)
    head = journal.head
    journal.close()
    return head


def _breaks(path: Path) -> list[Break]:
    journal = journal_at(path)
    try:
        return journal.verify().breaks
    finally:
        journal.close()


def _positions(path: Path) -> dict[int, int]:
    """Each event row's chain position, by its seq."""
    with sqlite3.connect(path / "journal.sqlite") as conn:
        return dict(conn.execute("SELECT seq, pos FROM events"))


def _tampered(path: Path, *statements: str) -> None:
    with sqlite3.connect(path / "journal.sqlite") as conn:
        for statement in statements:
            conn.execute(statement)


ROW_IN_TWO_PLACES = "which an archive segment holds (a row in two places)"
DAMAGED_ROW = "the row is damaged (unreadable values)"
MISSING = "is missing (a row was deleted)"
UNFOLLOWED = "does not follow the previous row"
EDITED = "content does not match its hash (edited or damaged)"
DELETED_FROM_THE_END = "rows were deleted from the end, or added outside the journal"


def _events_then_an_input(path: Path, count: int) -> Head:
    """A journal in ``path`` with ``count`` events and then an input that caused none, so that
    it ends at an odd position (each event follows its input); its head."""
    journal = journal_at(path)
    events(journal, count)
    journal.append(input_row=("2026-01-01T00:00:09+00:00", "Tick", '{"n":9}'), events=[])
    head = journal.head
    journal.close()
    return head


def _hashes(path: Path) -> dict[int, str]:
    """Each row's hash, by its chain position."""
    with contextlib.closing(sqlite3.connect(path / "journal.sqlite")) as conn:
        return dict(conn.execute("SELECT pos, hash FROM inputs UNION SELECT pos, hash FROM events"))


def _verified(path: Path, since: Head = GENESIS, *, after_archive: bool = False) -> VerifyReport:
    """The chain's own verification of the journal in ``path``, from ``since``."""
    conn = connect(path / "journal.sqlite")
    try:
        return verify_chain(conn, since=since, after_archive=after_archive)
    finally:
        conn.close()


def _key_a_plain_column(path: Path, table: str) -> None:
    """Declare ``table``'s key a plain column, as a damaged schema can: the key is then read
    from the row's record, which can hold any type, not from SQLite's row id."""
    db = path / "journal.sqlite"
    key = KEY[table]
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE name = ?",
            (f"{key} INTEGER PRIMARY KEY AUTOINCREMENT", f"{key} INTEGER", table),
        )
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(f"UPDATE {table} SET {key} = rowid")


# --------------------------------------------------------------------------- edits and deletions


def test_an_edited_row_is_a_break_at_its_own_position(tmp_path: Path) -> None:
    _five_events(tmp_path)
    pos = _positions(tmp_path)[3]
    _tampered(tmp_path, "UPDATE events SET body = '{\"n\":99}' WHERE seq = 3")
    breaks = _breaks(tmp_path)
    assert [(b.pos, b.text.split(": ")[-1]) for b in breaks] == [
        (pos, "content does not match its hash (edited or damaged)")
    ]


def test_a_row_deleted_from_the_middle_is_a_break_at_the_position_it_left(tmp_path: Path) -> None:
    _five_events(tmp_path)
    pos = _positions(tmp_path)[3]
    _tampered(tmp_path, "DELETE FROM events WHERE seq = 3")
    missing = [b for b in _breaks(tmp_path) if "is missing" in b.text]
    assert [(b.pos, b.text.split(": ")[-1]) for b in missing] == [
        (pos, f"position {pos} is missing (a row was deleted)")
    ]


def test_rows_deleted_from_the_end_are_a_break_just_after_where_the_chain_now_ends(
    tmp_path: Path,
) -> None:
    head = _five_events(tmp_path)
    positions = _positions(tmp_path)
    last = positions[3]
    _tampered(
        tmp_path, "DELETE FROM events WHERE seq >= 4", f"DELETE FROM inputs WHERE pos > {last}"
    )
    breaks = _breaks(tmp_path)
    ends = [b for b in breaks if "the chain ends" in b.text]
    assert [b.pos for b in ends] == [positions[3] + 1]
    assert f"the chain ends at position {positions[3]} but the journal head is at {head.pos}" in (
        ends[0].text
    )
    assert f"(the highest position in the file is {positions[3]})" in ends[0].text
    issued = [(b.pos, b.text) for b in breaks if "was issued" in b.text]
    gone = "was issued but the last row is 3 (rows deleted from the end)"
    assert sorted(issued) == [
        (positions[3] + 1, f"events: key 5 {gone}"),
        (positions[3] + 1, f"inputs: key 5 {gone}"),
    ]


def test_a_chain_rewritten_under_a_verified_head_is_a_break_at_that_head(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    events(journal, 4)
    verified = journal.head
    journal.close()
    _tampered(tmp_path, "UPDATE events SET body = '{\"n\":99}' WHERE seq = 1")
    rewrite_chain(tmp_path / "journal.sqlite")
    again = journal_at(tmp_path)
    try:
        breaks = again.verify(verified).breaks
    finally:
        again.close()
    assert [b.pos for b in breaks if "verified before, was changed" in b.text] == [verified.pos]


# --------------------------------------------------------------------------- rows of other types


def test_a_row_read_back_as_other_types_is_a_break_at_its_position_named_by_its_key(
    tmp_path: Path,
) -> None:
    _five_events(tmp_path)
    _tampered(tmp_path, "UPDATE events SET input_id = x'00ff' WHERE seq = 3")
    report = _verified(tmp_path)
    assert report.breaks == [
        Break(6, f"events seq 3 (position 6): {DAMAGED_ROW}"),
        Break(6, f"inputs id 4 (position 7): position 6 {MISSING}"),
        Break(7, f"inputs id 4 (position 7): {UNFOLLOWED}"),
    ]
    assert report.rows == 9  # the damaged row is left out of the walk


def test_a_row_whose_key_is_unreadable_is_named_with_a_question_mark(tmp_path: Path) -> None:
    _five_events(tmp_path)
    _key_a_plain_column(tmp_path, "events")
    _tampered(tmp_path, "UPDATE events SET seq = x'00ff' WHERE rowid = 3")
    assert _verified(tmp_path).breaks == [
        Break(6, f"events seq ? (position 6): {DAMAGED_ROW}"),
        Break(6, f"inputs id 4 (position 7): position 6 {MISSING}"),
        Break(7, f"inputs id 4 (position 7): {UNFOLLOWED}"),
        # SQLite sorts a blob above every number: the highest key is no key at all
        Break(11, "events: key 5 was issued but the last row is 0 (rows deleted from the end)"),
    ]


@pytest.mark.parametrize("position", ["six", 6.5], ids=["text", "real"])
def test_a_row_with_no_readable_position_is_a_break_just_after_where_the_walk_began(
    tmp_path: Path, position: str | float
) -> None:
    _five_events(tmp_path)
    since = Head(5, _hashes(tmp_path)[5])
    with contextlib.closing(sqlite3.connect(tmp_path / "journal.sqlite")) as conn, conn:
        conn.execute("UPDATE events SET pos = ? WHERE seq = 3", (position,))
    breaks = _verified(tmp_path, since).breaks
    assert sorted(breaks, key=astuple) == [
        Break(6, f"events seq 3 (no readable position): {DAMAGED_ROW}"),
        Break(6, f"inputs id 4 (position 7): position 6 {MISSING}"),
        Break(7, f"inputs id 4 (position 7): {UNFOLLOWED}"),
    ]
    assert all(type(b.pos) is int for b in breaks)  # a position, not 6.0


# --------------------------------------------------------------------------- a damaged file


def test_a_damaged_file_is_a_break_just_after_the_last_good_row(tmp_path: Path) -> None:
    """The walk reads every row, then SQLite finds the journal's own table gone (its schema
    damaged): the break is at the position after the last row read."""
    _events_then_an_input(tmp_path, 5)
    _tampered(tmp_path, "DROP TABLE meta")
    report = _verified(tmp_path)
    damage = "the file is damaged after position 11 (no such table: meta)"
    assert report.damaged == damage
    assert report.breaks == [Break(12, damage)]
    assert report.rows == 11


def test_a_table_whose_columns_sqlite_no_longer_finds_is_a_damaged_file(tmp_path: Path) -> None:
    _five_events(tmp_path)
    _tampered(tmp_path, "ALTER TABLE events RENAME COLUMN body TO bodx")
    damage = "the file is damaged after position 0 (no such column: body)"
    assert _verified(tmp_path).breaks == [Break(1, damage)]


# --------------------------------------------------------------------------- the end of the chain


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("head_pos", "6"),
        ("head_pos", "8"),
        ("head_hash", "0" * 64),  # below every hash of the chain
        ("head_hash", "f" * 64),  # above every hash of the chain
    ],
    ids=["position-behind", "position-ahead", "hash-below", "hash-above"],
)
def test_a_journal_head_other_than_the_chain_end_is_a_break_just_after_the_end(
    tmp_path: Path, key: str, value: str
) -> None:
    head = _events_then_an_input(tmp_path, 3)
    assert head.pos == 7
    _tampered(tmp_path, f"UPDATE meta SET value = '{value}' WHERE key = '{key}'")
    head_pos = value if key == "head_pos" else "7"
    assert _breaks(tmp_path) == [
        Break(
            8,
            f"the chain ends at position 7 but the journal head is at {head_pos}: "
            f"{DELETED_FROM_THE_END} (the highest position in the file is 7)",
        )
    ]


def test_rows_deleted_after_an_odd_position_are_a_break_just_after_it(tmp_path: Path) -> None:
    _five_events(tmp_path)
    _tampered(tmp_path, "DELETE FROM events WHERE seq = 5")
    assert _breaks(tmp_path) == [
        Break(
            10,
            "the chain ends at position 9 but the journal head is at 10: "
            f"{DELETED_FROM_THE_END} (the highest position in the file is 9)",
        ),
        Break(10, "events: key 5 was issued but the last row is 4 (rows deleted from the end)"),
    ]


def test_a_journal_emptied_of_every_row_ends_at_the_genesis_with_no_row_left(
    tmp_path: Path,
) -> None:
    _five_events(tmp_path)
    _tampered(tmp_path, "DELETE FROM events", "DELETE FROM inputs")
    gone = "was issued but the last row is 0 (rows deleted from the end)"
    assert _verified(tmp_path).breaks == [
        Break(
            1,
            "the chain ends at position 0 but the journal head is at 10: "
            f"{DELETED_FROM_THE_END} (the highest position in the file is 0)",
        ),
        Break(1, f"inputs: key 5 {gone}"),
        Break(1, f"events: key 5 {gone}"),
    ]


def test_a_key_sequence_behind_the_last_row_is_no_break(tmp_path: Path) -> None:
    """SQLite issues the next key after the highest of its sequence and the rows' keys: none
    was issued and lost, nothing was deleted."""
    _five_events(tmp_path)
    _tampered(tmp_path, "UPDATE sqlite_sequence SET seq = 3 WHERE name = 'events'")
    assert _breaks(tmp_path) == []


# --------------------------------------------------------------------------- within the chain


def test_a_position_used_twice_is_a_break_at_the_second_row(tmp_path: Path) -> None:
    _five_events(tmp_path)
    _tampered(tmp_path, "UPDATE events SET pos = 5 WHERE seq = 3")  # the position of input 3
    assert _breaks(tmp_path) == [
        Break(5, "events seq 3 (position 5): position used twice"),
        Break(6, f"inputs id 4 (position 7): position 6 {MISSING}"),
    ]


@pytest.mark.parametrize("value", ["0" * 64, "f" * 64], ids=["below", "above"])
@pytest.mark.parametrize(
    ("column", "breaks"),
    [
        # the link: its row does not follow, and the hash covers the link
        ("prev", [(6, f"events seq 3 (position 6): {UNFOLLOWED}"),
                  (6, f"events seq 3 (position 6): {EDITED}")]),
        # the hash: its row no longer matches it, and the next row no longer follows
        ("hash", [(6, f"events seq 3 (position 6): {EDITED}"),
                  (7, f"inputs id 4 (position 7): {UNFOLLOWED}")]),
    ],
)  # fmt: skip
def test_a_link_or_hash_replaced_is_a_break_where_it_shows_whichever_sorts_first(
    tmp_path: Path, value: str, column: str, breaks: list[tuple[int, str]]
) -> None:
    _five_events(tmp_path)
    _tampered(tmp_path, f"UPDATE events SET {column} = '{value}' WHERE seq = 3")
    assert _breaks(tmp_path) == [Break(pos, text) for pos, text in breaks]


# --------------------------------------------------------------------------- where the walk begins


@pytest.mark.parametrize("verified", ["0" * 64, "f" * 64], ids=["below", "above"])
def test_a_verified_head_its_row_no_longer_carries_is_a_break_at_it_even_at_the_first_row(
    tmp_path: Path, verified: str
) -> None:
    _five_events(tmp_path)
    assert _verified(tmp_path, Head(1, verified)).breaks == [
        Break(
            1,
            "the row at position 1, verified before, was changed or removed "
            "(the chain before it was rewritten)",
        ),
        Break(2, f"events seq 1 (position 2): {UNFOLLOWED}"),
    ]


def test_an_intact_chain_verifies_from_every_point_of_it(tmp_path: Path) -> None:
    head = _five_events(tmp_path)
    points = [GENESIS, *(Head(pos, digest) for pos, digest in sorted(_hashes(tmp_path).items()))]
    assert points[-1] == head
    for since in points:
        report = _verified(tmp_path, since)
        assert (report.breaks, report.rows, report.head) == ([], head.pos - since.pos, head)


def test_a_chain_of_hundreds_of_rows_verifies_intact(tmp_path: Path) -> None:
    """Positions and keys past 256 are compared by value: CPython shares one object for each
    integer up to 256 only, so that a comparison by identity would pass on shorter chains."""
    journal = journal_at(tmp_path)
    journal.append(
        input_row=("2026-01-01T00:00:00+00:00", "Tick", "{}"),
        events=[NewEvent("x.happened", None, "{}")] * 300,
    )
    journal.close()
    report = _verified(tmp_path)
    assert (report.breaks, report.rows, report.head.pos) == ([], 301, 301)


def test_rows_at_or_before_the_archived_head_are_rows_in_two_places(tmp_path: Path) -> None:
    _five_events(tmp_path)
    archived = Head(4, _hashes(tmp_path)[4])
    report = _verified(tmp_path, archived, after_archive=True)
    assert report.breaks == [
        Break(3, f"inputs: a live row at position 3, {ROW_IN_TWO_PLACES}"),
        Break(4, f"events: a live row at position 4, {ROW_IN_TWO_PLACES}"),
    ]
    assert report.rows == 6  # the walk itself starts after the archived head


def test_verification_reads_in_a_transaction_of_its_own_or_in_the_callers(
    tmp_path: Path,
) -> None:
    _five_events(tmp_path)
    conn = connect(tmp_path / "journal.sqlite")
    try:
        assert verify_chain(conn).ok
        assert not conn.in_transaction  # its own, ended
        conn.execute("BEGIN")
        assert verify_chain(conn).ok
        assert conn.in_transaction  # the caller's, left open
        conn.execute("ROLLBACK")
    finally:
        conn.close()
