"""The chain's format: a row's hash is SHA-256 over the compact JSON, in UTF-8 as it is, of the
previous row's hash (64 zeros before the first), its table and its content; a new journal is of
schema 1 and a newer one is refused; a point of the chain and a break are values."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import sqlite3
from pathlib import Path

import pytest

from controller.shell.chain import Break, Head
from controller.shell.journal import Journal, JournalError


def test_a_rows_hash_is_sha256_over_compact_utf8_json_of_the_link_table_and_content(
    tmp_path: Path,
) -> None:
    journal = Journal.open(tmp_path / "j.sqlite", table_id="T1")
    journal.append(input_row=("2026-01-01T00:00:00+00:00", "Tick", '{"n":"é"}'), events=[])
    journal.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "j.sqlite")) as conn:
        prev, digest = conn.execute("SELECT prev, hash FROM inputs WHERE pos = 1").fetchone()
    assert prev == "0" * 64
    content = r'[1,"2026-01-01T00:00:00+00:00","Tick","{\"n\":\"é\"}"]'  # é as it is, not \u00e9
    text = f'["{prev}","inputs",{content}]'
    assert digest == hashlib.sha256(text.encode()).hexdigest()


def test_a_new_journal_is_of_schema_1_and_one_of_a_newer_schema_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.sqlite"
    journal = Journal.open(path, table_id="T1")
    assert journal.meta_value("schema") == "1"
    journal.close()
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    with pytest.raises(JournalError, match="has journal schema 2, newer than ours"):
        Journal.open(path, table_id="T1")


def test_a_point_of_the_chain_and_a_break_are_values() -> None:
    head, again = Head(3, "ab" * 32), Head(3, "ab" * 32)
    assert hash(head) == hash(again)
    assert {head, again, Head(4, "ab" * 32)} == {head, Head(4, "ab" * 32)}
    assert {Break(3, "edited"), Break(3, "edited")} == {Break(3, "edited")}
    with pytest.raises(dataclasses.FrozenInstanceError):
        head.pos = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Break(3, "edited").text = "fine"  # type: ignore[misc]
