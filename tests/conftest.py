"""Suite-wide configuration: hypothesis profiles, a PostgreSQL server for the pit's tests, drivers
on simulated USB buses for the readers' tests, and the long tests first."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from hypothesis import HealthCheck, settings
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

from controller import passwords
from tests.device_rig import UsbRigs
from tests.once import built_once
from tests.played import JOURNAL, write_played
from tests.postgres import PostgresServer, binaries

# CI=true: a skip is a failure (tests/ci_skips.py)
pytest_plugins = ("tests.ci_skips",)

settings.register_profile("dev", max_examples=100, deadline=None)
# CI runs the same examples every time (derandomize: a failure there is one to reproduce, not
# luck), as many as a run here: twice as many cost the suite's 5-minute budget some 30 s of
# CPU on 2 cores for examples no rule asked for.
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# make mutation (benchmarks/mutation.py): CI's derandomized examples, a quarter as many, so a
# mutant no scenario catches does not wait minutes on properties for its verdict.
settings.register_profile(
    "mutation",
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The pit's passwords and the dealers' PINs hashed in the test processes: argon2id as ever, at
# the least cost RFC 9106 allows (section 3.1: one pass, one lane of 8 KiB). At the hasher's
# defaults (3 passes over 64 MiB, 4 lanes) each user a test adds and each login it checks is
# 0.25 s of CPU: 49 s for the 37 tests of test_users, test_pits_share, test_live, test_api and
# test_lockout alone, on a machine of 2 cores. A hash carries its parameters: a pit process of
# its own (tablectl pit run) verifies these and makes them again at its defaults.
passwords.hasher = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server for this test process (skipped when PostgreSQL is not installed)."""
    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    server = PostgresServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def played_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal of 40 hands whose events the broker acknowledged (tests/played.py), written
    once for the whole run (tests/once.py): a test copies the file before it opens it."""
    return built_once(tmp_path_factory, "played-journal", write_played) / JOURNAL


@pytest.fixture
async def usb_rigs() -> AsyncIterator[UsbRigs]:
    """Buses and drivers for :class:`~tests.device_rig.UsbRig` rigs; all stopped at teardown."""
    rigs = UsbRigs()
    yield rigs
    await rigs.close()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores this run may use. Most tests spend much of
    their time waiting on processes, ptys and the broker; with one worker a core the cores idle
    a third of the time (2 cores: 2 workers 5 min 18 s, 3 workers 4 min 31 s, 4 workers 4 min
    41 s for the same suite)."""
    return len(os.sched_getaffinity(0)) + 1


# The modules whose tests share one costly module-scoped fixture (the built wheel and its venv; a
# pit with its browser): all the tests of one of them run on one worker, in file order.
ONE_WORKER_MODULES = frozenset(
    {
        "tests/packaging/test_installed.py",
        "tests/packaging/test_offline.py",
        "tests/integration/test_pit_console.py",
        "tests/pit/test_console_a11y.py",
        "tests/station/test_browser.py",
    }
)


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its module for ``ONE_WORKER_MODULES``, else itself."""
    module = nodeid.split("::", 1)[0]
    return module if module in ONE_WORKER_MODULES else nodeid


class OneWorkerModules(LoadScopeScheduling):  # type: ignore[misc]  # xdist has no types
    """``--dist loadgroup`` as this suite means it: each test a unit of work of its own, given
    to the next free worker, except the tests of ``ONE_WORKER_MODULES``, one unit each.

    Not xdist's own loadgroup: it finds a test's ``xdist_group`` by a suffix it writes into the
    test's node id, which pytest 9.2 no longer lets a plugin change (pytest-xdist issue 1386);
    the groups were silently ignored and every worker built a venv of its own.
    """

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LoadScopeScheduling | None:
    """The scheduler of ``--dist loadgroup`` (the suite's addopts); xdist's for the others."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return OneWorkerModules(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` first, the heaviest (``slow(weight=N)``, default 1) first among
    them, then the others; each group in its collection order.

    The workers take tests as they free up (``--dist loadgroup``): the run ends when its last
    test does, so a test of a minute must not be among the last to start.
    """

    def weight(item: pytest.Item) -> int:
        marker = item.get_closest_marker("slow")
        return 0 if marker is None else int(marker.kwargs.get("weight", 1))

    items.sort(key=weight, reverse=True)  # stable: collection order within a weight
