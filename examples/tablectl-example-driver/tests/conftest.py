"""The simulated bridge of a test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bridge_helpers import ANTENNAS
from tablectl_example_driver.simulator import BridgeSimulator


@pytest.fixture
async def sim() -> AsyncIterator[BridgeSimulator]:
    """A bridge with antennas A0 (seat 1) and A1 (the board), listening on a free port."""
    simulator = BridgeSimulator(ANTENNAS, model="ACME-R9", firmware="2.1")
    await simulator.start()
    yield simulator
    await simulator.close()
