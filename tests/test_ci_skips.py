"""Under ``CI=true`` a skipped test, or a module skipped whole, fails with its reason; locally
it stays a skip, listed at the end of the run; an expected failure is left alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SAMPLE = """
import pytest

def test_passes():
    pass

def test_needs_a_part():
    pytest.skip("the part is not installed")

@pytest.mark.skipif(True, reason="never here")
def test_marked():
    pass

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_to_fail():
    assert False
"""

WHOLE_MODULE = """
import pytest
pytest.importorskip("a_module_that_is_not_installed")

def test_never_collected():
    pass
"""


def run(tmp_path: Path, ci: str | None, module: str = SAMPLE) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(module)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.ci_skips", "-p", "no:cacheprovider",
         # the suite's other plugins are not what is tested, and each costs a start
         "-p", "no:xdist", "-p", "no:hypothesispytest", "-p", "no:anyio", "-p", "no:asyncio",
         "-ra", "-q", "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path),
         str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60, check=False,
    )  # fmt: skip


def test_under_ci_every_skip_fails_with_its_reason(tmp_path: Path) -> None:
    done = run(tmp_path, "true")
    assert done.returncode == 1, done.stdout
    summary = done.stdout.strip().splitlines()[-1]
    # a skip in the call is a failure, one in the setup (a skipif mark) an error: both fail
    assert "1 failed" in summary
    assert "1 error" in summary
    assert "1 passed" in summary
    assert "1 xfailed" in summary
    assert "skipped" not in summary
    assert "the part is not installed" in done.stdout
    assert "never here" in done.stdout
    assert "skipped under CI=true" in done.stdout


def test_under_ci_a_module_skipped_whole_stops_the_run(tmp_path: Path) -> None:
    done = run(tmp_path, "true", WHOLE_MODULE)
    assert done.returncode != 0, done.stdout
    assert "skipped under CI=true" in done.stdout
    assert "a_module_that_is_not_installed" in done.stdout


@pytest.mark.parametrize("ci", [None, "false"])
def test_elsewhere_skips_stay_skips_listed_at_the_end(tmp_path: Path, ci: str | None) -> None:
    done = run(tmp_path, ci)
    assert done.returncode == 0, done.stdout
    summary = done.stdout.strip().splitlines()[-1]
    assert "1 passed" in summary
    assert "2 skipped" in summary
    assert "1 xfailed" in summary
    assert done.stdout.count("SKIPPED") == 2
    whole = run(tmp_path, ci, WHOLE_MODULE)
    assert whole.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, whole.stdout
    assert "1 skipped" in whole.stdout.strip().splitlines()[-1]
