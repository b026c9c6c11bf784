"""The daemon with the TSP/1 reader: over a pty (``tablectl sim rfid``) and over USB (the
simulated pyusb backend inside the daemon), to the broker."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from simulators.control_client import ControlClient
from tests.integration.conftest import Collector

pytestmark = pytest.mark.broker

FOREIGN = "04c0ffee000002"  # not a card of the house-a deck
READER_ONLY = 'dispense = "dealer"\n'  # a table of readers: no shuffler to command
READER = (
    "scan_period_ms = 10\narrive_n = 2\ndepart_n = 3\nsnapshot_ms = 200\n"
    "heartbeat_interval = 0.2\nresponse_timeout = 0.15\nbackoff_base = 0.05\nbackoff_cap = 0.4\n"
    '[[devices.rfid.antennas]]\nantenna = 0\nzone = "seat:1"\n'
    '[[devices.rfid.antennas]]\nantenna = 1\nzone = "board"\n'
)


async def _foreign_tag_reaches_the_pit(daemon: Any, broker: Any, control: Path) -> None:
    async with Collector(broker, daemon.topics) as collector:
        daemon.start()

        def online(c: Collector) -> bool:
            return any(
                e["type"] == "device.status"
                and e["data"].get("device") == "rfid"
                and e["data"].get("health") == "online"
                for e in c.public
            )

        await collector.wait_for(online, timeout=30)
        client = ControlClient(control)
        await client.connect()
        try:
            await client.send({"place": [FOREIGN], "antenna": 1})
        finally:
            await client.close()
        await collector.wait_for(
            lambda c: any(e["type"] == "integrity.alarm" for e in c.secure), timeout=30
        )
    public = next(e for e in collector.public if e["type"] == "integrity.alarm")
    secure = next(e for e in collector.secure if e["type"] == "integrity.alarm")
    assert public["data"]["zone"] == "board"
    assert "uid" not in public["data"]
    assert secure["data"]["uid"] == FOREIGN
    assert secure["rules"] == ["FOUL-FOREIGN"]
    kinds = {e["data"].get("kind") for e in collector.public if e["type"] == "device.status"}
    assert "reader" in kinds


async def test_a_serial_tsp_reader_reports_to_the_pit(
    tmp_path: Path, daemon_factory: Any, broker: Any
) -> None:
    link, control = tmp_path / "rfid.tty", tmp_path / "rfid.ctl"
    sim = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.cli", "sim", "rfid",
        "--link", str(link), "--control", str(control), "--seed", "5",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert sim.stdout is not None
        assert (await asyncio.wait_for(sim.stdout.readline(), 20)).startswith(b"/dev/pts/")
        devices = f'[devices.rfid]\ndriver = "tsp-reader"\nport = "{link}"\n' + READER
        daemon = daemon_factory(devices=devices, table_extra=READER_ONLY)
        await _foreign_tag_reaches_the_pit(daemon, broker, control)
    finally:
        if sim.returncode is None:
            sim.terminate()
        # its output read to its end: an asyncio subprocess's transport closes once the process
        # exited and its pipes did; wait() returns at the exit, and a transport left open when
        # the test's loop closes is collected in a later test ("unclosed transport")
        await asyncio.wait_for(sim.communicate(), 10)


async def test_a_usb_tsp_reader_reports_to_the_pit(
    tmp_path: Path, daemon_factory: Any, broker: Any
) -> None:
    control = tmp_path / "usb.ctl"
    devices = (
        '[devices.rfid]\ndriver = "tsp-reader-usb"\nbackend = "simulated"\n'
        f'simulator_control = "{control}"\nsimulator_seed = 5\n' + READER
    )
    daemon = daemon_factory(devices=devices, table_extra=READER_ONLY)
    await _foreign_tag_reaches_the_pit(daemon, broker, control)
