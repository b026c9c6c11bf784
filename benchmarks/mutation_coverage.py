"""A pytest plugin for ``make mutation`` (benchmarks/mutation.py): which test runs which line.

Loaded with ``-p mutation_coverage`` (benchmarks/ on ``PYTHONPATH``) for the one run that maps a
test set before any mutant. It starts coverage when pytest loads it, before any conftest imports
the project, so a line run at import time is measured too, under the empty context; then each
test runs under a context named after its node id (coverage's ``switch_context``). At the end it
saves the coverage data to ``$MUTATION_COVERAGE_FILE`` and each test's time (setup, call and
teardown) to ``$MUTATION_DURATIONS_FILE`` as JSON.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import coverage
import pytest

_COVERAGE = coverage.Coverage(
    data_file=os.environ["MUTATION_COVERAGE_FILE"],
    source=os.environ["MUTATION_COVERAGE_SOURCE"].split(","),
)
_COVERAGE.start()
_DURATIONS: defaultdict[str, float] = defaultdict(float)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    _COVERAGE.switch_context(item.nodeid)
    yield
    _COVERAGE.switch_context("")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _DURATIONS[report.nodeid] += report.duration


def pytest_sessionfinish() -> None:
    _COVERAGE.stop()
    _COVERAGE.save()
    Path(os.environ["MUTATION_DURATIONS_FILE"]).write_text(json.dumps(_DURATIONS))
