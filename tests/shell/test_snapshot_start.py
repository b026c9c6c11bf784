"""A start from the journal's snapshots (controller/shell/table.py, checkpoint.py): the newest one
this version reads and that belongs to this journal; one it cannot read is named and an older
one (or the genesis) used instead; and when none can be read and the journal's start is pruned,
the start stops with one line and exit status 5 (docs/cli.md)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from controller.game.betting import Structure
from controller.shell.checkpoint import FORMAT, SnapshotNeededError
from controller.shell.cli import exit_status
from controller.shell.maintenance import Stored
from controller.shell.record_codec import encoder
from controller.shell.retention import Retention, RetentionConfig, confirm_stored
from controller.shell.table import TableRunner
from controller.table.state import TableState
from simulators.autoplay import AutoDealer
from simulators.table_journal import endless_dealer, journal_runner

DATA = Path(__file__).resolve().parents[1] / "data" / "snapshots"


def _play(
    path: Path,
    hands: int,
    budget: int | None,
    dealer: AutoDealer | None = None,
    runner: TableRunner | None = None,
) -> TableState:
    """``hands`` hands into the journal at ``path``, ten simulated minutes apart; with a
    ``budget``, every ten hands the pit confirms everything and retention prunes within it.
    ``dealer`` and ``runner``: a dealer and the runner of its journal, to go on with."""
    dealer = dealer or endless_dealer("start", 3)

    async def play() -> TableState:
        nonlocal runner
        runner = runner or journal_runner(path, dealer)
        journal = runner.journal
        retention = Retention(
            journal,
            RetentionConfig(live_hands=5, max_bytes=budget or 10**9, interval=0, inbox_seconds=60),
        )
        for hand in range(1, hands + 1):
            dealer.now += timedelta(minutes=10)
            assert dealer.play_hand()
            for item in dealer.run.inputs:
                await runner.submit(item)
            dealer.run.inputs.clear()
            if budget is not None and hand % 10 == 0:

                def round_() -> None:
                    journal.forget([row.id for row in journal.pending(10**6)])  # the broker's
                    journal.delete_outbox()
                    epoch, seq = journal.event_id(journal.last_seq())
                    confirm_stored(journal, Stored(datetime.now(UTC), "pit-1", epoch, seq))
                    retention.run_once(dealer.now)

                await runner.writer.call(round_)
        await runner.writer.close()
        return runner.state

    return asyncio.run(play())


def _rewrite_newest(path: Path, change: dict[str, object], *, rows: int = 1) -> list[int]:
    """Change the newest ``rows`` snapshots' documents (with a digest that matches, as a version
    that writes them so would); their input ids."""
    with sqlite3.connect(path) as conn:
        found = conn.execute(
            "SELECT input_id, state FROM snapshots ORDER BY input_id DESC LIMIT ?", (rows,)
        ).fetchall()
        for input_id, blob in found:
            document = json.loads(blob)
            for key, value in change.items():
                if key == "chain.hash":
                    document["chain"]["hash"] = value
                else:
                    document[key] = value
            name = str(document["format"])
            new = json.dumps(document).encode()
            digest = hashlib.sha256(name.encode() + new).hexdigest()
            conn.execute(
                "UPDATE snapshots SET core = ?, state = ?, digest = ? WHERE input_id = ?",
                (name, new, digest, input_id),
            )
    return [int(row[0]) for row in found]


def test_a_start_continues_from_the_newest_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    played = _play(path, 6, None)
    runner = journal_runner(path, endless_dealer("start", 3))
    report = runner.recover()
    with sqlite3.connect(path) as conn:
        newest = conn.execute("SELECT MAX(input_id) FROM snapshots").fetchone()[0]
    assert report.snapshot == newest
    assert report.snapshot_format == f"tablectl.snapshot/{FORMAT}"
    assert report.inputs == 0
    assert encoder(TableState)(runner.state) == encoder(TableState)(played)
    runner.journal.close()


def test_a_snapshot_of_another_chain_is_not_used_and_the_one_before_is(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    played = _play(path, 6, None)
    (newest,) = _rewrite_newest(path, {"chain.hash": "0" * 64})
    runner = journal_runner(path, endless_dealer("start", 3))
    report = runner.recover()
    assert 0 < report.snapshot < newest  # the one before, and the last hand replayed from it
    assert report.inputs > 0
    assert report.diverged == []
    assert report.unreadable == [f"input {newest}: its chain head at " + _pos(path, newest)]
    assert encoder(TableState)(runner.state) == encoder(TableState)(played)
    runner.journal.close()


def _pos(path: Path, input_id: int) -> str:
    with sqlite3.connect(path) as conn:
        blob = conn.execute("SELECT state FROM snapshots WHERE input_id = ?", (input_id,))
        return f"{json.loads(blob.fetchone()[0])['chain']['pos']} is not this chain's"


def test_a_newer_formats_snapshots_are_named_and_the_journal_replayed(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    played = _play(path, 4, None)
    _rewrite_newest(path, {"format": f"tablectl.snapshot/{FORMAT + 1}"}, rows=3)
    runner = journal_runner(path, endless_dealer("start", 3))
    report = runner.recover()
    assert report.snapshot == 0  # from the genesis: the journal's start is all here
    assert len(report.unreadable) == 3
    assert all(f"tablectl.snapshot/{FORMAT + 1}" in line for line in report.unreadable)
    assert encoder(TableState)(runner.state) == encoder(TableState)(played)
    runner.journal.close()


def test_a_start_that_reads_no_snapshot_of_a_pruned_journal_stops_with_exit_status_5(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite"
    _play(path, 40, 150_000)
    _rewrite_newest(path, {"format": f"tablectl.snapshot/{FORMAT + 1}"}, rows=3)
    runner = journal_runner(path, endless_dealer("start", 3))
    assert runner.journal.pruned()
    with pytest.raises(SnapshotNeededError) as caught:
        runner.recover()
    runner.journal.close()
    line = str(caught.value)
    assert "\n" not in line
    assert f"tablectl.snapshot/{FORMAT + 1}" in line
    assert "was pruned" in line
    assert "run the version that wrote it" in line
    assert exit_status(caught.value, 3) == 5
    assert exit_status(ExceptionGroup("daemon", [ValueError(), caught.value]), 3) == 5
    assert exit_status(ValueError("other"), 3) == 3


def _as_format_1(path: Path) -> list[int]:
    """Every snapshot of the journal written again as the version before format 2 wrote it
    (format 1: the rules profile without its betting structure, every table no-limit), with a
    digest that matches; their input ids, newest first."""
    format_1 = json.loads((DATA / "format-1.json").read_bytes())
    with sqlite3.connect(path) as conn:
        found = conn.execute("SELECT input_id, state FROM snapshots ORDER BY input_id DESC")
        rows = found.fetchall()
        for input_id, blob in rows:
            document = json.loads(blob)
            profile = document["state"]["profile"]
            assert profile.pop("betting.structure") == "no_limit"
            assert profile.pop("betting.cap") == 4
            assert profile.keys() == format_1["state"]["profile"].keys()  # format 1's keys
            document["format"] = "tablectl.snapshot/1"
            new = json.dumps(document).encode()
            digest = hashlib.sha256(b"tablectl.snapshot/1" + new).hexdigest()
            conn.execute(
                "UPDATE snapshots SET core = ?, state = ?, digest = ? WHERE input_id = ?",
                ("tablectl.snapshot/1", new, digest, input_id),
            )
    return [int(row[0]) for row in rows]


def test_a_pruned_journal_whose_snapshots_are_format_1_starts_on_the_newest_and_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite"
    dealer = endless_dealer("start", 3)
    played = _play(path, 40, 150_000, dealer)
    newest, *_ = _as_format_1(path)
    runner = journal_runner(path, endless_dealer("start", 3))
    assert runner.journal.pruned()  # no replay from the genesis: only the snapshot will do
    epoch = runner.journal.epoch
    report = runner.recover()
    assert (report.snapshot, report.snapshot_format) == (newest, "tablectl.snapshot/1")
    assert (report.inputs, report.unreadable, report.diverged) == (0, [], [])
    assert encoder(TableState)(runner.state) == encoder(TableState)(played)
    assert runner.state.profile.betting_structure is Structure.NO_LIMIT
    # and goes on: five more hands, the same epoch, and their ends in format 2
    after = _play(path, 5, None, dealer, runner)
    assert after.hands_started == played.hands_started + 5
    assert sum(after.stacks.values()) == sum(played.stacks.values())
    assert encoder(TableState)(after) == encoder(TableState)(dealer.run.state)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT input_id, core FROM snapshots WHERE input_id > ?", (newest,))
        written = rows.fetchall()
    assert written  # the newest the journal keeps, each of the hands played on
    assert {core for _, core in written} == {f"tablectl.snapshot/{FORMAT}"}
    reopened = journal_runner(path, endless_dealer("start", 3))
    assert reopened.journal.epoch == epoch
    again = reopened.recover()
    assert again.snapshot_format == f"tablectl.snapshot/{FORMAT}"
    assert encoder(TableState)(reopened.state) == encoder(TableState)(after)
    reopened.journal.close()
