"""The daemon with the PN532 driver against ``tablectl sim pn532`` on a pty, to the broker."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Collector
from tests.rfid.conftest import SimProcess

pytestmark = pytest.mark.broker

FOREIGN = "04c0ffee000001"  # not a card of the house-a deck
READER_ONLY = 'dispense = "dealer"\n'  # a table of readers: no shuffler to command


async def test_reader_health_and_a_foreign_tag_reach_the_pit(
    tmp_path: Path, daemon_factory: Any, broker: Any
) -> None:
    sim = SimProcess(tmp_path, "--seed", "3")
    try:
        devices = (
            '[devices.rfid]\ndriver = "pn532"\npoll_interval = 0.01\nack_timeout = 0.1\n'
            "response_timeout = 0.2\nreconnect_min = 0.05\n"
            f'[[devices.rfid.modules]]\nport = "{sim.link}"\nzone = "board"\n'
        )
        daemon = daemon_factory(devices=devices, table_extra=READER_ONLY)
        async with Collector(broker, daemon.topics) as collector:
            daemon.start()

            def online(c: Collector) -> bool:
                return any(
                    e["type"] == "device.status"
                    and e["data"].get("device") == "rfid-board"
                    and e["data"].get("health") == "online"
                    for e in c.public
                )

            await collector.wait_for(online, timeout=30)
            await asyncio.to_thread(sim.request, place=[FOREIGN])
            await collector.wait_for(
                lambda c: any(e["type"] == "integrity.alarm" for e in c.secure), timeout=30
            )
        public = next(e for e in collector.public if e["type"] == "integrity.alarm")
        secure = next(e for e in collector.secure if e["type"] == "integrity.alarm")
        assert public["data"]["zone"] == "board"
        assert "uid" not in public["data"]  # the UID travels only to surveillance
        assert secure["data"]["uid"] == FOREIGN
        assert secure["rules"] == ["FOUL-FOREIGN"]
    finally:
        sim.stop()
