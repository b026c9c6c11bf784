"""Every shipped scenario file passes in the pure core."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import SCENARIOS, run_file

FILES = sorted(p.name for p in SCENARIOS.glob("*.toml"))


@pytest.mark.parametrize("name", FILES)
def test_scenario_passes_in_the_core(name: str) -> None:
    run_file(name)


def test_there_are_scenarios() -> None:
    assert len(FILES) >= 5
    assert all(Path(SCENARIOS / f).stat().st_size for f in FILES)
