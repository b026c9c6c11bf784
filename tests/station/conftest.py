"""Fixtures of the station's tests: a real mosquitto, and the table of tests/station/rig.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.broker import Broker, mosquitto_available
from tests.station.rig import Table, make_table


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A mosquitto of this test's own (stopped at the end)."""
    if not mosquitto_available():
        pytest.skip("mosquitto is not installed")
    directory = tmp_path / "broker"
    directory.mkdir()
    instance = Broker(directory, extra=f"persistence true\npersistence_location {directory}/\n")
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
def table(tmp_path: Path, broker: Broker) -> Iterator[Table]:
    """The rig's table, its daemon started and ready (killed at the end)."""
    # RR-SD-4: the virtual table's readers never see the losing hands reach the muck, so the
    # dealer confirms them killed (the house lets the dealer: dealer_may_confirm)
    made = make_table(
        tmp_path / "table",
        broker,
        table_extra='house_rules = { dealer_may_confirm = ["RR-SD-4"] }\n',
    )
    made.daemon.start()
    yield made
    made.daemon.close()
