"""Pruned runs: a retention round compacts the records of consecutive pruned segments into one
record of the run (controller/shell/pruned_runs.py), and `journal verify` and `journal export`
still prove and name the pruned range (docs/operations.md, "Retention")."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.cli import main
from controller.shell.journal import Journal
from controller.shell.pruned_runs import digest, is_run, same_prune_kind, span_of
from controller.shell.retention import Retention, RetentionConfig, prune_reason
from controller.shell.segments import PRUNED, Segment
from simulators.table_journal import endless_dealer, journal_runner
from tests.shell.test_retention import FUTURE, SMALL, events, round_killed_at

PRUNING = RetentionConfig(**{**SMALL.__dict__, "max_bytes": 1})


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


def confirm_all(journal: Journal) -> None:
    journal.confirm(journal.epoch, journal.epoch_last(journal.epoch) or 0, "pit-1")


def pruned_one_by_one(journal: Journal) -> list[Segment]:
    """Archive, then prune every segment but the last as the journal did before runs: each
    pruned segment its own record (its header slimmed, its file gone). The segments."""
    Retention(journal, SMALL).run_once(FUTURE)
    confirm_all(journal)
    confirmed = journal.confirmations()
    segments = journal.segments()
    assert len(segments) >= 4
    for segment in segments[:-1]:
        reason = prune_reason(segment, confirmed)
        journal.set_segment_state(segment.name, PRUNED, reason)
        (journal.segments_dir / segment.name).unlink()
    return segments


def records(journal: Journal) -> list[tuple[str, str]]:
    return [(s.name, s.state) for s in journal.segments()]


def test_a_journal_whose_pruned_segments_were_recorded_one_by_one_is_compacted_by_its_next_round(
    journal: Journal,
) -> None:
    """An old journal (each pruned segment a record) verifies and exports as it did; its next
    round folds the records into one, and it still verifies and exports the same."""
    segments = pruned_one_by_one(journal)
    count = len(segments) - 1
    before = journal.verify(segments=True)
    assert before.ok, before.problems
    assert len(before.pruned) == 1
    assert f"({count} segments)" in before.pruned[0]
    exported = events(journal)
    assert journal.read("SELECT COUNT(*) FROM segments WHERE state = 'pruned'") == [(count,)]

    report = Retention(journal, SMALL).run_once(FUTURE)  # no budget: it prunes nothing
    assert (report.pruned, report.compacted) == (0, count)
    (run,) = journal.pruned()
    assert is_run(run)
    assert (run.first_pos, run.last_pos, run.count) == (
        segments[0].first_pos,
        segments[-2].last_pos,
        count,
    )
    assert (run.prev_hash, run.last_hash) == (segments[0].prev_hash, segments[-2].last_hash)
    assert run.rows == sum(s.rows for s in segments[:-1])
    after = journal.verify(segments=True)
    assert after.ok, after.problems
    assert after.pruned == before.pruned
    assert after.segments == before.segments == 1
    assert events(journal) == exported
    assert journal.segment_counts() == {"local": 1, "archived": 0, "pruned": count}
    assert Retention(journal, SMALL).run_once(FUTURE).compacted == 0  # done once


def _edit(journal: Journal, name: str, **columns: object) -> None:
    for column, value in columns.items():
        journal.read(f"UPDATE segments SET {column} = ? WHERE name = ?", (value, name))


def _reseal(journal: Journal, run: Segment, **fields: object) -> None:
    """Edit a run's record and make its digest again (an edit that knew how)."""
    edited = replace(run, **fields)  # type: ignore[arg-type]
    columns = {k: json.dumps(v) if k == "header" else v for k, v in fields.items()}
    _edit(journal, run.name, **columns, sha256=digest(edited))


EDITS: dict[str, tuple[Callable[[Journal, Segment, Segment], object], str]] = {
    "the run's last hash, resealed": (
        lambda j, run, local: _reseal(j, run, last_hash="f" * 64),
        "{local}: does not follow the segment before it",
    ),
    "the link of the segment after the run": (
        lambda j, run, local: _edit(j, local.name, prev_hash="e" * 64),
        "{local}: does not follow the segment before it",
    ),
    "the run's epochs, not resealed": (
        lambda j, run, local: _edit(
            j, run.name, header=json.dumps({**run.header, "epochs": {"x": [1, 2]}})
        ),
        "{run}: the record of these pruned segments does not match its sha256",
    ),
    "the run's end, resealed": (
        lambda j, run, local: _reseal(j, run, last_pos=run.last_pos - 10),
        "{local}: positions {gap} are in no segment",
    ),
    "the run's events beyond the pit's confirmation, resealed": (
        lambda j, run, local: _reseal(
            j,
            run,
            header={
                **run.header,
                "epochs": {k: [a, b + 10**6] for k, (a, b) in run.epochs.items()},
            },
        ),
        "{run}: pruned as confirmed by the pit, but no confirmation covers it",
    ),
    "the run's record deleted": (
        lambda j, run, local: j.read("DELETE FROM segments WHERE name = ?", (run.name,)),
        "{local}: positions {all} are in no segment",
    ),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_verify_catches_a_broken_link_or_an_edited_record_across_a_compacted_run(
    journal: Journal, edit: str
) -> None:
    pruned_one_by_one(journal)
    Retention(journal, SMALL).run_once(FUTURE)
    run, local = journal.segments()
    assert is_run(run)
    assert journal.verify(segments=True).ok
    change, expected = EDITS[edit]
    change(journal, run, local)
    problems = journal.verify(segments=True).problems
    text = expected.format(
        run=f"segment {run.name} ({run.span()})",
        local=f"segment {local.name} ({local.span()})",
        gap=f"{run.last_pos - 9}-{run.last_pos}",
        all=f"1-{run.last_pos}",
    )
    assert any(p.startswith(text) for p in problems), problems
    assert not journal.verify().ok  # (from the genesis, as a start without a verified head)
    # a round compacts nothing across it, and the break is still there after it
    Retention(journal, SMALL).run_once(FUTURE)
    assert any(p.startswith(text) for p in journal.verify(segments=True).problems)


def test_compaction_does_not_fold_across_a_broken_link(journal: Journal) -> None:
    """A pruned record that does not follow the one before it is not folded into its run (the
    link the verify checks would be lost with it): it stays a record of its own, reported."""
    segments = pruned_one_by_one(journal)
    broken = segments[2]
    _edit(journal, broken.name, prev_hash="d" * 64)
    text = f"segment {broken.name} ({broken.span()}): does not follow the segment before it"
    assert text in journal.verify(segments=True).problems
    Retention(journal, SMALL).run_once(FUTURE)
    first, second, _ = journal.segments()
    assert (first.first_pos, first.last_pos) == (segments[0].first_pos, segments[1].last_pos)
    assert second.first_pos == broken.first_pos
    assert all(is_run(s) for s in (first, second))
    problems = journal.verify(segments=True).problems
    assert any("does not follow the segment before it" in p for p in problems), problems


def test_verify_and_export_name_the_compacted_range_with_its_reason(
    journal: Journal, capsys: pytest.CaptureFixture[str]
) -> None:
    confirm_all(journal)
    report = Retention(journal, PRUNING).run_once(FUTURE)
    assert report.pruned >= 4
    (run,) = journal.pruned()
    assert run.reason is not None
    assert run.reason.startswith("confirmed stored by the pit (epoch ")
    path = journal.path
    journal.close()
    assert main(["journal", "verify", "--journal", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"  positions 1-{run.last_pos} pruned ({report.pruned} segments): {run.reason}\n" in out
    assert main(["journal", "export", "--journal", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        f"tablectl journal export: positions 1-{run.last_pos} were pruned ({run.reason}); "
        "their events are not in this export\n"
    )
    assert captured.out  # the events after it
    Journal.open_existing(path).close()


def test_a_round_killed_once_it_compacted_leaves_a_verifying_journal(journal: Journal) -> None:
    confirm_all(journal)
    path = journal.path
    journal.close()
    round_killed_at(path, "compacted")
    reopened = Journal.open_existing(path)
    try:
        assert reopened.verify(segments=True).ok
        assert all(is_run(s) for s in reopened.pruned())
        Retention(reopened, SMALL).run_once(FUTURE)
        assert reopened.verify(segments=True).ok
    finally:
        reopened.close()


def test_the_live_database_stops_growing_with_pruned_segments(tmp_path: Path) -> None:
    """A table that plays on, every round pruning what the pit confirmed: the pruned segments
    add up, their records do not."""
    path = tmp_path / "journal.sqlite"
    config = RetentionConfig(
        live_hands=2, inbox_seconds=0, segment_rows=300, recent_inputs=20, max_bytes=1
    )
    seen: list[tuple[int, int, int]] = []  # pruned segments, pruned records, all records

    async def play() -> None:
        dealer = endless_dealer("runs")
        runner = journal_runner(path, dealer)
        journal, writer = runner.journal, runner.writer
        retention = Retention(journal, config)
        for _ in range(6):
            for _ in range(6):
                assert dealer.play_hand()
                for item in dealer.run.inputs:
                    await runner.submit(item)
                dealer.run.inputs.clear()
            pending = await writer.call(journal.pending, 1_000_000)
            journal.forget([row.id for row in pending])  # the broker took them all
            await writer.call(journal.delete_outbox)
            await writer.call(confirm_all, journal)
            report = await writer.call(retention.run_once, FUTURE)
            assert report.pruned >= 1
            (pruned_records,) = journal.read("SELECT COUNT(*) FROM segments WHERE state = 'pruned'")
            (all_records,) = journal.read("SELECT COUNT(*) FROM segments")
            seen.append((report.by_state[PRUNED], pruned_records[0], all_records[0]))
        await writer.close()

    asyncio.run(play())
    assert [s[0] for s in seen] == sorted({s[0] for s in seen})  # more pruned every round
    assert seen[-1][0] > 3 * seen[0][0]
    assert {s[1] for s in seen} == {1}  # one record for all of them
    assert max(s[2] for s in seen) <= 3
    journal = Journal.open_existing(path)
    try:
        verified = journal.verify(segments=True)
        assert verified.ok, verified.problems
        assert verified.pruned[0].startswith(f"positions 1-{journal.pruned()[0].last_pos} pruned")
    finally:
        journal.close()


# ---------------------------------------------------------------------- an invariant


STEPS = ["archive", "confirm", "prune confirmed", "prune archived", "restore", "round"]


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=8))
def test_any_sequence_of_prunes_and_restores_leaves_a_verifying_compacted_journal(
    played: Path,
    played_events: list[str],
    tmp_path: Path,
    steps: list[str],
) -> None:
    """Archives, confirmations, prunes of either kind (the pit's, the archive's) and files copied
    back from the end of a run, in any order: verify is ok, the export is the events minus the
    pruned, and after every round the pruned records are compacted (no record of one segment
    whose file is gone, no two adjacent runs of the same kind)."""
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    path = root / "journal.sqlite"
    shutil.copyfile(played, path)
    archive, kept = root / "nas", root / "kept"
    archive.mkdir()
    kept.mkdir()
    journal = Journal.open_existing(path)
    original = played_events  # the export of this copy before any step
    config = RetentionConfig(live_hands=1, inbox_seconds=0, segment_rows=300, recent_inputs=20)
    try:
        for step in steps:
            if step == "archive":
                Retention(journal, config).run_once(FUTURE)
            elif step == "confirm":
                journal.confirm(journal.epoch, (journal.epoch_last(journal.epoch) or 0) // 2, "p")
            elif step == "prune confirmed":
                Retention(journal, replace(config, max_bytes=1)).run_once(FUTURE)
            elif step == "prune archived":
                copying = replace(config, max_bytes=1, archive_dir=archive)
                Retention(journal, copying).run_once(FUTURE)
            elif step == "restore":
                _restore_the_end_of_the_last_run(journal, kept)
            else:
                Retention(journal, config).run_once(FUTURE)
            for file in journal.segments_dir.iterdir() if journal.segments_dir.is_dir() else ():
                if not (kept / file.name).exists():
                    shutil.copyfile(file, kept / file.name)
            report = journal.verify(segments=True)
            assert report.ok, report.problems
            pruned = {
                seq
                for s in journal.pruned()
                for first, last in s.epochs.values()
                for seq in range(first, last + 1)
            }
            assert events(journal) == [e for e in original if json.loads(e)["seq"] not in pruned]
            if step != "restore":
                _assert_compacted(journal)
    finally:
        journal.close()


def _restore_the_end_of_the_last_run(journal: Journal, kept: Path) -> None:
    """Copy back the files of the last run's last segments (up to two, those kept)."""
    runs = journal.pruned()
    if not runs:
        return
    run = runs[-1]
    by_last = {
        span[1]: file.name
        for file in kept.iterdir()
        if (span := span_of(file.name)) is not None and run.first_pos <= span[0]
    }
    back: list[str] = []
    pos = run.last_pos
    while pos in by_last and len(back) < 2:
        back.append(by_last[pos])
        pos = span_of(by_last[pos])[0] - 1  # type: ignore[index]
    for name in back:
        shutil.copyfile(kept / name, journal.segments_dir / name)
    assert sorted(s.name for s in journal.readopt_restored()) == sorted(back)


def _assert_compacted(journal: Journal) -> None:
    pruned = journal.pruned()
    assert all(is_run(s) for s in pruned), [s.name for s in pruned]
    for before, after in itertools.pairwise(pruned):
        adjacent = before.last_pos + 1 == after.first_pos
        assert not (adjacent and same_prune_kind(before.reason or "", after)), (before, after)


def test_a_round_takes_back_a_bounded_number_of_files_from_a_run_and_the_next_goes_on(
    journal: Journal, tmp_path: Path
) -> None:
    """Proving a file copied back reads it whole, on the journal's thread: a round takes back at
    most a few from the end of a run, the next round goes on from where the run then ends."""
    archive = tmp_path / "nas"
    archive.mkdir()
    config = RetentionConfig(**{**PRUNING.__dict__, "archive_dir": archive})
    report = Retention(journal, config).run_once(FUTURE)
    assert report.pruned >= 4
    names = sorted(p.name for p in archive.iterdir())
    for name in names:
        shutil.copyfile(archive / name, journal.segments_dir / name)
    assert [s.name for s in journal.readopt_restored(limit=2)] == names[-2:]
    run, *local = journal.segments()
    assert [s.name for s in local] == names[-2:]
    assert run.count == len(names) - 2
    assert journal.verify(segments=True).ok
    assert [s.name for s in journal.readopt_restored(limit=2)] == names[-4:-2]
    rest = journal.readopt_restored()
    assert sorted(s.name for s in rest) == names[:-4]
    assert not journal.pruned()
    assert journal.verify(segments=True).ok
