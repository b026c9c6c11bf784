"""What a test run builds once for all its processes: a costly thing (the wheel, a journal of forty
hands) is made by the first test process of the run that asks for it and used by every other.

Each xdist worker is a process of its own, and the suite's scheduler hands out single tests
(tests/conftest.py), so a module- or session-scoped fixture is built again by every worker that
runs one of its tests, and again whenever a worker comes back to its module after another's
tests. ``built_once`` builds in the directory every worker of the run shares (the parent of each
worker's base temporary directory, the run's own one without xdist: pytest-xdist's documented
way, "Making session-scoped fixtures execute only once"), under an exclusive ``flock``: the
first builds, the others wait on the lock and find it built. What is built is read only
afterwards: a test that changes it changes a copy.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest


def run_directory(factory: pytest.TempPathFactory) -> Path:
    """The directory this run's test processes share."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """The directory ``build`` filled for ``name`` in this run: built now if no process of the
    run has built it yet, else the one already built (waiting while another builds it).

    ``build`` gets an empty directory of its own; it becomes the result only once ``build``
    returned, so a build that fails leaves nothing behind and the next process to ask builds
    again (and fails with its own error)."""
    root = run_directory(factory) / "built-once"
    root.mkdir(exist_ok=True)
    done = root / name
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process dies
        if not done.is_dir():
            scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
            try:
                build(scratch)
            except BaseException:
                shutil.rmtree(scratch, ignore_errors=True)
                raise
            scratch.rename(done)
    return done
