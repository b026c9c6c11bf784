"""Under ``CI=true`` a skipped test is a failed one.

The tests that need a part of the machine (mosquitto, PostgreSQL, Chromium, libnfc, openssl,
systemd-analyze, root for a tmpfs) skip where it is missing, so a developer without it can still
run the rest. CI installs every one of them (``.ci/run``): there a skip means a part went
missing, and a green run would claim what it never proved. So under ``CI=true`` every skip,
of a test or of a whole module, is reported as a failure with its reason. Locally skips stay
skips, and ``-ra`` (the suite's addopts) lists them at the end of the run.

An expected failure (``xfail``) is not a skip and is left alone.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

CI_VARIABLE = "CI"


def under_ci() -> bool:
    """Whether this run is CI's (``CI=true``, as .ci/run and most CI services set it)."""
    return os.environ.get(CI_VARIABLE, "").lower() in ("true", "1", "yes")


def _failed_instead(report: pytest.TestReport | pytest.CollectReport) -> None:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CI=true, where every part the suite needs is installed: {reason}"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A test's skip, under CI, becomes its failure."""
    report = yield
    if under_ci() and report.skipped and not hasattr(report, "wasxfail"):
        _failed_instead(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A module skipped as a whole (``pytest.importorskip`` at its top), under CI, fails."""
    report = yield
    if under_ci() and report.skipped:
        _failed_instead(report)
    return report
