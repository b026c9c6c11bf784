"""End to end: the ``feig-isc`` driver against ``tablectl sim feig`` running as its own process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    Health,
    TagArrived,
    TagDeparted,
    Zone,
)
from drivers.rfid.feig.driver import FeigReader
from tests.device_rig import EventLog
from tests.rfid.conftest import SimProcess
from tests.waiting import until

#: The demo table's antennas, numbered as the multiplexer numbers them.
ANTENNAS = {
    **{seat: f"seat:{seat}" for seat in range(1, 11)},
    11: "board",
    12: "burn",
    13: "muck",
    14: "shuffler_in",
}
FAST = {"scan_period_ms": 5, "response_timeout": 0.3, "reconnect_min": 0.05}


def uid(antenna: int, n: int) -> str:
    return f"e0040150{antenna:04x}{n:04x}"


#: Two cards a seat, five on the board, a few elsewhere: 43 tags, three pages an inventory.
TABLE = {
    antenna: [uid(antenna, n) for n in range({11: 5, 12: 3, 13: 10, 14: 5}.get(antenna, 2))]
    for antenna in ANTENNAS
}

Start = Callable[..., Awaitable[tuple[FeigReader, EventLog]]]


@pytest.fixture
async def feig(sim_process: Callable[..., SimProcess]) -> Any:
    running: list[tuple[FeigReader, EventLog]] = []

    async def start(*args: str, **options: Any) -> tuple[FeigReader, EventLog, SimProcess]:
        sim = sim_process("--antennas", "14", "--seed", "5", *args, kind="feig")
        antennas = [{"antenna": a, "zone": z} for a, z in ANTENNAS.items()]
        reader = FeigReader.from_options(
            "rfid", {"port": str(sim.link), "antennas": antennas, **FAST, **options}
        )
        await reader.start()
        log = EventLog(reader)
        running.append((reader, log))
        await log.health("rfid", Health.ONLINE)
        return reader, log, sim

    yield start
    for reader, log in running:
        await reader.stop()
        await log.close()


async def control(sim: SimProcess, **request: Any) -> dict[str, Any]:
    return await asyncio.to_thread(sim.request, **request)


async def test_every_zone_arrives_and_departs_across_0x94_pages(feig: Any) -> None:
    reader, log, sim = await feig("--baud", "0", "--no-rf-timing")
    await control(sim, tags={str(a): uids for a, uids in TABLE.items()})
    for antenna, uids in TABLE.items():
        for tag in uids:
            event = await log.arrived(tag)
            assert event.zone == Zone.parse(ANTENNAS[antenna])
    for antenna, zone in ANTENNAS.items():
        assert reader.present(zone) == set(TABLE[antenna])
    assert reader.pages > 0  # 43 tags do not fit one frame: 0x94, then MORE
    status = await control(sim, status=True)
    assert status["pages_sent"] > 0
    assert status["commands"]["b0"] > status["inventories"]

    mark = len(log.events)
    await control(sim, tags={})
    for uids in TABLE.values():
        for tag in uids:
            await log.departed(tag, after=mark)
    assert all(not reader.present(zone) for zone in ANTENNAS.values())
    assert not [e for e in log.events if isinstance(e, DeviceFault)]


async def test_unplug_and_replug_reconnect_and_reconcile(feig: Any) -> None:
    reader, log, sim = await feig("--baud", "0", "--no-rf-timing")
    a, b = uid(1, 1), uid(11, 1)
    await control(sim, place=[a], antenna=1)
    await control(sim, place=[b], antenna=11)
    await log.arrived(a)
    await log.arrived(b)

    await control(sim, fault="unplug")
    await log.health("rfid", Health.RECONNECTING)
    mark = len(log.events)
    await control(sim, remove=[a])
    await control(sim, fault="replug")
    await log.health("rfid", Health.ONLINE, after=mark)
    await log.departed(a, after=mark)
    assert [e.uid for e in log.departures()] == [a]  # nothing departed while it was away
    assert reader.present("board") == {b}
    assert reader.rf_resets >= 2  # every connection starts with an RF reset


async def test_a_broken_antenna_makes_its_zone_stale_never_a_departure(feig: Any) -> None:
    reader, log, sim = await feig("--baud", "0", "--no-rf-timing")
    a, b = uid(3, 1), uid(4, 1)
    await control(sim, place=[a], antenna=3)
    await control(sim, place=[b], antenna=4)
    await log.arrived(a)
    await log.arrived(b)

    for code in ("open", "short"):
        mark = len(log.events)
        await control(sim, fault="antenna", antenna=3, code=code)
        fault = await log.wait_for(lambda e: isinstance(e, DeviceFault), after=mark)
        assert isinstance(fault, DeviceFault)
        assert (fault.code, fault.fault_id) == ("ANTENNA_FAULT", 3)
        assert code.upper() in fault.detail
        if code == "open":
            await log.health("rfid-seat3", Health.STALE, after=mark)
        await control(sim, remove=[a])  # lifted while nobody can see it
        sweeps = reader.sweeps
        await until_sweeps(reader, sweeps + 20)
        assert log.departures() == []
        assert reader.present("seat:3") == {a}
        assert reader.present("seat:4") == {b}  # the other antennas go on
        await control(sim, place=[a], antenna=3)

    mark = len(log.events)
    await control(sim, remove=[a])
    await control(sim, clear="antenna", antenna=3)
    cleared = await log.wait_for(lambda e: isinstance(e, DeviceFaultCleared), after=mark)
    assert isinstance(cleared, DeviceFaultCleared)
    await log.health("rfid-seat3", Health.ONLINE, after=mark)
    await log.departed(a, after=mark)  # reconciled once the antenna sees again


async def test_link_faults_are_failed_sweeps_and_no_news(feig: Any) -> None:
    reader, log, sim = await feig(
        "--baud", "0", "--no-rf-timing", stale_after=2, response_timeout=0.1
    )
    tags = [uid(5, 1), uid(5, 2), uid(6, 1)]
    await control(sim, place=tags[:2], antenna=5)
    await control(sim, place=tags[2:], antenna=6)
    for tag in tags:
        await log.arrived(tag)

    for fault in ({"fault": "crc", "rate": 0.5}, {"fault": "partial", "rate": 0.5}):
        failed = reader.failed_sweeps
        await control(sim, **fault)
        await until_failed(reader, failed + 5)
        await control(sim, clear=fault["fault"])
    await until_sweeps(reader, reader.sweeps + 1)  # a good sweep: the count of failures restarts
    mark = len(log.events)
    await control(sim, fault="stall", seconds=0.5)
    await log.health("rfid", Health.STALE, after=mark)
    await log.health("rfid", Health.ONLINE, after=mark)
    assert log.departures() == []
    assert all(reader.present(f"seat:{n}") for n in (5, 6))
    assert reader.link is not None
    assert reader.link.counters.bad_frames > 0


async def test_crosstalk_never_moves_a_card_and_a_slide_does(feig: Any) -> None:
    reader, log, sim = await feig("--baud", "0", "--no-rf-timing", "--crosstalk", "0.5")
    seated = {seat: [uid(seat, 1), uid(seat, 2)] for seat in range(1, 11)}
    await control(sim, tags={str(seat): uids for seat, uids in seated.items()})
    for seat, uids in seated.items():
        for tag in uids:
            assert (await log.arrived(tag)).zone == Zone.parse(f"seat:{seat}")
    await until_sweeps(reader, reader.sweeps + 100)
    assert reader.arbiter.shadowed > 0  # neighbours did assert cards: the arbiter kept them out
    moves = [e for e in log.events if isinstance(e, TagArrived | TagDeparted)]
    assert len(moves) == 20  # the arrivals, nothing else

    mark = len(log.events)
    card = seated[7][0]
    await control(sim, slide=[card], antenna=13, inventories=4)
    departed = await log.departed(card, after=mark)
    arrived = await log.arrived(card, after=mark)
    assert (departed.zone, arrived.zone) == (Zone.parse("seat:7"), Zone.parse("muck"))
    assert reader.present("muck") == {card}


async def until_sweeps(reader: FeigReader, count: int) -> None:
    await until(lambda: reader.sweeps >= count, 20, f"{count} sweeps")


async def until_failed(reader: FeigReader, count: int) -> None:
    await until(lambda: reader.failed_sweeps >= count, 20, f"{count} failed sweeps")


async def test_an_rf_fault_is_named_by_the_readers_diagnostic_and_no_news(feig: Any) -> None:
    _reader, log, sim = await feig("--baud", "0", "--no-rf-timing", stale_after=2)
    tag = uid(7, 1)
    await control(sim, place=[tag], antenna=7)
    await log.arrived(tag)
    mark = len(log.events)
    await control(sim, fault="rf", problem="noise")
    stale = await log.health("rfid", Health.STALE, after=mark)
    assert "RF_COMMUNICATION_ERROR" in stale.detail
    assert "RF front end: noise" in stale.detail
    await control(sim, remove=[tag])  # lifted while the reader cannot see
    await control(sim, clear="rf")
    await log.health("rfid", Health.ONLINE, after=mark)
    await log.departed(tag, after=mark)  # once it sees again, not before
    departed_at = next(i for i, e in enumerate(log.events) if isinstance(e, TagDeparted))
    online_at = max(
        i
        for i, e in enumerate(log.events)
        if getattr(e, "device", None) == "rfid" and getattr(e, "health", None) is Health.ONLINE
    )
    assert departed_at > online_at
