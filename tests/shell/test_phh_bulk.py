"""``tablectl journal export --phh``: a journal's hands as one bulk PHH document (``.phhs``) that
pokerkit's ``HandHistory.load_all`` reads hand by hand; ``--hand ID`` one hand as a ``.phh``;
``tablectl scenario from-phh --hand NAME`` plays one hand of a bulk file."""

from __future__ import annotations

import asyncio
import io
import tomllib
from pathlib import Path

import pytest
from pokerkit import HandHistory

from controller.cli import main
from controller.phh import bulk_phh
from controller.shell.export import export_phh
from controller.shell.journal import Journal
from simulators.table_journal import endless_dealer, journal_runner

HANDS = 3


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal of three completed hands."""
    path = tmp_path_factory.mktemp("bulk") / "journal.sqlite"
    dealer = endless_dealer("bulk", seed=7)
    for _ in range(HANDS):
        assert dealer.play_hand()

    async def write() -> None:
        runner = journal_runner(path, endless_dealer("bulk", seed=7))
        for item in dealer.run.inputs:
            await runner.submit(item)
        await runner.writer.close()

    asyncio.run(write())
    return path


def exported(journal: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert main(["journal", "export", "--phh", "--journal", str(journal), *extra]) == 0
    return capsys.readouterr().out


def test_every_hand_is_one_table_of_a_bulk_file_pokerkit_loads(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = exported(journal, capsys)
    store = Journal.open_existing(journal)
    try:
        singles = export_phh(store)
    finally:
        store.close()
    assert len(singles) == HANDS
    # the tables are named by place, 1 to N, and each holds exactly one hand's fields
    assert list(tomllib.loads(text)) == [str(n) for n in range(1, HANDS + 1)]
    loaded = list(HandHistory.load_all(io.BytesIO(text.encode())))
    assert len(loaded) == HANDS
    for whole, single in zip(loaded, singles, strict=True):
        alone = HandHistory.loads(single)
        assert whole.actions == alone.actions
        assert whole.starting_stacks == alone.starting_stacks
        assert whole.finishing_stacks == alone.finishing_stacks
        assert whole.user_defined_fields["_hand_id"] == alone.user_defined_fields["_hand_id"]
    # and every hand plays through in pokerkit to its recorded end
    for history in loaded:
        *_, last = iter(history)
        assert list(last.stacks) == list(history.finishing_stacks or ())
    assert text == bulk_phh(singles)


def test_one_hand_asked_for_is_a_plain_phh(
    journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    second = tomllib.loads(exported(journal, capsys))["2"]
    text = exported(journal, capsys, "--hand", second["_hand_id"])
    assert "[" not in text.split("\n", 1)[0]  # no table header: one hand's fields
    alone = HandHistory.loads(text)
    assert alone.user_defined_fields["_hand_id"] == second["_hand_id"]
    assert alone.actions == second["actions"]


def test_an_empty_journal_exports_an_empty_bulk_file() -> None:
    assert bulk_phh([]) == ""


def test_from_phh_plays_the_hand_of_a_bulk_file_named_by_hand(
    journal: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bulk = tmp_path / "night.phhs"
    bulk.write_text(exported(journal, capsys))
    assert main(["scenario", "from-phh", str(bulk)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tablectl scenario from-phh: {bulk}: a bulk PHH of 3 hands (1, 2, 3)")
    assert "--hand" in err
    assert main(["scenario", "from-phh", str(bulk), "--hand", "9"]) == 2
    assert "--hand 9: not in this file (1, 2, 3)" in capsys.readouterr().err
    out = tmp_path / "hand-2.toml"
    assert main(["scenario", "from-phh", str(bulk), "--hand", "2", "--out", str(out)]) == 0
    assert main(["scenario", "run", str(out)]) == 0, capsys.readouterr()
    single = tmp_path / "one.phh"
    single.write_text(exported_single(bulk))
    assert main(["scenario", "from-phh", str(single), "--hand", "1"]) == 2
    assert "this file holds one hand" in capsys.readouterr().err


def exported_single(bulk: Path) -> str:
    """The first hand of a bulk file, as a plain PHH document."""
    return bulk.read_text().split("\n\n[2]\n", 1)[0].removeprefix("[1]\n")
