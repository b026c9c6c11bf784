"""The installed plugin, as tablectl sees it: found by its entry point, its options checked by
``tablectl config check``, built by the daemon, and driven by the simulator as a process.

These tests need the package installed next to tablectl (``pip install .[test]``): the entry
point exists only then.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tomllib
from pathlib import Path

from controller.config import parse_config
from controller.table.inputs import TagArrived, Zone
from drivers.contract import DeviceContext
from drivers.registry import available_drivers, build_device, load_driver

from bridge_helpers import Sink
from tablectl_example_driver.driver import TagBridge

BIN = Path(sys.executable).parent
TABLE = (
    '[table]\nid = "T1"\nstacks = { 1 = 100, 2 = 100 }\nbutton = 1\nblinds = [1, 2]\n'
    'dispense = "dealer"\n'  # a table of readers: no shuffler for the daemon to command
    "[security]\nrequire_signed = false\n"
)
READER = (
    '[devices.reader]\ndriver = "tag-bridge"\nhost = "127.0.0.1"\nport = {port}\n'
    'antennas = {{ A0 = "seat:1", A1 = "board" }}\n'
)


def test_the_entry_point_names_the_driver() -> None:
    assert available_drivers()["tag-bridge"] == "tablectl_example_driver.driver:TagBridge"
    assert load_driver("tag-bridge") is TagBridge


def test_config_check_accepts_it_and_names_each_bad_option(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    journal = f'[journal]\npath = "{tmp_path / "journal.sqlite"}"\n'
    good.write_text(TABLE + READER.format(port=7070) + journal)
    bad.write_text(TABLE + READER.format(port=0).replace('"seat:1"', '"seat:11"') + journal)
    check = [sys.executable, "-m", "controller.cli", "config", "check", "--config"]
    ok = subprocess.run([*check, str(good)], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert "devices: reader (tag-bridge)" in ok.stdout
    refused = subprocess.run([*check, str(bad)], capture_output=True, text=True, check=False)
    assert refused.returncode == 1
    problems = refused.stderr.splitlines()[1:]
    assert len(problems) == 2, refused.stderr
    assert problems[0].strip().startswith("devices.reader.port: Input should be greater")
    assert "devices.reader.antennas: Value error, bad seat zone 'seat:11'" in problems[1]


def test_the_daemon_builds_it_as_a_device() -> None:
    config = parse_config(tomllib.loads(TABLE + READER.format(port=7070)))
    context = DeviceContext(config.table.id, config.table.manifest())
    section = config.devices["reader"]
    device = build_device("reader", section.driver, section.options, context)
    assert isinstance(device, TagBridge)
    assert device.device_id == "reader"
    assert device.view.zones == {"A0": Zone.parse("seat:1"), "A1": Zone.parse("board")}


async def test_the_simulator_process_feeds_the_driver() -> None:
    sim = await asyncio.create_subprocess_exec(
        str(BIN / "tablectl-tag-bridge-sim"), "--antenna", "A0", "--antenna", "A1",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert sim.stdin is not None
    assert sim.stdout is not None
    try:
        first = (await asyncio.wait_for(sim.stdout.readline(), 20)).decode().split()
        assert first[:2] == ["listening", "127.0.0.1"]
        options = {"host": "127.0.0.1", "port": int(first[2]), "antennas": {"A1": "board"}}
        driver = TagBridge.from_options("reader", options)
        sink = Sink()
        task = asyncio.create_task(driver.run(sink))
        try:
            await sink.wait_count(1)
            sim.stdin.write(b"place A0 04c0ffee000001\nplace A1 04c0ffee000002\nbogus\n")
            replies = [(await asyncio.wait_for(sim.stdout.readline(), 10)) for _ in range(3)]
            (arrived,) = (await sink.wait_count(2))[1:]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert replies[:2] == [b"ok 1\n", b"ok 1\n"]
        assert replies[2].startswith(b"error: not a command")
        assert arrived == TagArrived(arrived.ts, "reader", Zone.parse("board"), "04c0ffee000002")
        assert driver.rejected == 2  # A0 is not mapped here: its present (greeting) and place
        sim.stdin.write(b"quit\n")
        assert await asyncio.wait_for(sim.wait(), 10) == 0
    finally:
        if sim.returncode is None:
            sim.kill()
            await sim.wait()
