"""The journal: one transaction per input, AUTOINCREMENT sequence, a hash chain that breaks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.shell.chain import one_line
from controller.shell.journal import (
    EventId,
    Journal,
    JournalError,
    NewCommand,
    NewDispatch,
    NewEpoch,
    NewEvent,
)

GENESIS = {"table_id": "T1", "profile": "rrop-cash", "stacks": {"1": 10, "2": 10}}


def journal_at(path: Path) -> Journal:
    return Journal.open(path / "journal.sqlite", table_id="T1", genesis=GENESIS)


def fill(journal: Journal, inputs: int = 3) -> None:
    for n in range(inputs):
        journal.append(
            input_row=(f"2026-01-01T00:00:0{n}+00:00", "Tick", f'{{"n":{n}}}'),
            events=[NewEvent("x.happened", "T1-00001", f'{{"n":{n}}}')] * 2,
            dispatches=[NewDispatch("shuffler", f'{{"d":{n}}}')],
            command=NewCommand(f"txn-{n}", "start_hand", "{}", lambda seqs: {"seqs": seqs}),
        )


def test_a_new_journal_has_an_epoch_and_its_genesis(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    assert len(journal.epoch) == 12
    assert journal.genesis == GENESIS
    epoch = journal.epoch
    journal.close()
    again = journal_at(tmp_path)
    assert again.epoch == epoch  # the epoch is the journal's lifetime, not the process's
    again.close()
    other = Journal.open(tmp_path / "other.sqlite", table_id="T1")
    assert other.epoch != epoch
    other.close()


def test_another_tables_journal_is_refused(tmp_path: Path) -> None:
    journal_at(tmp_path).close()
    with pytest.raises(JournalError, match="journal of table 'T1', not 'T2'"):
        Journal.open(tmp_path / "journal.sqlite", table_id="T2")


def test_settings_are_wal_and_synchronous_full(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    conn = journal._conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    journal.close()


def test_one_transaction_writes_input_events_outbox_dispatch_and_inbox(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    fill(journal, 2)
    assert journal.counts() == {
        "inputs": 2,
        "events": 4,
        "commands": 2,
        "dispatches": 2,
        "outbox": 8,
        "snapshots": 0,
    }
    assert journal.command_response("txn-1") == {"seqs": [3, 4]}
    assert journal.command_response("txn-9") is None
    pending = journal.pending()
    assert [(r.seq, r.stream) for r in pending[:4]] == [
        (1, "public"),
        (1, "secure"),
        (2, "public"),
        (2, "secure"),
    ]
    journal.close()


def test_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    fill(journal, 1)

    def explode(seqs: list[int]) -> dict[str, object]:
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        journal.append(
            input_row=("2026-01-01T00:00:00+00:00", "Tick", "{}"),
            events=[NewEvent("x", None, "{}")],
            command=NewCommand("txn-x", "award", "{}", explode),
        )
    assert journal.counts()["inputs"] == 1
    assert journal.counts()["events"] == 2
    assert journal.verify().ok
    journal.append(input_row=None, events=[NewEvent("y", None, "{}")])  # the chain goes on
    assert journal.verify().ok
    journal.close()


def test_sequence_numbers_are_never_reused(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    fill(journal, 1)
    journal._conn.execute("DELETE FROM events WHERE seq = 2")
    appended = journal.append(input_row=None, events=[NewEvent("x", None, "{}")])
    assert appended.seqs == [3]
    assert journal.last_seq() == 3
    journal.close()


def test_intact_chain_verifies(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    fill(journal, 5)
    report = journal.verify()
    assert report.ok, report.problems
    assert report.rows == 5 * (1 + 2 + 1 + 1)
    journal.close()


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("UPDATE inputs SET body = '{\"n\":7}' WHERE id = 2", "edited"),
        ("UPDATE events SET type = 'hand.misdeal' WHERE seq = 3", "edited"),
        ("UPDATE commands SET response = '{}' WHERE id = 1", "edited"),
        ("UPDATE dispatches SET device = 'other' WHERE id = 3", "edited"),
        ("DELETE FROM events WHERE seq = 4", "missing"),
        ("DELETE FROM inputs WHERE id = 1", "missing"),
        ("DELETE FROM commands WHERE id = 3", "rows deleted from the end"),
        ("DELETE FROM commands WHERE id = 3", "(the highest position in the file is 14)"),
    ],
)
def test_verify_detects_edits_and_deletions(tmp_path: Path, sql: str, expected: str) -> None:
    journal = journal_at(tmp_path)
    fill(journal, 3)
    journal._conn.execute(sql)
    report = journal.verify()
    assert not report.ok
    assert any(expected in problem for problem in report.problems), report.problems
    journal.close()


def test_verify_detects_a_forged_row_with_a_recomputed_hash(tmp_path: Path) -> None:
    from controller.shell.chain import row_hash

    journal = journal_at(tmp_path)
    fill(journal, 3)
    conn = journal._conn
    prev = conn.execute("SELECT prev FROM inputs WHERE id = 2").fetchone()[0]
    forged = row_hash(prev, "inputs", [2, "2026-01-01T00:00:01+00:00", "Tick", '{"n":99}'])
    conn.execute("UPDATE inputs SET body = '{\"n\":99}', hash = ? WHERE id = 2", (forged,))
    report = journal.verify()
    assert any("does not follow" in p for p in report.problems), report.problems
    journal.close()


def test_open_existing_refuses_what_is_not_a_journal(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="no journal"):
        Journal.open_existing(tmp_path / "missing.sqlite")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(JournalError, match="not a journal"):
        Journal.open_existing(junk)
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).execute("CREATE TABLE meta (key TEXT, value TEXT)").connection.commit()
    with pytest.raises(JournalError, match="not a journal"):
        Journal.open_existing(empty)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["append", "epoch", "deliver", "delete", "crash"]), max_size=25))
def test_outbox_keeps_order_and_nothing_is_lost_across_crashes(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    """The pending messages are always exactly those appended and not yet acknowledged; the
    rows a write hands over are those the journal reads back; an acknowledged row is deleted by
    the next write, and one a crash kept from its delete is pending again (published twice, never
    lost)."""
    path = tmp_path_factory.mktemp("outbox")
    journal = journal_at(path)
    kept: list[tuple[int, int, str]] = []  # (row id, seq, stream) in the database
    acked: set[int] = set()  # acknowledged in this run, not yet deleted
    for step in steps:
        if step in ("append", "epoch"):
            # "epoch": one transaction ends an epoch with its first event and begins the next
            first = journal.last_seq() + 2
            written = journal.append(
                input_row=None,
                events=[NewEvent("x", None, "{}")] * (2 if step == "epoch" else 1),
                epoch=NewEpoch(f"e{first}", first, "test") if step == "epoch" else None,
            )
            kept = [row for row in kept if row[0] not in acked] + [
                (r.id, r.seq, r.stream) for r in written.outbox
            ]
            acked = set()
            assert [(r.seq, r.stream) for r in written.outbox] == [
                (seq, stream) for seq in written.seqs for stream in ("public", "secure")
            ]
            if step == "epoch":  # the first event ends the old epoch, the second begins e{first}
                assert written.outbox[0].event.epoch != f"e{first}"
                assert written.outbox[-1].event == EventId(f"e{first}", 1)
            count = len(written.outbox)
            assert list(written.outbox) == journal.pending(count, written.outbox[0].id - 1)
        elif step == "deliver":
            waiting = [row for row in kept if row[0] not in acked]
            if waiting:
                journal.forget([waiting[0][0]])
                acked.add(waiting[0][0])
        elif step == "delete":
            journal.delete_outbox()
            kept, acked = [row for row in kept if row[0] not in acked], set()
        elif step == "crash":
            journal._conn.close()  # no checkpoint, no clean close
            journal = journal_at(path)
            acked = set()  # their deletes were never written: they go out again
        assert [(r.id, r.seq, r.stream) for r in journal.pending(1000)] == kept
        assert journal.pending_count() == len(kept) - len(acked)
    journal.close()


def test_an_error_quoting_damaged_bytes_is_told_on_one_line() -> None:
    error = sqlite3.DatabaseError(
        'malformed database schema - unrecognized token: "a\nb\x00\u2028"'
    )
    text = one_line(error)
    assert text == 'malformed database schema - unrecognized token: "a\\nb\\x00\\u2028"'
    assert len(text.splitlines()) == 1
