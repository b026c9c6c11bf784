"""The tsp-reader-usb driver, and pyusb itself, against simulated readers on the fake backend."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
import usb.core
import usb.util

from controller.table.inputs import (
    DeviceHealthChanged,
    DeviceRebooted,
    Health,
    TagArrived,
    TagDeparted,
)
from drivers.registry import load_driver
from drivers.rfid.tsp_reader.driver import TspReader
from drivers.rfid.tsp_reader.messages import ReaderIdentity
from drivers.rfid.tsp_reader.options import DEFAULT_PID, DEFAULT_VID
from drivers.rfid.tsp_reader.usb import TspUsbReader
from simulators.control_client import ControlClient
from simulators.rfid.usb_backend import SimulatedUsbBus, process_bus
from tests.device_rig import EventLog
from tests.tsp_reader.conftest import ANTENNAS, FAST, UIDS, UsbRigFactory
from tests.waiting import until

A, B, C = UIDS[:3]


def test_pyusb_finds_claims_and_talks_to_the_simulated_reader() -> None:
    bus = SimulatedUsbBus()
    bus.add_reader("RDR-1")
    bus.add_reader("RDR-2")
    try:
        devices = list(usb.core.find(find_all=True, idVendor=DEFAULT_VID, backend=bus))
        assert [d.serial_number for d in devices] == ["RDR-1", "RDR-2"]
        dev = usb.core.find(
            idVendor=DEFAULT_VID,
            idProduct=DEFAULT_PID,
            backend=bus,
            custom_match=lambda d: usb.util.get_string(d, d.iSerialNumber) == "RDR-2",
        )
        assert (dev.manufacturer, dev.product, dev.serial_number) == (
            "tablectl",
            "TSP-RFID-SIM-1",
            "RDR-2",
        )
        assert dev.bDeviceClass == 0
        identity = ReaderIdentity.decode(bytes(dev.ctrl_transfer(0xC0, 0x01, 0, 0, 255)))
        assert (identity.serial, identity.n_antennas) == ("RDR-2", 16)
        dev.set_configuration()
        interface = dev.get_active_configuration()[(0, 0)]
        assert interface.bInterfaceClass == 0xFF
        assert [e.bEndpointAddress for e in interface] == [0x01, 0x81]
        usb.util.claim_interface(dev, 0)
        # Another program cannot take the interface meanwhile.
        others = usb.core.find(find_all=True, backend=bus)
        other = next(d for d in others if d.serial_number == "RDR-2")
        with pytest.raises(usb.core.USBError) as busy:
            usb.util.claim_interface(other, 0)
        assert busy.value.errno == errno.EBUSY
        # Nothing to read is a timeout, as libusb reports it.
        with pytest.raises(usb.core.USBTimeoutError) as idle:
            dev.read(0x81, 64, timeout=20)
        assert idle.value.errno == errno.ETIMEDOUT
        # A request that is not a descriptor or the identity stalls.
        with pytest.raises(usb.core.USBError) as stall:
            dev.ctrl_transfer(0x40, 0x33, 0, 0, None)
        assert stall.value.errno == errno.EPIPE
        # Unplugged: gone from enumeration, and the open handle fails with ENODEV.
        reader = bus.readers[1]
        address = dev.address
        reader.unplug()
        with pytest.raises(usb.core.USBError) as gone:
            dev.read(0x81, 64, timeout=20)
        assert gone.value.errno == errno.ENODEV
        assert [d.serial_number for d in usb.core.find(find_all=True, backend=bus)] == ["RDR-1"]
        # Replugged: back, at a new address.
        reader.replug()
        again = [d for d in usb.core.find(find_all=True, backend=bus) if d.serial_number == "RDR-2"]
        assert len(again) == 1
        assert again[0].address != address
        usb.util.dispose_resources(dev)
        usb.util.dispose_resources(other)
    finally:
        bus.close()


async def test_the_driver_finds_its_reader_by_serial_number(usb_rig: UsbRigFactory) -> None:
    rig = await usb_rig(serials=("RDR-A", "RDR-B"), use="RDR-B")
    assert rig.reader.identity is not None
    assert rig.reader.identity.serial == "RDR-B"
    assert rig.reader.usb_identity is not None
    assert ReaderIdentity.decode(rig.reader.usb_identity).serial == "RDR-B"
    rig.bus.readers[0].handle({"place": [A], "antenna": 0})  # the other reader
    rig.sim(place=[B], antenna=2)
    arrived = await rig.log.first(TagArrived, uid=B)
    assert str(arrived.zone) == "board"
    await rig.sweeps(5)
    assert rig.log.of(TagArrived) == [arrived]
    # The real pyusb paths ran: enumeration, strings, claim, bulk transfers both ways.
    for call in ("ctrl_transfer", "claim_interface", "set_configuration", "bulk_read"):
        assert rig.bus.calls[call] > 0, call
    assert rig.bus.calls["bulk_write"] >= 4  # IDENTIFY, SET_ANTENNA_MAP, SET_SCAN, SCAN_NOW
    # A read is not a frame: the reader's bytes came in more transfers than frames.
    assert rig.device.transfers["in"] > rig.reader.stats.frames_received


async def test_unplug_reconnects_and_replug_reconciles(usb_rig: UsbRigFactory) -> None:
    rig = await usb_rig(snapshot_ms=100)
    rig.sim(place=[A, B], antenna=1)
    await rig.log.first(TagArrived, uid=B)
    boot = rig.reader.boot_id
    mark = len(rig.log.events)
    rig.sim(fault="unplug")
    down = await rig.log.health("rfid", Health.RECONNECTING, after=mark)
    assert "No such device" in down.detail
    assert rig.reader.present("seat:2") == {A, B}  # an unplugged reader is no news
    rig.sim(remove=[A])  # lifted while the reader was off the bus
    reply = rig.sim(fault="replug")
    assert reply["path"].startswith("usb:001:")
    # Bus-powered: the replugged reader booted afresh.
    rebooted = await rig.log.first(DeviceRebooted, after=mark)
    assert rebooted.boot_id != boot
    await rig.log.health("rfid", Health.ONLINE, after=mark)
    await rig.log.first(TagDeparted, uid=A, after=mark)
    await rig.sweeps(20)
    assert rig.log.tags(after=mark) == [("departed", "seat:2", A)]
    assert rig.reader.present("seat:2") == {B}


async def test_unplugged_for_good_the_reader_keeps_being_looked_for(
    usb_rig: UsbRigFactory,
) -> None:
    rig = await usb_rig(fail_after=2)
    mark = len(rig.log.events)
    rig.sim(fault="unplug")
    await rig.log.health("rfid", Health.FAILED, after=mark)
    supervisor = rig.reader.supervisor
    assert supervisor is not None
    await until(lambda: supervisor.sessions >= 4)  # it keeps looking
    rig.sim(fault="replug")
    await rig.log.health("rfid", Health.ONLINE, after=mark)


async def test_flapping_over_usb_makes_no_card_leave(usb_rig: UsbRigFactory) -> None:
    rig = await usb_rig(depart_n=10)
    rig.sim(place=[A, B], antenna=0)
    await rig.log.first(TagArrived, uid=B)
    rig.sim(fault="flap", rate=0.3, antenna=0)
    rig.sim(fault="stacked_miss", rate=0.3, antenna=0)
    await rig.sweeps(150)
    assert rig.device.model.antennas[0].missed_reads > 40
    assert rig.log.of(TagDeparted) == []


async def test_a_simulated_backend_from_the_options_alone(tmp_path: Path) -> None:
    """What ``tablectl run`` does with ``backend = "simulated"``: no test hook, a control socket."""
    control = tmp_path / "usb-reader.ctl"
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(f'tags = {{ 2 = ["{C}"] }}\n', encoding="utf-8")
    options = {
        **FAST,
        "antennas": ANTENNAS,
        "serial_number": "SIM-USB-9",
        "backend": "simulated",
        "simulator_control": str(control),
        "simulator_scenario": str(scenario),
        "simulator_seed": 5,
    }
    assert load_driver("tsp-reader-usb") is TspUsbReader
    log = EventLog()
    reader = TspUsbReader.from_options("rfid", options)
    bus = process_bus()
    try:
        await reader.start(log.sink)
        async with reader:
            await reader.wait_online(10)
            await log.first(TagArrived, uid=C)  # from the scenario's initial tags
            async with ControlClient(control) as sim:
                await sim.send({"place": [A], "antenna": 0})
                status = await sim.status()
            assert status["serial_number"] == "SIM-USB-9"
            await log.first(TagArrived, uid=A)
    finally:
        for device in [r for r in bus.readers if r.serial == "SIM-USB-9"]:
            bus.remove(device)
    assert not control.exists()  # the reader's control socket went with it
    assert Health.ONLINE in [e.health for e in log.of(DeviceHealthChanged)]


def test_driver_options_are_checked() -> None:
    from pydantic import ValidationError

    assert load_driver("tsp-reader") is TspReader
    good = {"port": "/dev/null", "antennas": ANTENNAS}
    TspReader.from_options("rfid", good)
    for bad, message in (
        ({**good, "antennas": []}, "at least 1"),
        ({**good, "antennas": [*ANTENNAS, {"antenna": 0, "zone": "muck"}]}, "share the antenna 0"),
        ({**good, "antennas": [*ANTENNAS, {"antenna": 9, "zone": "board"}]}, "share the zone"),
        ({**good, "antennas": [{"antenna": 0, "zone": "seat:11"}]}, "bad seat zone"),
        ({**good, "colour": "red"}, "Extra inputs"),
    ):
        with pytest.raises(ValidationError, match=message):
            TspReader.from_options("rfid", bad)
    with pytest.raises(ValidationError, match="only apply to backend = 'simulated'"):
        TspUsbReader.from_options("rfid", {"antennas": ANTENNAS, "simulator_seed": 1})


async def test_no_such_reader_is_reported_not_raised() -> None:
    bus = SimulatedUsbBus()
    log = EventLog()
    settings = {**FAST, "antennas": ANTENNAS, "serial_number": "NOBODY", "fail_after": 1}
    reader = TspUsbReader.from_options("rfid", settings, usb_backend=bus)
    await reader.start(log.sink)
    async with reader:
        failed = await log.health("rfid", Health.FAILED)
    assert "no USB 1209:0001 serial NOBODY is plugged in" in failed.detail
