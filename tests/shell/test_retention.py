"""Retention: archive segments, the chain across them, pruning only what is stored elsewhere,
and the pit's ``stored`` confirmation through the real gate (docs/operations.md, "Retention")."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.keyring import parse_keyring
from controller.shell.chain import Head
from controller.shell.commands import CommandHandler
from controller.shell.export import export_events
from controller.shell.gate import Gate, Policy
from controller.shell.journal import Journal, JournalError
from controller.shell.pruned_runs import span_of
from controller.shell.retention import Retention, RetentionConfig
from controller.shell.salvage import salvage
from controller.shell.segments import PRUNED
from controller.shell.space import Reserve, is_full
from controller.signing import new_key, sign_request
from controller.table.inputs import DeviceFaultCleared, Origin, StartHand
from simulators.table_journal import endless_dealer, journal_runner
from tests.disk import fill as fill_disk
from tests.disk import small_disk
from tests.played import inputs_of
from tests.test_layering import ROOT

FUTURE = datetime.now(UTC) + timedelta(days=3650)  # every input is older than any window
SMALL = RetentionConfig(live_hands=3, inbox_seconds=0, segment_rows=1500, recent_inputs=100)


@pytest.fixture
def played(played_journal: Path) -> Path:
    """A journal of 40 hands whose events the broker acknowledged (an empty outbox), the run's
    one (tests/played.py): copied before it is opened."""
    return played_journal


@pytest.fixture
def journal(played: Path, tmp_path: Path) -> Iterator[Journal]:
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(played, path)
    opened = Journal.open_existing(path)
    yield opened
    opened.close()


def events(journal: Journal) -> list[str]:
    return list(export_events(journal))


def test_archive_verify_export_and_replay_round_trip(journal: Journal, played: Path) -> None:
    before = events(journal)
    report = Retention(journal, SMALL).run_once(FUTURE)
    assert report.archived >= 2
    assert journal.counts()["events"] < len(before) // 5  # most rows left the database
    verified = journal.verify(segments=True)
    assert verified.ok, verified.problems
    assert verified.segments == report.archived
    assert journal.verify(journal.verified_head()).ok  # a start, from before the archive
    assert events(journal) == before
    hand = journal.segments()[0].header["hands"][1]
    of_hand = list(export_events(journal, hand))
    assert of_hand
    assert of_hand == [e for e in before if json.loads(e).get("hand_id") == hand]
    # a start replays from the snapshot; the archived rows are not needed
    runner = journal_runner(journal.path, endless_dealer("retention"))
    recovered = runner.recover()
    assert recovered.diverged == []
    runner.journal.close()


def test_a_replay_reads_the_archived_events_then_the_live_ones(journal: Journal) -> None:
    """The pit's replay of a range that spans the archive and the live rows gets every event of
    it, in order, with the bodies the journal wrote."""
    last = journal.last_seq()
    before = journal.events_between(1, last)
    assert [key for key, _ in before] == list(range(1, last + 1))
    Retention(journal, SMALL).run_once(FUTURE)
    archived_upto = max(segment.keys["events"][1] for segment in journal.segments())
    assert 1 < archived_upto < last  # the range below spans both
    assert journal.events_between(1, last) == before
    middle = (archived_upto - 5, archived_upto + 5)
    assert journal.events_between(*middle) == [r for r in before if middle[0] <= r[0] <= middle[1]]


def _archived(journal: Journal) -> list[Any]:
    Retention(journal, SMALL).run_once(FUTURE)
    segments = journal.segments()
    assert len(segments) >= 2
    return segments


def _one_problem(journal: Journal) -> str:
    report = journal.verify(segments=True)
    assert not report.ok
    return report.problems[0]


def test_a_flipped_byte_in_a_segment_is_named(journal: Journal) -> None:
    segment = _archived(journal)[1]
    path = journal.segments_dir / segment.name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    problem = _one_problem(journal)
    assert segment.name in problem
    assert "sha256" in problem
    assert "\n" not in problem


def test_a_deleted_segment_is_named(journal: Journal) -> None:
    segment = _archived(journal)[0]
    (journal.segments_dir / segment.name).unlink()
    problem = _one_problem(journal)
    assert segment.name in problem
    assert "missing" in problem


def test_swapped_segments_are_named(journal: Journal) -> None:
    first, second = _archived(journal)[:2]
    a, b = journal.segments_dir / first.name, journal.segments_dir / second.name
    data = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(data)
    problems = journal.verify(segments=True).problems
    assert any(first.name in p for p in problems)
    assert any(second.name in p for p in problems)


def test_a_deleted_segment_record_is_named(journal: Journal) -> None:
    segment = _archived(journal)[0]
    journal.read("DELETE FROM segments WHERE name = ?", (segment.name,))
    assert f"positions 1-{segment.last_pos} are in no segment" in _one_problem(journal)


#: A process that runs one retention round and is killed (SIGKILL) at the step it is given.
KILLED_AT = """
import os, signal, sys
from datetime import datetime
from pathlib import Path
from controller.shell.journal import Journal
from controller.shell.retention import Retention, RetentionConfig

def hook(at: str) -> None:
    if at == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)

journal = Journal.open_existing(Path(sys.argv[1]))
config = RetentionConfig(
    live_hands=3, inbox_seconds=0, segment_rows=1500, recent_inputs=100, max_bytes=1048576
)
retention = Retention(journal, config, hook=hook)
if len(sys.argv) > 4:
    # The disk refuses the round's first write. On a disk filled to the last byte SQLite may
    # still write into WAL space it already has (a WAL started over after a checkpoint): the
    # refusal is made certain here rather than left to where the WAL stands.
    import errno
    write, refused = retention.write, []

    def first_refused(fn, /, *args, **kwargs):
        if not refused:
            refused.append(fn)
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(fn, *args, **kwargs)

    retention.write = first_refused
retention.run_once(datetime.fromisoformat(sys.argv[3]))
"""


def round_killed_at(path: Path, step: str, *, refused: bool = False) -> None:
    """A retention round over the journal at ``path`` in another process, SIGKILLed at ``step``
    (``refused``: the disk refuses the round's first write)."""
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AT, str(path), step, FUTURE.isoformat()]
        + (["refused"] if refused else []),
        check=False,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]


@pytest.mark.parametrize("step", ["written", "published", "committed", "marked"])
def test_a_process_killed_at_any_step_loses_nothing_and_keeps_nothing_twice(
    journal: Journal, step: str
) -> None:
    """Killed after the file is written, after it is renamed into place, after the rows went,
    after a segment was marked pruned: verify is ok (no row counted twice, none missing), and
    the next round cleans up and gives back every event."""
    before = events(journal)
    journal.confirm(journal.epoch, journal.epoch_last(journal.epoch) or 0, "pit-1")
    path = journal.path
    journal.close()
    round_killed_at(path, step)
    reopened = Journal.open_existing(path)
    try:
        report = reopened.verify(segments=True)
        assert report.ok, report.problems
        if step != "marked":  # (marked: that segment reads as pruned until the next round)
            assert events(reopened) == before
        Retention(reopened, SMALL).run_once(FUTURE)
        assert reopened.verify(segments=True).ok
        names = {s.name for s in reopened.segments() if s.state != PRUNED}
        on_disk = {p.name for p in reopened.segments_dir.iterdir()}
        assert on_disk == names  # no leftover file, no record without its file
        assert events(reopened) == before  # the half-pruned segment was readopted
    finally:
        reopened.close()


def test_pruning_waits_for_the_pit_then_keeps_the_budget(journal: Journal) -> None:
    before = events(journal)
    retention = Retention(journal, SMALL)
    retention.run_once(FUTURE)
    segments = journal.segments()
    budget = journal.path.stat().st_size + sum(s.bytes for s in segments) // 2
    retention.config = RetentionConfig(**{**SMALL.__dict__, "max_bytes": budget})
    refused = retention.run_once(FUTURE)
    assert refused.pruned == 0
    assert (
        refused.alarm() == f"retention: {refused.waiting_bytes} bytes waiting for the pit/archive"
    )
    assert all((journal.segments_dir / s.name).is_file() for s in segments)
    # the pit confirms the events of the first segments
    epoch, (_, last) = next(iter(segments[1].epochs.items()))
    assert journal.confirm(epoch, last, "pit-1") == last
    assert journal.confirm(epoch, 1, "pit-1") == last  # lower: changes nothing
    allowed = retention.run_once(FUTURE)
    assert allowed.pruned >= 1
    pruned = journal.pruned()  # the oldest, compacted into one run's record
    assert [(s.first_pos, s.last_pos, s.count) for s in pruned] == [
        (segments[0].first_pos, segments[allowed.pruned - 1].last_pos, allowed.pruned)
    ]
    report = journal.verify(segments=True)
    assert report.ok, report.problems
    assert report.pruned
    assert "confirmed stored by the pit" in report.pruned[0]
    # the broker's head may name a pruned event: nothing to compare, not "another history"
    assert journal.chain_of(1) is None
    assert journal.event_pruned(1)
    assert not journal.event_pruned(journal.last_seq())
    gone = {json.loads(line)["seq"] for line in before} - {
        json.loads(line)["seq"] for line in events(journal)
    }
    assert gone == set(range(1, max(s.epochs[epoch][1] for s in pruned) + 1))


def test_an_archive_copy_allows_pruning(journal: Journal, tmp_path: Path) -> None:
    archive = tmp_path / "nas"
    archive.mkdir()
    config = RetentionConfig(**{**SMALL.__dict__, "archive_dir": archive, "max_bytes": 1})
    report = Retention(journal, config).run_once(FUTURE)
    assert report.copied == report.archived >= 2
    assert report.pruned == report.archived  # all stored elsewhere: all may go
    (run,) = journal.segments()  # their records compacted into one
    copies = [span_of(p.name) for p in sorted(archive.iterdir())]
    assert (copies[0][0], copies[-1][1], len(copies)) == (run.first_pos, run.last_pos, run.count)  # type: ignore[index]
    assert journal.verify(segments=True).ok


def test_pruned_records_are_compacted_and_files_copied_back_are_taken_back_from_the_end(
    journal: Journal, tmp_path: Path
) -> None:
    """Years of pruned segments must not weigh on the live database: the segments a round
    prunes are one record, the run's (its positions, links, epochs, keys, reason; not the hands
    they held). A segment copied back from the archive is taken back when the chain proves it:
    the run's last one (its rows end at the run's last hash), then the ones before it; one from
    the middle alone is not, and is left where it is."""
    archive = tmp_path / "nas"
    archive.mkdir()
    config = RetentionConfig(**{**SMALL.__dict__, "archive_dir": archive})
    Retention(journal, config).run_once(FUTURE)  # archived and copied, nothing pruned yet
    whole = {s.name: s.header for s in journal.segments()}
    assert len(whole) >= 4
    assert all(header["hands"] for header in whole.values())
    names = sorted(whole)
    config = RetentionConfig(**{**config.__dict__, "max_bytes": 1})
    report = Retention(journal, config).run_once(FUTURE)
    assert (report.pruned, report.compacted) == (len(whole), len(whole))
    (run,) = journal.pruned()
    assert (run.first_pos, run.last_pos) == (
        whole[names[0]]["first_pos"],
        whole[names[-1]]["last_pos"],
    )
    assert (run.prev_hash, run.last_hash) == (
        whole[names[0]]["prev_hash"],
        whole[names[-1]]["last_hash"],
    )
    assert run.rows == sum(h["rows"] for h in whole.values())
    assert run.reason is not None
    assert run.reason.startswith("archived: ")
    assert "hands" not in run.header
    epoch = next(iter(whole[names[0]]["epochs"]))
    assert run.epochs[epoch] == [
        whole[names[0]]["epochs"][epoch][0],
        whole[names[-1]]["epochs"][epoch][1],
    ]
    assert run.keys["inputs"] == [
        whole[names[0]]["keys"]["inputs"][0],
        whole[names[-1]]["keys"]["inputs"][1],
    ]
    stored = journal.read("SELECT SUM(LENGTH(header)) FROM segments")[0][0]
    assert stored < max(len(json.dumps(h)) for h in whole.values())
    verified = journal.verify(segments=True)
    assert verified.ok, verified.problems
    assert verified.pruned == [
        f"positions {run.first_pos}-{run.last_pos} pruned ({len(whole)} segments): {run.reason}"
    ]
    assert journal.event_pruned(1)
    assert journal.segment_counts() == {"local": 0, "archived": 0, "pruned": len(whole)}

    # a segment from the middle alone: the chain does not prove it; it stays pruned, and stays
    middle = journal.segments_dir / names[1]
    shutil.copyfile(archive / names[1], middle)
    assert journal.readopt_restored() == []
    Retention(journal, config).run_once(FUTURE)
    assert middle.is_file()
    assert [s.name for s in journal.segments()] == [run.name]
    middle.unlink()

    # the run's last segment copied back: readopted with its whole header, the run cut before it
    last = names[-1]
    shutil.copyfile(archive / last, journal.segments_dir / last)
    assert [s.name for s in journal.readopt_restored()] == [last]
    cut, readopted = journal.segments()
    assert readopted.header == whole[last]
    assert readopted.state == "local"
    assert (cut.first_pos, cut.last_pos, cut.last_hash) == (
        run.first_pos,
        readopted.first_pos - 1,
        readopted.prev_hash,
    )
    assert cut.count == len(whole) - 1
    assert cut.keys["inputs"][1] == whole[last]["keys"]["inputs"][0] - 1
    hand = whole[last]["hands"][-1]
    rows = list(journal.archived_rows("inputs", hand_id=hand))
    assert rows
    assert rows[-1].content[0] == whole[last]["keys"]["inputs"][1]
    assert journal.verify(segments=True).ok

    # every other one back: the run is gone, every segment local again
    for name in names[:-1]:
        shutil.copyfile(archive / name, journal.segments_dir / name)
    assert sorted(s.name for s in journal.readopt_restored()) == names[:-1]
    assert [(s.name, s.state) for s in journal.segments()] == [(n, "local") for n in names]
    assert {s.name: s.header for s in journal.segments()} == whole
    assert journal.verify(segments=True).ok


def test_a_start_without_a_snapshot_needs_the_pruned_segments_back(
    journal: Journal, tmp_path: Path
) -> None:
    """New software (no snapshot of its core) replays from the start: with segments pruned it
    says which and what to do; with their files copied back from the archive it replays."""
    archive = tmp_path / "nas"
    archive.mkdir()
    config = RetentionConfig(**{**SMALL.__dict__, "archive_dir": archive, "max_bytes": 1})
    Retention(journal, config).run_once(FUTURE)
    journal.read("DELETE FROM snapshots")  # as if another core had written them
    path = journal.path
    journal.close()
    runner = journal_runner(path, endless_dealer("retention"))
    with pytest.raises(JournalError, match=r"pruned .*copy the pruned segments from the archive"):
        runner.recover()
    for copied in archive.iterdir():
        shutil.copyfile(copied, runner.journal.segments_dir / copied.name)
    report = runner.recover()
    assert report.diverged == []
    assert report.inputs > 1000  # every input, from the journal's start
    assert not runner.journal.pruned()
    assert runner.journal.verify(segments=True).ok
    runner.journal.close()


# ---------------------------------------------------------------------- the pit's request

PIT, PIT_PUBLIC = new_key()
DEALER, DEALER_PUBLIC = new_key()
KEYRING = parse_keyring(
    {
        "keys": {
            "pit-1": {"person": "pit", "roles": ["pit"], "public_key": PIT_PUBLIC},
            "ann": {"person": "Ann", "roles": ["dealer"], "public_key": DEALER_PUBLIC},
        }
    }
)


def _request(key: Any, key_id: str, fields: dict[str, Any], txn: str) -> bytes:
    body = {**fields, "transaction": txn}
    now = datetime.now(UTC)
    return json.dumps(sign_request(key, key_id, "stored", "T1", body, now=now)).encode()


def test_stored_through_the_gate(played: Path, tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(played, path)

    async def scenario() -> None:
        runner = journal_runner(path, endless_dealer("retention"))
        runner.recover()
        handler = CommandHandler(runner, Gate("T1", Policy(), KEYRING))
        journal = runner.journal
        epoch, last = journal.epoch, journal.epoch_last(journal.epoch) or 0

        async def ask(payload: bytes) -> dict[str, Any]:
            return await handler.handle("stored", payload, datetime.now(UTC))

        fields = {"pit": "pit-1", "epoch": epoch, "seq": 5}
        ok = await ask(_request(PIT, "pit-1", fields, "a"))
        assert (ok["status"], ok["data"]) == ("ok", {"epoch": epoch, "seq": 5})
        lower = await ask(_request(PIT, "pit-1", {**fields, "seq": 2}, "b"))
        assert lower["data"] == {"epoch": epoch, "seq": 5}
        refusals = {
            "unsigned": json.dumps({**fields, "transaction": "c"}).encode(),
            "may not give stored": _request(DEALER, "ann", fields, "d"),
            "is not this journal's": _request(PIT, "pit-1", {**fields, "epoch": "nope"}, "e"),
            "beyond the last event": _request(PIT, "pit-1", {**fields, "seq": last + 1000}, "f"),
            "below 0": _request(PIT, "pit-1", {**fields, "seq": -1}, "g"),
            "seq": _request(PIT, "pit-1", {**fields, "seq": "7"}, "h"),
            "does not take": _request(PIT, "pit-1", {**fields, "extra": 1}, "i"),
        }
        for reason, payload in refusals.items():
            answer = await ask(payload)
            assert answer["status"] == "error", reason
            assert reason in answer["error"], (reason, answer["error"])
        assert journal.confirmations() == {epoch: 5}
        still = await ask(_request(PIT, "pit-1", {**fields, "seq": last}, "j"))
        assert still["data"]["seq"] == last  # the table went on after every refusal
        await runner.writer.close()

    asyncio.run(scenario())


# ---------------------------------------------------------------------- an invariant


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(st.sampled_from(["archive", "confirm", "prune"]), max_size=8))
def test_any_interleaving_keeps_every_row_once(
    played: Path, played_events: list[str], tmp_path: Path, steps: list[str]
) -> None:
    """Archives, confirmations and prunes in any order: every chained row is in exactly one
    place until pruned, verify is ok, and the export is the events minus the pruned."""
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "journal.sqlite"
    shutil.copyfile(played, path)
    journal = Journal.open_existing(path)
    original = played_events  # the export of this copy before any step
    config = RetentionConfig(live_hands=1, inbox_seconds=0, segment_rows=300, recent_inputs=20)
    try:
        for step in steps:
            if step == "archive":
                Retention(journal, config).run_once(FUTURE)
            elif step == "confirm":
                journal.confirm(journal.epoch, (journal.epoch_last(journal.epoch) or 0) // 2, "p")
            elif step == "prune":
                pruning = RetentionConfig(**{**config.__dict__, "max_bytes": 1})
                Retention(journal, pruning).run_once(FUTURE)
            report = journal.verify(segments=True)
            assert report.ok, report.problems
            pruned = {
                seq
                for s in journal.pruned()
                for first, last in s.epochs.values()
                for seq in range(first, last + 1)
            }
            exported = events(journal)
            assert exported == [e for e in original if json.loads(e)["seq"] not in pruned]
    finally:
        journal.close()


def test_salvage_keeps_the_intact_segments_and_names_the_damaged_one(
    journal: Journal, tmp_path: Path
) -> None:
    segments = _archived(journal)
    whole = salvage(journal.path, tmp_path / "whole" / "journal.sqlite")
    assert whole.complete, whole.lines()
    damaged = segments[1]
    path = journal.segments_dir / damaged.name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    target = tmp_path / "salvaged" / "journal.sqlite"
    report = salvage(journal.path, target)
    assert not report.complete
    lines = report.lines()
    assert any(damaged.name in line and line.startswith("could not keep") for line in lines)
    assert any(f"in damaged segment {damaged.name}" in line for line in lines)
    salvaged = Journal.open_existing(target)
    try:
        kept = [s.name for s in salvaged.segments()]
        assert kept == [s.name for s in segments if s is not damaged]
        checked = salvaged.verify(segments=True)
        assert [b.pos for b in checked.breaks] == [damaged.first_pos]
        assert f"positions {damaged.first_pos}-{damaged.last_pos}" in checked.problems[0]
        assert salvaged.verify().problems == checked.problems  # a start sees the gap too
    finally:
        salvaged.close()


def test_what_a_start_or_a_redelivery_needs_stays_live(journal: Journal) -> None:
    """The last live_hands closed hands, the inputs of the last inbox_seconds, the events the
    broker has not acknowledged: none of them is archived."""
    last_ts = datetime.fromisoformat(journal.read("SELECT MAX(ts) FROM inputs")[0][0])
    window = RetentionConfig(**{**SMALL.__dict__, "inbox_seconds": 3600})
    assert Retention(journal, window).run_once(last_ts + timedelta(minutes=10)).archived == 0
    unacknowledged = journal.read("SELECT MIN(seq) FROM events WHERE hand_id IS NOT NULL")[0][0]
    journal.read(
        "INSERT INTO outbox (seq, stream, live, created_ns) VALUES (?, 'public', 1, 0)",
        (unacknowledged + 500,),
    )
    Retention(journal, window).run_once(last_ts + timedelta(hours=2))
    assert journal.archived_head().pos < journal.chain_of(unacknowledged + 500).pos  # type: ignore[union-attr]
    journal.read("DELETE FROM outbox")
    Retention(journal, window).run_once(last_ts + timedelta(hours=2))
    live_ends = journal.read("SELECT COUNT(*) FROM events WHERE type = 'hand.completed'")[0][0]
    assert live_ends >= SMALL.live_hands
    assert journal.segments()


def test_an_archive_not_there_stops_nothing_and_prunes_nothing(
    journal: Journal, tmp_path: Path
) -> None:
    """A NAS not mounted: the copies wait (one try a round), nothing unconfirmed is pruned,
    and the copies go once it is back."""
    archive = tmp_path / "nas"
    config = RetentionConfig(**{**SMALL.__dict__, "archive_dir": archive, "max_bytes": 1})
    retention = Retention(journal, config)
    waiting = retention.run_once(FUTURE)
    assert (waiting.copied, waiting.pruned) == (0, 0)
    assert waiting.alarm() is not None
    archive.mkdir()
    back = retention.run_once(FUTURE)
    assert back.copied == back.pruned == waiting.archived
    assert back.alarm() is None


# ---------------------------------------------------------------------- redeliveries


def _cleared(seq: int, *, boot: int = 7, when: float = 0) -> DeviceFaultCleared:
    ts = datetime.fromtimestamp(1_700_000_000 + when, UTC)
    return DeviceFaultCleared(ts, "shuffler", "LID_OPEN", 3, origin=Origin(boot, seq))


def test_a_device_event_redelivered_after_its_input_was_pruned_is_not_journaled_twice(
    tmp_path: Path,
) -> None:
    """The shuffler's last event was journaled, its acknowledgement lost, and the shuffler
    left unplugged while the table went on: its input is archived and pruned, the daemon
    restarts, and the shuffler, plugged in again, resends the event. It is recognised."""
    path = tmp_path / "journal.sqlite"
    archive = tmp_path / "nas"
    archive.mkdir()

    async def first_life() -> None:
        runner = journal_runner(path, endless_dealer("retention"))
        assert await runner.submit(_cleared(5)) is not None
        for item in inputs_of(12):
            await runner.submit(item)
        await runner.writer.close()

    asyncio.run(first_life())
    journal = Journal.open_existing(path)
    journal.read("DELETE FROM outbox")  # the broker acknowledged every event
    config = RetentionConfig(**{**SMALL.__dict__, "archive_dir": archive, "max_bytes": 1})
    assert Retention(journal, config).run_once(FUTURE).pruned >= 1
    assert next(row.key for row in journal.inputs()) > 1  # input 1 is in a pruned segment
    journal.close()

    async def second_life() -> list[bool]:
        runner = journal_runner(path, endless_dealer("retention"))
        runner.recover()
        kept = [
            await runner.submit(_cleared(5, when=9000)) is not None,  # the redelivery
            await runner.submit(_cleared(6, when=9001)) is not None,  # the next event
            await runner.submit(_cleared(6, when=9002)) is not None,  # it again
        ]
        await runner.writer.close()
        return kept

    assert asyncio.run(second_life()) == [False, True, False]
    journal = Journal.open_existing(path)
    assert journal.read("SELECT device, boot_id, seq FROM origins") == [("shuffler", 7, 6)]
    journal.close()


def test_a_request_redelivered_after_its_inbox_row_was_archived_is_refused_as_stale(
    tmp_path: Path,
) -> None:
    """Within the window the same request gets its stored response; once its inbox row is
    archived (older than inbox_seconds, which is at least twice clock_skew) the same signed
    bytes are older than clock_skew: refused as stale, the hand not started again."""
    path = tmp_path / "journal.sqlite"
    archive = tmp_path / "nas"
    archive.mkdir()
    inputs = inputs_of(12)
    assert isinstance(inputs[0], StartHand)
    assert inputs[0].button is None
    began = inputs[0].ts
    body = {"transaction": "s-1"}
    payload = json.dumps(sign_request(DEALER, "ann", "start_hand", "T1", body, now=began))

    async def first_life() -> None:
        runner = journal_runner(path, endless_dealer("retention"))
        handler = CommandHandler(runner, Gate("T1", Policy(), KEYRING))
        answer = await handler.handle("start_hand", payload.encode(), began)
        assert answer["status"] == "ok"
        again = await handler.handle("start_hand", payload.encode(), began + timedelta(seconds=5))
        assert again == answer  # the stored response
        for item in inputs[1:]:
            await runner.submit(item)
        await runner.writer.close()

    asyncio.run(first_life())
    journal = Journal.open_existing(path)
    journal.read("DELETE FROM outbox")
    config = RetentionConfig(**{**SMALL.__dict__, "archive_dir": archive, "max_bytes": 1})
    assert Retention(journal, config).run_once(FUTURE).pruned >= 1
    assert journal.read("SELECT COUNT(*) FROM commands")[0][0] == 0  # the inbox row is gone
    journal.close()

    async def second_life() -> tuple[dict[str, Any], bool]:
        runner = journal_runner(path, endless_dealer("retention"))
        runner.recover()
        handler = CommandHandler(runner, Gate("T1", Policy(), KEYRING))
        late = began + timedelta(seconds=2 * Policy().clock_skew + 1)
        answer = await handler.handle("start_hand", payload.encode(), late)
        in_hand = runner.state.hand is not None
        await runner.writer.close()
        return answer, in_hand

    answer, in_hand = asyncio.run(second_life())
    assert answer["status"] == "error"
    assert "auth.ts is 61 s from the table's clock" in answer["error"]
    assert not in_hand


# ---------------------------------------------------------------------- a full disk


def fill_to_the_last_frame(journal: Journal, disk: Path) -> None:
    """Fill the file system, then the journal's WAL until even a one-page write fails."""
    fill_disk(disk / "filler", 0)

    def until_it_fails(write: Callable[[], object]) -> None:
        for _ in range(2000):
            write()

    for write in (
        lambda: journal.append(input_row=("ts", "X", "x" * 5000), events=[]),
        journal.next_bdseq,
    ):
        with pytest.raises(sqlite3.OperationalError) as caught:
            until_it_fails(write)
        assert is_full(caught.value, disk)


def test_segments_stored_elsewhere_are_pruned_on_a_completely_full_disk(
    played: Path, tmp_path: Path
) -> None:
    """On a real file system filled to the last byte the journal takes no write, yet the round
    prunes every archived segment: the reserve beside the journal is released so the records
    commit, then the files go; the reserve is made again once there is room."""
    archive = tmp_path / "nas"
    archive.mkdir()
    with small_disk(tmp_path / "disk", "16m") as disk:
        path = disk / "journal.sqlite"
        shutil.copyfile(played, path)
        journal = Journal.open_existing(path)
        config = RetentionConfig(**{**SMALL.__dict__, "archive_dir": archive})
        first = Retention(journal, config).run_once(FUTURE)
        assert first.copied == first.archived >= 2
        assert first.pruned == 0  # no budget, no pressure: the segments stay
        reserve = Reserve(path)
        assert reserve.held
        fill_to_the_last_frame(journal, disk)

        steps: list[str] = []
        report = Retention(journal, config, pressed=lambda: True, hook=steps.append).run_once(
            FUTURE
        )
        assert steps[0] == "released"  # the first record needed the reserve's room
        assert report.pruned == first.archived
        assert {s.state for s in journal.segments()} == {PRUNED}
        assert not any(journal.segments_dir.iterdir())
        verified = journal.verify(segments=True)
        assert verified.ok, verified.problems
        assert len(verified.pruned) == 1  # one run of segments, pruned as archived
        (run,) = journal.segments()  # their records compacted into one
        assert run.count == len(list(archive.iterdir())) == first.archived

        (disk / "filler").unlink()  # room again: the next round makes the reserve again
        Retention(journal, config).run_once(FUTURE)
        assert reserve.held
        journal.append(input_row=("ts", "X", "x"), events=[])
        journal.close()


@pytest.mark.parametrize("step", ["released", "marked"])
def test_a_prune_on_a_full_disk_killed_at_any_step_leaves_a_consistent_journal(
    played: Path, tmp_path: Path, step: str
) -> None:
    """Killed once the reserve is released (before the record), or once a segment is marked
    pruned (before its file goes), on a disk with no byte free: verify is ok, no record names
    a file that is gone, and the next round finishes the prune."""
    with small_disk(tmp_path / "disk", "16m") as disk:
        path = disk / "journal.sqlite"
        shutil.copyfile(played, path)
        journal = Journal.open_existing(path)
        journal.confirm(journal.epoch, journal.epoch_last(journal.epoch) or 0, "pit-1")
        assert Retention(journal, SMALL).run_once(FUTURE).archived >= 2
        assert Reserve(path).held
        fill_to_the_last_frame(journal, disk)
        # (kept open: a journal closed on a full disk has no shared memory to open it with)
        round_killed_at(path, step, refused=True)
        journal.close()
        reopened = Journal.open_existing(path)
        try:
            report = reopened.verify(segments=True)
            assert report.ok, report.problems
            records = reopened.segments()
            on_disk = {p.name for p in reopened.segments_dir.iterdir()}
            assert {s.name for s in records if s.state != PRUNED} <= on_disk
            Retention(reopened, SMALL, pressed=lambda: True).run_once(FUTURE)
            assert reopened.verify(segments=True).ok
            assert {s.state for s in reopened.segments()} == {PRUNED}
            assert not any(reopened.segments_dir.iterdir())
        finally:
            reopened.close()


def test_a_verify_beside_the_writer_is_not_misled_by_a_segment_committed_meanwhile(
    journal: Journal,
) -> None:
    """A verify on a connection of its own (the live verify, a tool) reads where the archive
    ends and then walks the rows after it. A retention round that commits a segment between the
    two moved rows out from under the walk, which then saw positions missing or a chain ending
    before the head: a false integrity alarm that holds the table. The whole verify is one read
    of the journal as it was when it began."""
    ((pos, digest),) = journal.read("SELECT pos, hash FROM events ORDER BY pos LIMIT 1 OFFSET 200")
    since = Head(int(pos), str(digest))
    verifier = Journal.open_existing(journal.path)
    try:
        read_archived_head = verifier.archived_head

        def archive_meanwhile() -> Head:
            found = read_archived_head()
            assert Retention(journal, SMALL).run_once(FUTURE).archived >= 1
            return found

        verifier.archived_head = archive_meanwhile  # type: ignore[method-assign]
        report = verifier.verify(since)
        assert report.ok, report.problems
        assert journal.segments()  # the round did archive, under the verify's feet
    finally:
        verifier.close()
    assert journal.verify(since).ok  # and the journal as it is now verifies too


def test_an_export_beside_the_writer_misses_no_event_a_round_archives_meanwhile(
    journal: Journal,
) -> None:
    """An export on a connection of its own reads the segments' list, their files, then the
    live rows; a retention round committing a segment between the first and the last moved
    rows out of the live table into a segment the export had not listed: they were lost from
    it. The export reads the journal as it was when it began."""
    before = events(journal)
    exporter = Journal.open_existing(journal.path)
    try:
        list_segments = exporter.segments

        def archive_meanwhile(*, pruned: bool = True) -> list[Any]:
            found = list_segments(pruned=pruned)
            if not journal.segments():
                assert Retention(journal, SMALL).run_once(FUTURE).archived >= 1
            return found

        exporter.segments = archive_meanwhile  # type: ignore[method-assign]
        assert list(export_events(exporter)) == before
        assert journal.segments()  # the round did archive, during the export
    finally:
        exporter.close()
    assert events(journal) == before  # and the journal as it is now exports the same
