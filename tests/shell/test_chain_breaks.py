"""The journal's chain names each break where it is: the position of the row edited, of the row
deleted from the middle, the end the chain stops at when rows were deleted from it, and the key
issued but gone; a chain rewritten under a verified head at that head's position."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from controller.shell.chain import Break, Head
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
