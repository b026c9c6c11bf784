"""The driver against the simulated bridge, over real TCP connections."""

from __future__ import annotations

import asyncio
import socket

import pytest
from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    Health,
    Purpose,
    TagArrived,
    TagDeparted,
    Zone,
)
from controller.table.plan import DispenseRequest
from drivers.contract import Device
from drivers.errors import DeviceCommandError, DeviceError
from pydantic import ValidationError

from bridge_helpers import Sink, make_driver
from tablectl_example_driver.driver import TagBridge
from tablectl_example_driver.simulator import BridgeSimulator

SEAT, BOARD = Zone.parse("seat:1"), Zone.parse("board")
CARD, OTHER = "04a1b2c3d4e580", "04a1b2c3d4e581"


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_online_then_every_movement_in_order(sim: BridgeSimulator) -> None:
    driver = make_driver(sim)
    assert isinstance(driver, Device)
    sink = Sink()
    task = asyncio.create_task(driver.run(sink))
    try:
        (online,) = await sink.wait_count(1)
        assert isinstance(online, DeviceHealthChanged)
        assert (online.device, online.health, online.kind) == ("rfid", Health.ONLINE, "reader")
        assert online.detail == "ACME-R9 2.1 at " + driver.address
        assert (await driver.query()).online
        assert driver.describe()["model"] == "ACME-R9"
        assert driver.describe()["zones"] == {"A0": "seat:1", "A1": "board"}

        sim.place("A0", CARD)
        sim.place("A1", "04:A1:B2:C3:D4:E5:81")
        sim.fault("RF_FRONTEND", "antenna A1 open")
        sim.lift("A0", CARD)
        sim.clear("RF_FRONTEND")
        items = (await sink.wait_count(6))[1:]
    finally:
        await _stop(task)
    assert [type(i) for i in items] == [
        TagArrived, TagArrived, DeviceFault, TagDeparted, DeviceFaultCleared
    ]  # fmt: skip
    assert items[0] == TagArrived(items[0].ts, "rfid", SEAT, CARD)
    assert items[1] == TagArrived(items[1].ts, "rfid", BOARD, OTHER)
    assert isinstance(items[2], DeviceFault)
    assert (items[2].code, items[2].detail) == ("RF_FRONTEND", "antenna A1 open")
    assert not (await driver.query()).online


async def test_bad_lines_are_counted_and_the_next_line_is_read(sim: BridgeSimulator) -> None:
    driver = make_driver(sim)
    sink = Sink()
    task = asyncio.create_task(driver.run(sink))
    try:
        await sink.wait_count(1)
        sim.raw(b"arrive A9 04a1b2c3d4e580\n")  # an antenna nobody mapped
        sim.raw(b"arrive A0 not-a-uid\nwhat is this\n\xff\xfe\n")
        sim.raw(b"x" * 5000 + b"\n")  # far too long
        sim.raw(b"arr")  # a line in two pieces
        await sim.drain()
        sim.raw(b"ive A0 " + CARD.encode() + b"\n")
        (arrived,) = (await sink.wait_count(2))[1:]
    finally:
        await _stop(task)
    assert arrived == TagArrived(arrived.ts, "rfid", SEAT, CARD)
    assert driver.rejected == 5
    assert "5 rejected" in (await driver.query()).detail


async def test_a_reconnect_reports_what_changed_while_away(sim: BridgeSimulator) -> None:
    driver = make_driver(sim)
    sink = Sink()
    task = asyncio.create_task(driver.run(sink))
    await sink.wait_count(1)
    sim.place("A0", CARD)
    sim.place("A0", OTHER)
    await sink.wait_count(3)
    sim.drop()  # the bridge restarts
    with pytest.raises(DeviceError, match="connection closed"):
        await asyncio.wait_for(task, 10)
    # meanwhile: a card lifted, one put on the board; then the daemon runs the driver again
    sim.lift("A0", CARD)
    sim.place("A1", CARD)
    task = asyncio.create_task(driver.run(sink))
    try:
        items = (await sink.wait_count(6))[3:]
    finally:
        await _stop(task)
    assert [(type(i), getattr(i, "zone", None)) for i in items] == [
        (DeviceHealthChanged, None),
        (TagDeparted, SEAT),  # what the snapshot of A0 no longer holds
        (TagArrived, BOARD),
    ]
    assert driver.view.present == {SEAT: {OTHER}, BOARD: {CARD}}
    assert sim.connections == 2


async def test_no_bridge_no_hello_and_silence_are_device_errors(sim: BridgeSimulator) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        refused = TagBridge.from_options(
            "rfid", {"host": "127.0.0.1", "port": port, "antennas": {"0": "board"}}
        )
        with pytest.raises(DeviceError, match=f"127.0.0.1:{port}"):
            await refused.run(Sink())

    async def rude(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"# not yet\narrive A0 04a1b2c3\n")
        await reader.read()
        writer.close()

    server = await asyncio.start_server(rude, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        impolite = TagBridge.from_options(
            "rfid", {"host": "127.0.0.1", "port": port, "antennas": {"A0": "board"}}
        )
        with pytest.raises(DeviceError, match="expected hello, got b'arrive A0"):
            await impolite.run(Sink())
    finally:
        server.close()
        await server.wait_closed()

    silent = make_driver(sim, idle_timeout=0.2)  # the simulator sends no pings
    sink = Sink()
    with pytest.raises(DeviceError, match=r"silent for 0\.2 s"):
        await asyncio.wait_for(silent.run(sink), 10)
    assert [type(i) for i in sink.items] == [DeviceHealthChanged]


async def test_pings_keep_a_quiet_connection_alive() -> None:
    sim = BridgeSimulator({"A0": "seat:1"}, ping_interval=0.02)
    await sim.start()
    driver = make_driver(sim, idle_timeout=0.2, antennas={"A0": "seat:1"})
    sink = Sink()
    task = asyncio.create_task(driver.run(sink))
    try:
        await sink.wait_count(1)
        deadline = asyncio.get_running_loop().time() + 10
        while sim.pings < 30:  # 0.6 s of pings: three idle timeouts without a real line
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        assert not task.done()
        assert sim.connections == 1
        assert driver.lines >= 30
    finally:
        await _stop(task)
        await sim.close()


async def test_a_reader_takes_no_shuffler_commands(sim: BridgeSimulator) -> None:
    driver = make_driver(sim)
    with pytest.raises(DeviceCommandError, match="does not shuffle"):
        await driver.shuffle(1)
    with pytest.raises(DeviceCommandError, match="does not dispense"):
        await driver.dispense(1, 1, DispenseRequest(Purpose.HOLE, 1, 2))
    with pytest.raises(DeviceCommandError, match="has no deck"):
        await driver.reveal(1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"port": 70000}, "less than or equal to 65535"),
        ({"antennas": {}}, "at least 1 item"),
        ({"antennas": {"A0": "seat:11"}}, "bad seat zone 'seat:11'"),
        ({"antennas": {"A0": "board", "A1": "board"}}, "antennas 'A0' and 'A1' both watch board"),
        ({"antennas": {"left side": "board"}}, "must be one word"),
        ({"colour": "red"}, "Extra inputs are not permitted"),
    ],
)
def test_options_are_checked(options: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"host": "bridge.local", "port": 7070, "antennas": {"A0": "board"}}
    with pytest.raises(ValidationError, match=message):
        TagBridge.from_options("rfid", {**base, **options})
