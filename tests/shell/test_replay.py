"""Replaying a journal gives the same state and the same events (property)."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.shell.snapshot import snapshot
from controller.shell.table import RecoveryReport
from controller.table.inputs import Input
from controller.table.state import TableState
from simulators.autoplay import AutoDealer, Style, random_table
from simulators.table_journal import journal_runner


def journaled(path: Path, dealer: AutoDealer, inputs: list[Input]) -> TableState:
    """The table after ``inputs`` went through the shell's runner into a journal at ``path``."""

    async def live() -> TableState:
        runner = journal_runner(path, dealer)
        for item in inputs:
            await runner.submit(item)
        await runner.writer.close()
        return runner.state

    return asyncio.run(live())


def played(seed: int, hands: int) -> tuple[AutoDealer, list[Input]]:
    rng = random.Random(seed)
    dealer = AutoDealer(random_table(rng), rng, Style(muck_loser=0.2))
    for _ in range(hands):
        if not dealer.play_hand():
            break
    return dealer, dealer.run.inputs


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10**6), hands=st.integers(1, 3))
def test_replay_gives_the_live_state_and_events(
    tmp_path_factory: pytest.TempPathFactory, seed: int, hands: int
) -> None:
    dealer, inputs = played(seed, hands)
    path = tmp_path_factory.mktemp("replay") / "journal.sqlite"
    state = journaled(path, dealer, inputs)
    assert snapshot(state, seq=0, epoch="e") == snapshot(dealer.run.state, seq=0, epoch="e")

    async def replay() -> RecoveryReport:
        runner = journal_runner(path, dealer)
        report = runner.recover()
        assert report.diverged == []  # every input gave the events it gave the first time
        assert snapshot(runner.state, seq=0, epoch="e") == snapshot(state, seq=0, epoch="e")
        assert runner.state.stacks == state.stacks
        assert runner.state.last_hand == state.last_hand
        assert runner.state.audit == state.audit  # the deck audit's record (SHF-INFO) too
        assert runner.journal.verify().ok
        await runner.writer.close()
        return report

    shortcut = asyncio.run(replay())  # from the last snapshot (between the last two hands)
    completed = dealer.run.state.hands_started - (dealer.run.state.hand is not None)
    assert (shortcut.snapshot > 0) == (completed > 0)
    with sqlite3.connect(path) as conn:  # without snapshots: from the genesis
        conn.execute("DELETE FROM snapshots")
    full = asyncio.run(replay())
    assert full.snapshot == 0
    assert full.inputs == len(inputs)
    assert full.inputs >= shortcut.inputs


def test_a_damaged_or_foreign_snapshot_is_not_used(tmp_path: Path) -> None:
    dealer, inputs = played(11, 2)
    path = tmp_path / "journal.sqlite"
    journaled(path, dealer, inputs)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0] >= 1
        conn.execute("UPDATE snapshots SET state = zeroblob(64)")  # damaged
    runner = journal_runner(path, dealer)
    assert runner.recover().snapshot == 0
    assert runner.state.stacks == dealer.run.state.stacks
    runner.journal.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE snapshots SET core = 'another core'")
    runner = journal_runner(path, dealer)
    assert runner.recover().snapshot == 0  # its digest no longer matches: damaged
    runner.journal.close()
