"""End to end: the ``feig-isc`` driver against ``tablectl sim feig`` running as its own process.

The simulator is a line of two ID ISC.M02.M8 readers (COM-ADR 1 and 2, eight antennas each) with
fourteen antennas in all, the demo table's; the driver names each antenna by its reader and
ANT_NR, as a table's config does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    Health,
    TagArrived,
    TagDeparted,
    Zone,
)
from drivers.paths import config_dir
from drivers.rfid.feig.driver import FeigReader, fault_id
from tests.device_rig import EventLog
from tests.rfid.conftest import SimProcess
from tests.waiting import until

#: The demo table's antennas, numbered as the line numbers them (1…8 reader 1, 9… reader 2).
ANTENNAS = {
    **{seat: f"seat:{seat}" for seat in range(1, 11)},
    11: "board",
    12: "burn",
    13: "muck",
    14: "shuffler_in",
}
FAST = {"scan_period_ms": 5, "response_timeout": 0.3, "reconnect_min": 0.05}
LINE = ("--readers", "1,2", "--antennas", "14", "--seed", "5")
UNPACED = ("--baud", "0", "--no-rf-timing")


def on_line(antenna: int) -> tuple[int, int]:
    """The COM-ADR and ANT_NR of the line's antenna ``antenna``."""
    return 1 + (antenna - 1) // 8, (antenna - 1) % 8 + 1


def uid(antenna: int, n: int) -> str:
    return f"e0040150{antenna:04x}{n:04x}"


#: Two cards a seat, five on the board, a few elsewhere: 43 tags, 27 of them on reader 2, whose
#: inventory therefore comes in three pages (twelve antenna data sets fit a frame).
TABLE = {
    antenna: [uid(antenna, n) for n in range({11: 5, 12: 3, 13: 10, 14: 5}.get(antenna, 2))]
    for antenna in ANTENNAS
}


@pytest.fixture
async def feig(sim_process: Callable[..., SimProcess]) -> Any:
    running: list[tuple[FeigReader, EventLog]] = []

    async def start(
        *args: str,
        setup: tuple[dict[str, Any], ...] = (),
        online: bool = True,
        expect: frozenset[Zone] | None = None,
        **options: Any,
    ) -> tuple[FeigReader, EventLog, SimProcess]:
        sim = sim_process(*LINE, *args, kind="feig")
        for reader_setup in setup:
            await control(sim, setup=reader_setup)
        antennas = []
        for antenna, zone in ANTENNAS.items():
            com_adr, ant_nr = on_line(antenna)
            antennas.append({"reader": com_adr, "antenna": ant_nr, "zone": zone})
        reader = FeigReader.from_options(
            "rfid", {"port": str(sim.link), "antennas": antennas, **FAST, **options}
        )
        reader.expect(expect)
        await reader.start()
        log = EventLog(reader)
        running.append((reader, log))
        if online:
            await log.health("rfid", Health.ONLINE)
        return reader, log, sim

    yield start
    for reader, log in running:
        await reader.stop()
        await log.close()


async def control(sim: SimProcess, **request: Any) -> dict[str, Any]:
    return await asyncio.to_thread(sim.request, **request)


async def test_every_zone_arrives_and_departs_across_0x94_pages(feig: Any) -> None:
    reader, log, sim = await feig(*UNPACED)
    await control(sim, tags={str(a): uids for a, uids in TABLE.items()})
    for antenna, uids in TABLE.items():
        for tag in uids:
            event = await log.arrived(tag)
            assert event.zone == Zone.parse(ANTENNAS[antenna])
    for antenna, zone in ANTENNAS.items():
        assert reader.present(zone) == set(TABLE[antenna])
    assert reader.pages > 0  # 27 tags do not fit one frame: 0x94, then MORE
    status = await control(sim, status=True)
    assert status["pages_sent"] > 0
    second = status["readers"][1]
    assert second["address"] == 2
    assert second["commands"]["b0"] > second["inventories"]  # the MORE requests
    assert status["collisions"] == status["ignored_requests"] == 0  # each reader asked by name

    mark = len(log.events)
    await control(sim, tags={})
    for uids in TABLE.values():
        for tag in uids:
            await log.departed(tag, after=mark)
    assert all(not reader.present(zone) for zone in ANTENNAS.values())
    assert not [e for e in log.events if isinstance(e, DeviceFault)]


async def test_iso14443a_cards_arrive_in_their_nfc_spelling(feig: Any) -> None:
    reader, log, sim = await feig(*UNPACED)
    seven, four = "04262d64c1556c", "04a1b2c3"
    await control(sim, place=[seven], antenna=2)
    await control(sim, place=[four], antenna=12)  # reader 2's antenna 4
    assert (await log.arrived(seven)).zone == Zone.parse("seat:2")
    assert (await log.arrived(four)).zone == Zone.parse("burn")
    assert reader.present("burn") == {four}


async def test_unplug_and_replug_reconnect_and_reconcile(feig: Any) -> None:
    reader, log, sim = await feig(*UNPACED)
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
    assert reader.rf_resets >= 4  # every connection starts with an RF reset of each reader


@pytest.mark.parametrize(
    ("antenna", "code", "named", "modes"),
    [
        (3, "open", "open", None),
        (3, "short", "short", None),
        (12, "power", "power", None),
        (3, "open", "fault", [1, 3, 4]),  # a reader without mode 0x05: mode 0x03 says which
    ],
)
async def test_a_broken_antenna_makes_its_zone_stale_never_a_departure(
    feig: Any, antenna: int, code: str, named: str, modes: list[int] | None
) -> None:
    com_adr, ant_nr = on_line(antenna)
    setup = ({"reader": com_adr, "diagnostics": modes},) if modes else ()
    reader, log, sim = await feig(*UNPACED, setup=setup)
    zone, neighbour = ANTENNAS[antenna], ANTENNAS[antenna + 1]
    a, b = uid(antenna, 1), uid(antenna + 1, 1)
    await control(sim, place=[a], antenna=antenna)
    await control(sim, place=[b], antenna=antenna + 1)
    await log.arrived(a)
    await log.arrived(b)

    mark = len(log.events)
    await control(sim, fault="antenna", antenna=antenna, code=code)
    fault = await log.wait_for(lambda e: isinstance(e, DeviceFault), after=mark)
    assert isinstance(fault, DeviceFault)
    assert (fault.code, fault.fault_id) == ("ANTENNA_FAULT", fault_id(com_adr, ant_nr))
    assert f"COM-ADR {com_adr} antenna {ant_nr} ({zone}): {named}" in fault.detail
    await log.health(f"rfid-{zone.replace(':', '')}", Health.STALE, after=mark)
    await control(sim, remove=[a])  # lifted while nobody can see it
    await until_sweeps(reader, reader.sweeps + 20)
    assert log.departures() == []
    assert reader.present(zone) == {a}
    assert reader.present(neighbour) == {b}  # the other antennas go on

    mark = len(log.events)
    await control(sim, clear="antenna", antenna=antenna)
    cleared = await log.wait_for(lambda e: isinstance(e, DeviceFaultCleared), after=mark)
    assert isinstance(cleared, DeviceFaultCleared)
    await log.health(f"rfid-{zone.replace(':', '')}", Health.ONLINE, after=mark)
    await log.departed(a, after=mark)  # reconciled once the antenna sees again


async def test_link_faults_are_failed_sweeps_and_no_news(feig: Any) -> None:
    # TR-RESPONSE-TIME 0.2 s: the driver waits no longer than that, and 0.1 s, for an answer.
    quick = tuple({"reader": reader, "response_time": 0.2} for reader in (1, 2))
    reader, log, sim = await feig(*UNPACED, setup=quick, stale_after=2, response_timeout=0.1)
    tags = [uid(5, 1), uid(5, 2), uid(9, 1)]
    await control(sim, place=tags[:2], antenna=5)
    await control(sim, place=tags[2:], antenna=9)
    for tag in tags:
        await log.arrived(tag)

    for fault in ({"fault": "crc", "rate": 0.5}, {"fault": "partial", "rate": 0.5}):
        failed = reader.failed_sweeps
        await control(sim, **fault)
        await until_failed(reader, failed + 5)
        await control(sim, clear=fault["fault"])
    await until_sweeps(reader, reader.sweeps + 1)  # a good sweep: the count of failures restarts
    mark = len(log.events)
    await control(sim, fault="stall", seconds=1.5)  # two 0.3 s timeouts of each reader
    await log.health("rfid", Health.STALE, after=mark)
    await log.health("rfid", Health.ONLINE, after=mark)
    assert log.departures() == []
    assert all(reader.present(f"seat:{n}") for n in (5, 9))
    assert reader.link is not None
    assert reader.link.counters.bad_frames > 0
    status = await control(sim, status=True)
    assert status["rushed_requests"] == 0  # the driver kept the 5 ms starting delay throughout


async def test_a_silent_reader_stales_its_own_zones_and_the_other_sweeps_on(feig: Any) -> None:
    reader, log, sim = await feig(*UNPACED, stale_after=2)
    held, fresh = uid(10, 1), uid(2, 1)
    await control(sim, place=[held], antenna=10)  # reader 2's antenna 2
    await log.arrived(held)
    mark = len(log.events)
    await control(sim, fault="rf", problem="hardware", reader=2)
    stale = await log.health("rfid", Health.STALE, after=mark)
    assert "the reader at COM-ADR 2" in stale.detail
    assert "RF_COMMUNICATION_ERROR" in stale.detail
    assert "RF front end: RF hardware error" in stale.detail
    await log.health("rfid-seat10", Health.STALE, after=mark)
    await control(sim, remove=[held])  # lifted while reader 2 cannot see it
    await control(sim, place=[fresh], antenna=2)  # reader 1 still reads
    assert (await log.arrived(fresh, after=mark)).zone == Zone.parse("seat:2")
    assert reader.present("seat:10") == {held}  # no news from a reader that cannot see
    assert log.departures() == []
    mark = len(log.events)
    await control(sim, clear="rf")
    await log.health("rfid", Health.ONLINE, after=mark)
    await log.departed(held, after=mark)  # once it sees again, not before


async def test_crosstalk_never_moves_a_card_and_a_slide_does(feig: Any) -> None:
    reader, log, sim = await feig(*UNPACED, "--crosstalk", "0.5")
    seated = {seat: [uid(seat, 1), uid(seat, 2)] for seat in range(1, 11)}
    await control(sim, tags={str(seat): uids for seat, uids in seated.items()})
    for seat, uids in seated.items():
        for tag in uids:
            assert (await log.arrived(tag)).zone == Zone.parse(f"seat:{seat}")
    await until_sweeps(reader, reader.sweeps + 100)
    assert reader.arbiter.shadowed > 0  # neighbours did assert cards: the arbiter kept them out
    moves = [e for e in log.events if isinstance(e, TagArrived | TagDeparted)]
    assert len(moves) == 20  # the arrivals, nothing else: seats 8 and 9 are on two readers

    mark = len(log.events)
    card = seated[7][0]
    await control(sim, slide=[card], antenna=13, inventories=4)  # across to reader 2
    departed = await log.departed(card, after=mark)
    arrived = await log.arrived(card, after=mark)
    assert (departed.zone, arrived.zone) == (Zone.parse("seat:7"), Zone.parse("muck"))
    assert reader.present("muck") == {card}


async def test_an_rf_warning_is_named_by_the_readers_diagnostic_and_the_sweeps_go_on(
    feig: Any,
) -> None:
    reader, log, sim = await feig(*UNPACED)
    await control(sim, fault="rf", problem="noise")
    tag = uid(7, 1)
    await control(sim, place=[tag], antenna=7)
    assert (await log.arrived(tag)).zone == Zone.parse("seat:7")  # 0x84 still carries data
    assert reader.failed_sweeps == 0
    assert not [e for e in log.events if isinstance(e, DeviceFault)]


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ({"reader": 2, "sw_type": 31}, "is a ID ISC.M02 (SW-TYPE 31), not an approved FEIG"),
        ({"reader": 1, "firmware": "01.03.00"}, "firmware 01.03.00, not an approved revision"),
        ({"reader": 1, "baudrate": 38400}, "CFG1 sets 38400 baud parity even, the table's"),
        ({"reader": 2, "parity": "none"}, "CFG1 sets 115200 baud parity none"),
        ({"reader": 1, "scan_mode": True}, "CFG1 READER-MODE is scan mode, not host mode"),
        ({"reader": 2, "time_slots": 1}, "CFG4 ISO 15693 MODE has 1 time slot"),
        ({"reader": 1, "afi": 7}, "CFG4 ISO 15693 MODE filters on AFI 0x07"),
    ],
)
async def test_a_reader_set_up_otherwise_is_refused_in_one_line(
    feig: Any, setup: dict[str, Any], reason: str
) -> None:
    _reader, log, _sim = await feig(*UNPACED, setup=(setup,), online=False)
    rejected = await log.health("rfid", Health.REJECTED)
    assert f"the reader at COM-ADR {setup['reader']}" in rejected.detail
    assert reason in rejected.detail
    assert "\n" not in rejected.detail
    assert not log.of(TagArrived)


async def test_the_driver_paces_to_feigs_timing_and_reads_every_page(feig: Any) -> None:
    # The line paced as FEIG documents it (163 ms an antenna with one card), the driver told
    # where the hand can change (seats 1 and 9, one on each reader): slow, but exact.
    hint = frozenset({Zone.parse("seat:1"), Zone.parse("seat:9")})
    _reader, log, sim = await feig("--baud", "115200", scan_period_ms=0, expect=hint)
    tags = [uid(1, n) for n in range(3)] + [uid(9, n) for n in range(3)]
    await control(sim, place=tags[:3], antenna=1)
    await control(sim, place=tags[3:], antenna=9)
    for tag in tags:
        await log.first(TagArrived, timeout=30, uid=tag)
    status = await control(sim, status=True)
    assert status["rushed_requests"] == 0
    assert status["data_timeouts"] == 0


async def until_sweeps(reader: FeigReader, count: int) -> None:
    await until(lambda: reader.sweeps >= count, 20, f"{count} sweeps")


async def until_failed(reader: FeigReader, count: int) -> None:
    await until(lambda: reader.failed_sweeps >= count, 20, f"{count} failed sweeps")


async def test_the_zones_the_hand_can_change_are_read_every_sweep_the_others_in_turn(
    feig: Any,
) -> None:
    reader, log, sim = await feig(*UNPACED, full_sweep_ms=0)  # a quick line follows it too
    reader.expect(frozenset({Zone.parse("seat:1"), Zone.parse("muck")}))
    # Seat 1 is reader 1's antenna 1, the muck reader 2's antenna 5: both every sweep, and one
    # of the twelve others in turn.
    plans = [reader.plan() for _ in range(12)]
    assert all(1 in plan[1] and 5 in plan[2] for plan in plans)
    assert all(len(plan[1]) + len(plan[2]) == 3 for plan in plans)
    others = {(a, n) for plan in plans for a in (1, 2) for n in plan[a]} - {(1, 1), (2, 5)}
    assert len(others) == 12  # twelve sweeps: every other antenna once
    # A card where the hand expects none is still seen (when its antenna's turn comes), then
    # read every sweep until it has arrived.
    card = uid(12, 1)
    await control(sim, place=[card], antenna=12)
    assert (await log.arrived(card)).zone == Zone.parse("burn")
    reader.expect(None)
    assert reader.plan() == {1: list(range(1, 9)), 2: list(range(1, 7))}


async def test_a_line_quick_enough_reads_every_antenna_whatever_the_hint(feig: Any) -> None:
    reader, _log, _sim = await feig(*UNPACED)  # no RF time: every antenna in a few ms
    reader.expect(frozenset({Zone.parse("seat:1")}))
    await until_sweeps(reader, reader.sweeps + 5)
    assert reader.antenna_seconds is not None
    assert reader.antenna_seconds * 14 < 0.1
    assert reader.plan() == {1: list(range(1, 9)), 2: list(range(1, 7))}


async def test_a_reader_at_another_baud_rate_is_found_and_named_by_it(feig: Any) -> None:
    # With --strict-baud a reader answers only at its own rate, as on a real line ([0x52], ID
    # ISC.M02 manual p. 45): the driver looks for it at FEIG's other rates and says where it is.
    _reader, log, _sim = await feig(
        *UNPACED, "--strict-baud", setup=({"reader": 2, "baudrate": 38400},), online=False
    )
    rejected = await log.health("rfid", Health.REJECTED)
    assert rejected.detail == (
        "the reader at COM-ADR 2 does not answer at 115200 baud but at 38400 (its CFG1 BAUD): "
        "set baudrate = 38400, or the reader to 115200 baud"
    )


async def test_a_reader_at_no_baud_rate_is_said_to_be_missing(feig: Any) -> None:
    _reader, log, _sim = await feig(
        *UNPACED, "--strict-baud", setup=({"reader": 2, "address": 7},), online=False
    )
    down = await log.first(DeviceHealthChanged, timeout=30, health=Health.RECONNECTING)
    assert "the reader at COM-ADR 2 answers at none of FEIG's baud rates" in down.detail


async def test_a_table_mapping_more_antennas_than_the_model_has_is_refused(
    feig: Any, tmp_path: Path
) -> None:
    shipped = (config_dir() / "approved-devices.toml").read_text(encoding="utf-8")
    narrow = tmp_path / "approved-devices.toml"
    narrow.write_text(shipped.replace("antennas = 8 ", "antennas = 4 "), encoding="utf-8")
    _reader, log, _sim = await feig(*UNPACED, approved_devices=str(narrow), online=False)
    rejected = await log.health("rfid", Health.REJECTED)
    assert rejected.detail == (
        "the reader at COM-ADR 1 is a ID ISC.M02.M8 with 4 antenna outputs: the table maps its "
        "antenna 5, 6, 7, 8"
    )
