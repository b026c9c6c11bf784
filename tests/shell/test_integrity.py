"""The journal's integrity: epochs and event ids, verification from a verified head, accepted
breaks, the broker's head against the journal, device events recognised by their origin."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.shell.chain import CHAINED, GENESIS, GENESIS_HASH, Head, row_hash
from controller.shell.integrity import Integrity
from controller.shell.journal import Journal, NewCommand, NewEpoch, NewEvent
from controller.shell.table import RecoveryReport, TableRunner
from controller.shell.writer import JournalWriter
from controller.table.codec import event_to_json
from controller.table.event_types import JournalAccepted
from controller.table.events import Severity, TableEvent
from controller.table.inputs import DeviceFaultCleared, Origin
from controller.table.state import TableState
from simulators.table_journal import genesis_of
from tests.shell.test_replay import played

GENESIS_TABLE = {"table_id": "T1", "profile": "rrop-cash", "stacks": {"1": 10, "2": 10}}


def journal_at(path: Path) -> Journal:
    return Journal.open(path / "journal.sqlite", table_id="T1", genesis=GENESIS_TABLE)


def events(journal: Journal, count: int, **kw: Any) -> list[int]:
    seqs = []
    for n in range(count):
        appended = journal.append(
            input_row=(f"2026-01-01T00:00:0{n % 10}+00:00", "Tick", f'{{"n":{n}}}'),
            events=[NewEvent("x.happened", None, f'{{"n":{n}}}')],
            **kw,
        )
        seqs += appended.seqs
    return seqs


def rewrite_chain(path: Path) -> None:
    """Recompute every hash of the chain: an edit made by someone who knows the format."""
    with sqlite3.connect(path) as conn:
        rows = []
        for table, columns in CHAINED.items():
            select = ", ".join((*columns, "pos"))
            for *content, pos in conn.execute(f"SELECT {select} FROM {table}"):
                rows.append((pos, table, content))
        prev = GENESIS_HASH
        for pos, table, content in sorted(rows, key=lambda r: r[0]):
            digest = row_hash(prev, table, content)
            conn.execute(
                f"UPDATE {table} SET prev = ?, hash = ? WHERE pos = ?",
                (prev, digest, pos),
            )
            prev = digest
        conn.execute("UPDATE meta SET value = ? WHERE key = 'head_hash'", (prev,))


# --------------------------------------------------------------------------- epochs


def test_a_new_epoch_numbers_its_events_from_one_and_the_old_ids_stay(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    first = journal.epoch
    assert events(journal, 3) == [1, 2, 3]
    answered: list[Any] = []

    def respond(seqs: list[int]) -> dict[str, Any]:
        answered.append(seqs)
        return {}

    journal.append(
        input_row=None,
        events=[NewEvent("a", None, "{}"), NewEvent("b", None, "{}")],
        epoch=NewEpoch("e2", 4, "accepted"),
        command=NewCommand("t", "x", "{}", respond),
    )
    assert journal.epoch == "e2"
    assert answered == [[1, 2]]  # a response names the events as the wire does
    assert [journal.event_id(k) for k in (1, 3, 4, 5)] == [
        (first, 1),
        (first, 3),
        ("e2", 1),
        ("e2", 2),
    ]
    assert [(r.event, r.seq) for r in journal.pending()][-2:] == [(("e2", 2), 5)] * 2
    assert journal.pending()[-1].chain == journal.chain_of(5)
    journal.close()
    again = journal_at(tmp_path)  # the epochs are the journal's, not the process's
    assert [e.name for e in again.epochs] == [first, "e2"]
    assert again.origin == first
    assert again.verify().ok
    again.close()


def test_a_journal_from_before_epochs_gets_its_one_epoch(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    events(journal, 2)
    epoch = journal.epoch
    journal.close()
    with sqlite3.connect(tmp_path / "journal.sqlite") as conn:
        conn.execute("DROP TABLE epochs")
        conn.execute("DELETE FROM meta WHERE key = 'origin'")
    old = Journal.open_existing(tmp_path / "journal.sqlite")  # read only: no table made
    assert old.event_id(2) == (epoch, 2)
    old.close()
    opened = journal_at(tmp_path)
    assert opened.epochs[0].name == epoch
    assert opened.origin == epoch
    opened.close()


# --------------------------------------------------------------------------- verification


def test_verify_from_a_verified_head_reads_only_what_came_after(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    events(journal, 4)
    head = journal.head
    events(journal, 2)
    report = journal.verify(head)
    assert report.ok, report.problems
    assert report.rows == 4  # two inputs and their events
    assert report.head == journal.head
    full = journal.verify()
    assert full.ok
    assert full.rows == 12
    assert full.since == GENESIS


def test_a_chain_rewritten_under_the_verified_head_is_caught(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    events(journal, 4)
    verified = journal.head
    journal.close()
    with sqlite3.connect(tmp_path / "journal.sqlite") as conn:
        conn.execute("UPDATE events SET body = '{\"n\":99}' WHERE seq = 1")
    rewrite_chain(tmp_path / "journal.sqlite")
    again = journal_at(tmp_path)
    assert again.verify().ok  # a whole chain rewritten is consistent on its own…
    report = again.verify(verified)
    assert any("verified before, was changed" in p for p in report.problems)  # …not with it
    again.close()


def test_breaks_maintenance_accepted_are_listed_apart(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    events(journal, 3)
    journal.close()
    with sqlite3.connect(tmp_path / "journal.sqlite") as conn:
        conn.execute("DELETE FROM inputs WHERE id = 2")
    journal = journal_at(tmp_path)
    broken = journal.verify()
    assert not broken.ok
    decision = JournalAccepted("integrity alarm (chain)", "checked", journal.head.pos, 3, "e2")
    event = TableEvent(decision, datetime.now(UTC), None, (), Severity.WARN)
    journal.append(input_row=None, events=[NewEvent(event.type, None, event_to_json(event))])
    report = journal.verify()
    assert report.ok, report.problems
    assert [b.text for b in report.accepted] == broken.problems
    events(journal, 1)
    with sqlite3.connect(tmp_path / "journal.sqlite") as conn:  # a later edit is not accepted
        conn.execute("UPDATE inputs SET body = 'x' WHERE id = 4")
    assert not journal.verify().ok
    journal.close()


def test_a_damaged_row_is_a_break_not_an_exception(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    events(journal, 3)
    journal.close()
    with sqlite3.connect(tmp_path / "journal.sqlite") as conn:
        conn.execute("UPDATE events SET body = x'ff00fe' WHERE seq = 1")
        conn.execute("UPDATE inputs SET pos = 'two' WHERE id = 2")
    journal = Journal.open_existing(tmp_path / "journal.sqlite")
    report = journal.verify()
    journal.close()
    assert any(
        "inputs id 2 (no readable position): the row is damaged" in p for p in report.problems
    )
    assert any("events seq 1" in p for p in report.problems)


# --------------------------------------------------------------------------- the broker's head


def integrity_at(tmp_path: Path) -> Integrity:
    journal = journal_at(tmp_path)
    runner = TableRunner(JournalWriter(journal), TableState.__new__(TableState), "shuffler")
    return Integrity(runner, "T1")


def head_of(integrity: Integrity, key: int, **change: Any) -> dict[str, Any]:
    journal = integrity.journal
    epoch, seq = journal.event_id(key)
    chain = journal.chain_of(key)
    assert chain is not None
    body = {"journal": journal.origin, "epoch": epoch, "seq": seq}
    return {**body, "pos": chain.pos, "hash": chain.hash, **change}


def test_a_head_the_journal_holds_is_consistent(tmp_path: Path) -> None:
    integrity = integrity_at(tmp_path)
    events(integrity.journal, 3)
    assert integrity._rollback_of(None) is None
    assert integrity._rollback_of(head_of(integrity, 3)) is None
    assert integrity._rollback_of(head_of(integrity, 2)) is None  # the broker is behind
    other = head_of(integrity, 3, journal="another", seq=99)
    assert integrity._rollback_of(other) is None  # another journal: no id in common
    assert integrity._rollback_of({"epoch": 3}) is None  # unreadable: ignored, logged


def test_a_head_ahead_of_the_journal_is_a_rollback_that_says_what_was_lost(
    tmp_path: Path,
) -> None:
    integrity = integrity_at(tmp_path)
    journal = integrity.journal
    events(journal, 3)
    journal.set_meta({"unchecked_from": "3"})  # events 3… were journaled since the last check
    ahead = {**head_of(integrity, 3), "seq": 7}
    rollback = integrity._rollback_of(ahead)
    assert rollback is not None
    assert rollback.first_seq == 3
    assert rollback.lost.public() == {"epoch": journal.epoch, "from_seq": 3, "to_seq": 7}
    assert "ends at T1:" in rollback.reason
    other = integrity._rollback_of(head_of(integrity, 2, hash="0" * 64))
    assert other is not None
    assert other.lost.from_seq is None  # which ones differ is not known
    assert other.first_seq == 1  # every event still in the outbox goes in the new epoch
    unknown = integrity._rollback_of(head_of(integrity, 2, epoch="later"))
    assert unknown is not None
    assert "epoch this journal does not have" in unknown.reason


def test_a_rollback_begins_an_epoch_with_the_unconfirmed_events(tmp_path: Path) -> None:
    integrity = integrity_at(tmp_path)
    journal = integrity.journal
    events(journal, 4)
    old = journal.epoch
    journal.set_meta({"unchecked_from": "3"})

    async def check() -> None:
        await integrity.check_head({**head_of(integrity, 4), "seq": 9})
        await integrity.runner.writer.close()

    asyncio.run(check())
    journal = journal_at(tmp_path)
    assert [e.first_seq for e in journal.epochs] == [1, 3]
    new = journal.epochs[-1].name
    assert [journal.event_id(k) for k in (2, 3, 6)] == [(old, 2), (new, 1), (new, 4)]
    started, alarm = (json.loads(r.body) for r in list(journal.events())[-2:])
    assert started["type"] == "journal.epoch.started"
    assert started["data"]["moved"] == {"epoch": new, "from_seq": 1, "to_seq": 2}
    assert alarm["data"]["lost"] == {"epoch": old, "from_seq": 3, "to_seq": 9}
    assert alarm["severity"] == "critical"
    assert journal.meta_value("unchecked_from") is None
    assert journal.verify().ok
    journal.close()


def test_at_start_a_broken_chain_or_a_replay_difference_holds_the_table(tmp_path: Path) -> None:
    integrity = integrity_at(tmp_path)
    events(integrity.journal, 2)
    assert integrity.at_start(RecoveryReport()) == []
    assert not integrity.held
    assert integrity.journal.verified_head() == integrity.journal.head
    assert integrity.journal.meta_value("unchecked_from") == "3"
    alarms = integrity.at_start(RecoveryReport(diverged=[2]))
    assert [a.kind for a in alarms] == ["replay"]
    assert integrity.held
    assert integrity.refusal("start_hand") is not None
    assert integrity.refusal("journal_accept") is None


# --------------------------------------------------------------------------- device events


def cleared(seq: int, boot: int = 7, when: float = 0) -> DeviceFaultCleared:
    ts = datetime.fromtimestamp(1_800_000_000 + when, UTC)
    return DeviceFaultCleared(ts, "shuffler", "LID_OPEN", 3, origin=Origin(boot, seq))


@pytest.mark.parametrize("restart", [False, True])
def test_a_device_event_is_recognised_by_its_origin_not_its_bytes(
    tmp_path: Path, restart: bool
) -> None:
    dealer, _ = played(1, 0)
    genesis = genesis_of(dealer.scenario)
    path = tmp_path / "journal.sqlite"

    def runner() -> TableRunner:
        journal = Journal.open(path, table_id=str(genesis["table_id"]), genesis=genesis)
        state = dealer.run.state
        return TableRunner(JournalWriter(journal), state, "shuffler")

    async def scenario() -> list[bool]:
        first = runner()
        kept = [await first.submit(cleared(5)) is not None]
        if restart:  # SIGKILL between the journal and the device's acknowledgement
            await first.writer.close()
            first = runner()
            first.recover()
        # the device sends it again, received later: other bytes, the same event
        kept.append(await first.submit(cleared(5, when=2)) is not None)
        kept.append(await first.submit(cleared(6, when=3)) is not None)  # the next event
        kept.append(await first.submit(cleared(5, when=4)) is not None)  # numbers wrapped
        kept.append(await first.submit(cleared(6, boot=8, when=5)) is not None)  # rebooted
        await first.writer.close()
        return kept

    assert asyncio.run(scenario()) == [True, False, True, True, True]


def test_a_journal_verified_at_the_genesis_has_head_zero(tmp_path: Path) -> None:
    journal = journal_at(tmp_path)
    assert journal.verified_head() == GENESIS
    journal.set_meta({"verified_pos": "x", "verified_hash": "y"})
    assert journal.verified_head() == GENESIS  # damaged: verify from the genesis again
    journal.set_meta({"verified_pos": "2", "verified_hash": "h"})
    assert journal.verified_head() == Head(2, "h")
    journal.close()


def tampered(journal: Journal) -> None:
    """A row written, then edited."""
    events(journal, 1)
    conn = journal._conn
    conn.execute("UPDATE inputs SET body = '{}' WHERE id = (SELECT MAX(id) FROM inputs)")


def test_while_running_new_rows_are_verified_and_an_edit_raises_the_alarm(
    tmp_path: Path,
) -> None:
    integrity = integrity_at(tmp_path)
    journal = integrity.journal
    integrity.at_start(RecoveryReport())
    changes: list[str | None] = []
    integrity.on_change = lambda: changes.append(integrity.alarm_line)

    async def scenario() -> None:
        try:
            await integrity.runner.writer.call(events, journal, 3)
            await integrity.verify_new()
            assert journal.verified_head() == journal.head  # the verified head moved on
            assert changes == []
            await integrity.runner.writer.call(tampered, journal)
            await integrity.verify_new()
        finally:
            await integrity.runner.writer.close()

    asyncio.run(scenario())
    assert [a.kind for a in integrity.alarms] == ["chain"]
    assert not integrity.held  # the table goes on; the alarm waits for maintenance
    assert "broke while the table ran" in (changes[0] or "")
    again = journal_at(tmp_path)
    alarm = json.loads(list(again.events())[-1].body)
    assert alarm["type"] == "integrity.alarm"
    assert alarm["data"]["journal"] == "chain"
    again.close()
