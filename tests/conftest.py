"""Suite-wide configuration: hypothesis profiles, a PostgreSQL server for the pit's tests, drivers
on simulated USB buses for the readers' tests, and the long tests first."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.device_rig import UsbRigs
from tests.postgres import PostgresServer, binaries

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server for this test process (skipped when PostgreSQL is not installed)."""
    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    server = PostgresServer()
    server.start()
    yield server
    server.stop()


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
