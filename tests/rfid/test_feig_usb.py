"""The ``feig-isc`` driver over USB, and pyusb itself, against a simulated ID ISC reader on the
fake pyusb backend (the same simulated bus as the TSP/1 reader's)."""

from __future__ import annotations

import errno
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import usb.core
import usb.util
from pydantic import ValidationError

from controller.table.inputs import Health, TagArrived, TagDeparted, Zone
from drivers.rfid.feig import datasets as d
from drivers.rfid.feig import protocol as p
from drivers.rfid.feig.driver import FeigReader
from drivers.rfid.feig.frames import BROADCAST, Frame, FrameDecoder, encode_request
from drivers.rfid.feig.options import FEIG_VID
from drivers.rfid.presence import ZoneHealth
from drivers.rfid.tsp_reader.options import DEFAULT_VID
from simulators.control_client import ControlClient
from simulators.feig.usb_device import SIMULATED_PID, SimulatedFeigUsbReader, add_feig_reader
from simulators.rfid.usb_backend import SimulatedUsbBus, process_bus
from tests.device_rig import EventLog, UsbRig, UsbRigs
from tests.waiting import until

ANTENNAS = {1: "seat:1", 2: "seat:2", 3: "board", 4: "muck"}
FAST = {
    "scan_period_ms": 5,
    "response_timeout": 0.3,
    "reconnect_min": 0.05,
    "reconnect_max": 0.2,
}


def uid(antenna: int, n: int) -> str:
    return f"e0040150{antenna:04x}{n:04x}"


A, B, C = uid(1, 1), uid(1, 2), uid(3, 1)


def read_frame(dev: Any) -> Frame:
    """Bulk IN transfers until one whole answer frame has come (a transfer is not a frame)."""
    decoder = FrameDecoder(answers=True)
    for _ in range(200):
        for item in decoder.feed(bytes(dev.read(0x81, 64, timeout=1000))):
            assert isinstance(item, Frame), item
            return item
    raise AssertionError("no whole frame in 200 transfers")


def test_pyusb_finds_claims_and_talks_to_the_simulated_feig_reader() -> None:
    bus = SimulatedUsbBus()
    bus.add_reader("RDR-1")  # a TSP/1 reader on the same bus
    reader = add_feig_reader(bus, "FEIG-7", seed=1, rf_timing=False)
    try:
        assert [d.serial_number for d in usb.core.find(find_all=True, backend=bus)] == [
            "RDR-1",
            "FEIG-7",
        ]
        assert usb.core.find(idVendor=DEFAULT_VID, idProduct=SIMULATED_PID, backend=bus) is None
        dev = usb.core.find(idVendor=FEIG_VID, idProduct=SIMULATED_PID, backend=bus)
        assert dev is not None
        # The strings FEIG's own udev rule matches (41-feig.rules of FEIG's Linux SDK).
        assert (dev.manufacturer, dev.product) == ("FEIG ELECTRONIC GmbH", "OBID RFID-Reader")
        assert dev.serial_number == "FEIG-7"
        # A FEIG reader has no TSP/1 identity request: it stalls.
        with pytest.raises(usb.core.USBError) as stall:
            dev.ctrl_transfer(0xC0, 0x01, 0, 0, 255)
        assert stall.value.errno == errno.EPIPE
        dev.set_configuration()
        interface = dev.get_active_configuration()[(0, 0)]
        assert interface.bInterfaceClass == 0xFF
        assert [e.bEndpointAddress for e in interface] == [0x01, 0x81]
        usb.util.claim_interface(dev, 0)
        with pytest.raises(usb.core.USBTimeoutError):
            dev.read(0x81, 64, timeout=20)  # nothing asked, nothing to read
        # The ID ISC frames go over the bulk endpoints as over the serial line.
        dev.write(0x01, encode_request(p.CMD_SOFTWARE_VERSION, b"", BROADCAST))
        answer = read_frame(dev)
        assert (answer.command, answer.status) == (p.CMD_SOFTWARE_VERSION, p.Status.OK)
        assert p.SoftwareVersion.decode(answer.data).reader_type == "ID ISC.M02.M8"
        reader.handle({"place": [A, B], "antenna": 2})
        dev.write(0x01, p.inventory_request([1, 2, 3], address=BROADCAST))
        inventory = read_frame(dev)
        sets = d.decode_inventory(inventory.data, with_antenna=True)
        heard = sorted((read.antenna, item.uid_text()) for item in sets for read in item.antennas)
        assert heard == [(2, A), (2, B)]
        dev.write(0x01, p.inventory_request(None, address=BROADCAST))  # the plain inventory
        plain = d.decode_inventory(read_frame(dev).data, with_antenna=False)
        assert sorted(item.uid_text() for item in plain) == [A, B]
        # Unplugged: ENODEV on the open handle, gone from enumeration; replugged at a new address.
        address = dev.address
        reader.handle({"fault": "unplug"})
        with pytest.raises(usb.core.USBError) as gone:
            dev.read(0x81, 64, timeout=20)
        assert gone.value.errno == errno.ENODEV
        assert usb.core.find(idVendor=FEIG_VID, backend=bus) is None
        reply = reader.handle({"fault": "replug"})
        assert reply["ok"]
        again = usb.core.find(idVendor=FEIG_VID, backend=bus)
        assert again is not None
        assert again.address != address
        usb.util.dispose_resources(dev)
    finally:
        bus.close()


class Rig(UsbRig[SimulatedFeigUsbReader, FeigReader]):
    """The ``feig-isc`` driver on a simulated ID ISC reader on its own simulated bus."""

    async def sweeps(self, count: int) -> None:
        """Wait until the driver has swept ``count`` more times."""
        start = self.reader.sweeps
        await until(lambda: self.reader.sweeps - start >= count)


@pytest.fixture
def rig(usb_rigs: UsbRigs) -> Callable[..., Awaitable[Rig]]:
    async def make(**options: Any) -> Rig:
        bus = usb_rigs.bus()
        device = add_feig_reader(bus, "FEIG-0042", seed=3, rf_timing=False)
        antennas = [{"antenna": a, "zone": z} for a, z in ANTENNAS.items()]
        settings = {
            "vid": FEIG_VID,
            "pid": SIMULATED_PID,
            "serial_number": "FEIG-0042",
            "antennas": antennas,
            **FAST,
            **options,
        }
        reader = FeigReader.from_options("rfid", settings, usb_backend=bus)
        return await usb_rigs.start(Rig(bus, device, reader, EventLog()))

    return make


async def test_tags_arrive_and_depart_over_usb(rig: Callable[..., Awaitable[Rig]]) -> None:
    r = await rig()
    r.sim(place=[A, B], antenna=1)
    r.sim(place=[C], antenna=3)
    for tag, zone in ((A, "seat:1"), (B, "seat:1"), (C, "board")):
        assert (await r.log.arrived(tag)).zone == Zone.parse(zone)
    r.sim(remove=[A])
    departed = await r.log.departed(A)
    assert departed.zone == Zone.parse("seat:1")
    await r.sweeps(5)
    assert r.reader.present("seat:1") == {B}
    assert r.reader.present("board") == {C}
    assert r.log.departures() == [departed]
    # The real pyusb paths ran: enumeration, strings, claim, bulk transfers both ways.
    for call in ("enumerate_devices", "ctrl_transfer", "claim_interface", "bulk_write"):
        assert r.bus.calls[call] > 0, call
    assert r.device.line.readers[0].commands[p.CMD_SOFTWARE_VERSION] == 1


async def test_unplug_reconnects_and_replug_reconciles(rig: Callable[..., Awaitable[Rig]]) -> None:
    r = await rig()
    seat1 = Zone.parse("seat:1")
    r.sim(place=[A, B], antenna=1)
    await r.log.arrived(B)
    await r.log.arrived(A)
    mark = len(r.log.events)
    r.sim(fault="unplug")
    down = await r.log.health("rfid", Health.RECONNECTING, after=mark)
    assert "No such device" in down.detail
    # Unplugged is no news: the zone is stale, its tags stay.
    assert r.reader.tracker.health(seat1) is ZoneHealth.STALE
    assert r.reader.present("seat:1") == {A, B}
    supervisor = r.reader.supervisor
    assert supervisor is not None
    sessions = supervisor.sessions
    await until(lambda: supervisor.sessions >= sessions + 2)  # it keeps looking meanwhile
    r.sim(remove=[A])  # lifted while the reader was off the bus
    address = r.device.address
    r.sim(fault="replug")
    assert r.device.path is not None
    assert r.device.path.startswith("usb:001:")
    assert r.device.address != address  # re-enumerated
    await r.log.health("rfid", Health.ONLINE, after=mark)
    await r.log.departed(A, after=mark)
    await r.sweeps(10)
    assert r.reader.tracker.health(seat1) is ZoneHealth.FRESH
    tags = [e for e in r.log.events[mark:] if isinstance(e, TagArrived | TagDeparted)]
    assert [(type(e).__name__, e.uid) for e in tags] == [("TagDeparted", A)]
    assert r.reader.present("seat:1") == {B}
    assert r.device.unplugs == 1
    assert r.device.line.readers[0].commands[p.CMD_SOFTWARE_VERSION] == 2  # set up afresh


async def test_a_full_table_comes_in_0x94_pages_over_usb(
    rig: Callable[..., Awaitable[Rig]],
) -> None:
    r = await rig()
    table = {antenna: [uid(antenna, n) for n in range(12)] for antenna in ANTENNAS}
    r.sim(tags={str(a): uids for a, uids in table.items()})  # 48 tags: four pages of twelve
    for antenna, uids in table.items():
        for tag in uids:
            assert (await r.log.arrived(tag)).zone == Zone.parse(ANTENNAS[antenna])
    for antenna, zone in ANTENNAS.items():
        assert r.reader.present(zone) == set(table[antenna])
    assert r.device.line.readers[0].pages_sent >= 3
    assert r.reader.pages >= 3
    assert r.log.departures() == []


async def test_a_simulated_backend_from_the_options_alone(tmp_path: Path) -> None:
    """What ``tablectl run`` does with ``backend = "simulated"``: no test hook, a control socket
    and a scenario."""
    control = tmp_path / "feig-usb.ctl"
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(f'[[step]]\nat = 0\nplace = ["{C}"]\nantenna = 3\n', encoding="utf-8")
    antennas = [{"antenna": a, "zone": z} for a, z in ANTENNAS.items()]
    options = {
        **FAST,
        "antennas": antennas,
        "vid": FEIG_VID,
        "pid": SIMULATED_PID,
        "serial_number": "FEIG-SIM-9",
        "backend": "simulated",
        "simulator_control": str(control),
        "simulator_scenario": str(scenario),
        "simulator_seed": 5,
    }
    reader = FeigReader.from_options("rfid", options)
    reader.expect(frozenset({Zone.parse("board"), Zone.parse("seat:1")}))  # FEIG's pace: fewer
    bus = process_bus()
    await reader.start()
    log = EventLog(reader)
    try:
        await log.health("rfid", Health.ONLINE)
        assert (await log.arrived(C)).zone == Zone.parse("board")  # the scenario's step
        async with ControlClient(control) as sim:
            await sim.send({"place": [A], "antenna": 1})
            status = await sim.status()
        assert status["device"] == f"usb {FEIG_VID:04x}:{SIMULATED_PID:04x} serial FEIG-SIM-9"
        assert status["antennas"]["1"]["tags"] == [A]
        assert (await log.arrived(A)).zone == Zone.parse("seat:1")
    finally:
        await reader.stop()
        await log.close()
        for device in [d for d in bus.readers if d.serial == "FEIG-SIM-9"]:
            bus.remove(device)
    assert not control.exists()  # the reader's control socket went with it


def test_usb_options_are_checked() -> None:
    antennas = [{"antenna": 1, "zone": "seat:1"}]
    usb_reader = {"vid": FEIG_VID, "pid": SIMULATED_PID, "antennas": antennas}
    FeigReader.from_options("rfid", {**usb_reader, "backend": "simulated", "simulator_seed": 1})
    for bad, message in (
        ({**usb_reader, "simulator_seed": 1}, "only apply to backend = 'simulated'"),
        ({"port": "/dev/null", "antennas": antennas, "backend": "simulated"}, "is for a USB"),
        ({**usb_reader, "backend": "libusb0"}, "backend"),
        ({"vid": FEIG_VID, "antennas": antennas}, "needs both vid and pid"),
    ):
        with pytest.raises(ValidationError, match=message):
            FeigReader.from_options("rfid", bad)
