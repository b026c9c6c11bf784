"""The packaging tests' build: the sdist and the wheel, made once a run for all of them."""

from __future__ import annotations

import pytest

from tests.once import built_once
from tests.packaging.venv import Dists, build, source_digest


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist and the wheel built from this checkout (the wheel from the sdist), once for the
    whole run (tests/once.py): test_installed installs the wheel, test_upgrade upgrades to it and
    test_offline packs it (each ``python -m build`` is seconds of CPU, and they all start first)."""
    return Dists.found_in(built_once(tmp_path_factory, f"dists-{source_digest()}", build))
