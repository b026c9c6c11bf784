"""Fixtures of the journal's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from controller.shell.export import export_events
from controller.shell.journal import Journal


@pytest.fixture(scope="session")
def played_events(played_journal: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``journal export`` of the run's played journal, read once a process: the properties
    over it compare each example's export with it (a whole export is a tenth of an example)."""
    path = tmp_path_factory.mktemp("played-events") / "journal.sqlite"
    shutil.copyfile(played_journal, path)
    journal = Journal.open_existing(path)
    try:
        return list(export_events(journal))
    finally:
        journal.close()
