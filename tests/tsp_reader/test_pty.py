"""The tsp-reader driver against the simulated reader on a real pty."""

from __future__ import annotations

import pytest

from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceRebooted,
    Health,
    TagArrived,
    TagDeparted,
)
from drivers.errors import DeviceNotReadyError
from tests.tsp_reader.conftest import UIDS, RigFactory
from tests.waiting import until

A, B, C, D = UIDS[:4]


async def test_tags_arrive_and_depart_in_their_zones(pty_rig: RigFactory) -> None:
    rig = await pty_rig()
    # the first time it is online (on a busy machine a first attempt may go unanswered first)
    online = next(e for e in rig.log.of(DeviceHealthChanged) if e.health is Health.ONLINE)
    assert (online.device, online.health, online.kind) == ("rfid", Health.ONLINE, "reader")
    assert online.approved is None  # a reader is not subject to approval
    assert online.detail.endswith("firmware 1.0.0, 3 antennas"), online.detail
    rig.sim(place=[A, B], antenna=0)
    rig.sim(place=[C], antenna=2)
    await rig.log.first(TagArrived, uid=A)
    await rig.log.first(TagArrived, uid=B)
    await rig.log.first(TagArrived, uid=C)
    assert rig.reader.present("seat:1") == {A, B}
    assert rig.reader.present("board") == {C}
    rig.sim(remove=[A])
    departed = await rig.log.first(TagDeparted, uid=A)
    assert (departed.device, str(departed.zone)) == ("rfid", "seat:1")
    expected = [("arrived", "seat:1", A), ("arrived", "seat:1", B), ("arrived", "board", C)]
    expected.append(("departed", "seat:1", A))
    assert sorted(rig.log.tags()) == sorted(expected)
    assert rig.reader.identity is not None
    assert rig.reader.identity.n_antennas == 16


async def test_a_lost_edge_is_repaired_by_the_next_snapshot(pty_rig: RigFactory) -> None:
    rig = await pty_rig(snapshot_ms=100)
    rig.sim(fault="lose_edges", rate=1.0)
    rig.sim(place=[A], antenna=1)
    arrived = await rig.log.first(TagArrived, uid=A)
    assert str(arrived.zone) == "seat:2"
    assert rig.status()["edges"]["lost"] == 1  # the edge event itself never went out
    assert rig.reader.view.repaired_arrivals == 1
    rig.sim(remove=[A])
    await rig.log.first(TagDeparted, uid=A)
    assert rig.reader.view.repaired_departures == 1
    assert rig.log.tags() == [("arrived", "seat:2", A), ("departed", "seat:2", A)]


async def test_a_garbled_edge_is_dropped_and_repaired(pty_rig: RigFactory) -> None:
    # The frame's CRC is good but its payload is cut short: the driver cannot decode it.
    rig = await pty_rig(snapshot_ms=100)
    rig.sim(fault="garble_edges", rate=1.0)
    rig.sim(place=[B], antenna=0)
    await rig.log.first(TagArrived, uid=B)
    assert rig.reader.bad_events >= 1
    assert rig.status()["edges"]["garbled"] >= 1
    assert rig.reader.view.repaired_arrivals == 1


async def test_corrupted_frames_are_retransmitted_nothing_lost_or_doubled(
    pty_rig: RigFactory,
) -> None:
    rig = await pty_rig(snapshot_ms=0, seed=4)
    rig.sim(fault="crc", rate=0.1)
    for uid in UIDS[:8]:
        rig.sim(place=[uid], antenna=2)
    for uid in UIDS[:8]:
        await rig.log.first(TagArrived, uid=uid)
    rig.sim(tags={})
    for uid in UIDS[:8]:
        await rig.log.first(TagDeparted, uid=uid)
    tags = rig.log.tags()
    assert sorted(tags) == sorted(
        [("arrived", "board", u) for u in UIDS[:8]] + [("departed", "board", u) for u in UIDS[:8]]
    )
    status = rig.status()
    assert status["corrupted"]["in"] + status["corrupted"]["out"] > 0
    assert rig.reader.stats.crc_errors + status["link"]["crc_errors"] > 0
    assert rig.reader.view.repaired_arrivals == rig.reader.view.repaired_departures == 0


async def test_flapping_reads_make_no_card_leave(pty_rig: RigFactory) -> None:
    rig = await pty_rig(depart_n=10, seed=3)
    rig.sim(place=[A, B], antenna=0)
    await rig.log.first(TagArrived, uid=B)
    rig.sim(fault="flap", rate=0.3, antenna=0)
    await rig.sweeps(200)
    antenna = rig.status()["antennas"]["0"]
    assert antenna["missed_reads"] > 60  # the reads really flapped
    assert rig.log.of(TagDeparted) == []
    assert rig.reader.present("seat:1") == {A, B}


async def test_with_a_one_sweep_debounce_flapping_does_make_cards_leave(
    pty_rig: RigFactory,
) -> None:
    # The control experiment: the test above would see departures without the debounce.
    rig = await pty_rig(arrive_n=1, depart_n=1, snapshot_ms=0, seed=3)
    rig.sim(place=[A, B], antenna=0)
    rig.sim(fault="flap", rate=0.3, antenna=0)
    await rig.log.first(TagDeparted)


async def test_an_antenna_fault_makes_its_zone_stale_without_departures(
    pty_rig: RigFactory,
) -> None:
    rig = await pty_rig(snapshot_ms=50)
    rig.sim(place=[A, B], antenna=0)
    rig.sim(place=[C], antenna=1)
    await rig.log.first(TagArrived, uid=C)
    await rig.log.first(TagArrived, uid=B)
    rig.sim(fault="antenna", antenna=0, code="open", value=900)
    fault = await rig.log.first(DeviceFault, code="ANTENNA_FAULT")
    assert fault.fault_id == 0
    assert "antenna 0 (seat:1): OPEN" in fault.detail
    stale = await rig.log.health("rfid-seat1", Health.STALE)
    assert stale.kind == "reader"
    # Cards lifted from the dead antenna: nothing can be known, nothing departs.
    rig.sim(remove=[A])
    rig.sim(remove=[C])  # ...while the working antenna next to it still reports
    await rig.log.first(TagDeparted, uid=C)
    await rig.sweeps(30)  # several snapshots later
    assert [t for t in rig.log.tags() if t[1] == "seat:1" and t[0] == "departed"] == []
    assert rig.reader.present("seat:1") == {A, B}
    assert rig.reader.health()["rfid-seat1"] is Health.STALE
    assert rig.reader.health()["rfid"] is Health.ONLINE
    # Repaired: the zone is fresh again, and the card lifted meanwhile departs now.
    mark = len(rig.log.events)
    rig.sim(clear="antenna", antenna=0)
    await rig.log.first(DeviceFaultCleared, code="ANTENNA_FAULT", after=mark)
    await rig.log.health("rfid-seat1", Health.ONLINE, after=mark)
    await rig.log.first(TagDeparted, uid=A, after=mark)
    assert rig.reader.present("seat:1") == {B}


async def test_three_cards_on_a_seat_are_a_zone_overflow(pty_rig: RigFactory) -> None:
    rig = await pty_rig()
    rig.sim(place=[A, B, C], antenna=1)
    overflow = await rig.log.first(DeviceFault, code="ZONE_OVERFLOW")
    assert (overflow.fault_id, overflow.severity) == (1, "warn")
    assert "zone seat:2: 3 tags (it holds 2)" in overflow.detail
    rig.sim(remove=[C])
    await rig.log.first(DeviceFaultCleared, code="ZONE_OVERFLOW")
    assert rig.log.faults() == [("raised", "ZONE_OVERFLOW", 1), ("cleared", "ZONE_OVERFLOW", 1)]


async def test_unplug_and_replug_repair_what_happened_meanwhile(pty_rig: RigFactory) -> None:
    rig = await pty_rig(snapshot_ms=0)
    rig.sim(place=[A, B], antenna=0)
    await rig.log.first(TagArrived, uid=B)
    mark = len(rig.log.events)
    rig.sim(fault="unplug")
    await rig.log.health("rfid", Health.RECONNECTING, after=mark)
    with pytest.raises(DeviceNotReadyError):
        await rig.reader.scan_now()
    rig.sim(remove=[A])
    rig.sim(place=[C], antenna=2)
    await rig.sweeps(10)  # the reader saw it all while the cable was out
    rig.sim(fault="replug")
    await rig.log.health("rfid", Health.ONLINE, after=mark)
    await rig.log.first(TagDeparted, uid=A, after=mark)
    await rig.log.first(TagArrived, uid=C, after=mark)
    assert rig.log.tags(after=mark) in (
        [("departed", "seat:1", A), ("arrived", "board", C)],
        [("arrived", "board", C), ("departed", "seat:1", A)],
    )
    assert rig.log.of(DeviceRebooted) == []  # same boot: the cable, not the power


async def test_power_loss_reboots_and_the_first_snapshot_reconciles(pty_rig: RigFactory) -> None:
    rig = await pty_rig(snapshot_ms=100)
    rig.sim(place=[A, B], antenna=0)
    await rig.log.first(TagArrived, uid=B)
    boot = rig.reader.boot_id
    mark = len(rig.log.events)
    rig.sim(remove=[B])
    reply = rig.sim(fault="power_loss")  # before the reader could see B go
    rebooted = await rig.log.first(DeviceRebooted, after=mark)
    assert rebooted.boot_id == reply["boot_id"] != boot
    await rig.log.health("rfid", Health.ONLINE, after=mark)
    await rig.log.first(TagDeparted, uid=B, after=mark)
    await rig.sweeps(20)
    # A stayed: no departure, and no second arrival when the rebooted reader saw it again.
    assert rig.log.tags(after=mark) == [("departed", "seat:1", B)]
    assert rig.reader.present("seat:1") == {A}
    assert rig.status()["power_cycles"] == 1


async def test_a_silent_reader_is_stale_and_its_silence_is_no_departure(
    pty_rig: RigFactory,
) -> None:
    rig = await pty_rig()
    rig.sim(place=[A], antenna=2)
    await rig.log.first(TagArrived, uid=A)
    mark = len(rig.log.events)
    rig.sim(fault="stall", seconds=1.0)
    rig.sim(remove=[A])
    await rig.log.health("rfid", Health.STALE, after=mark)
    assert rig.log.of(TagDeparted) == []
    assert rig.reader.present("board") == {A}
    # Back: the reader sweeps again and reports the card gone, as a real departure.
    await rig.log.health("rfid", Health.ONLINE, after=mark)
    await rig.log.first(TagDeparted, uid=A, after=mark)


async def test_scan_now_and_tag_memory_on_request(pty_rig: RigFactory) -> None:
    rig = await pty_rig()
    rig.sim(place=[D], antenna=1)
    await rig.log.first(TagArrived, uid=D)
    zones = await rig.reader.scan_now()
    assert {str(z): set(u) for z, u in zones.items()} == {
        "seat:1": set(),
        "seat:2": {D},
        "board": set(),
    }
    data = await rig.reader.read_tag_memory("seat:2", D, 0, 2)
    assert len(data) == 8
    status = await rig.reader.get_status()
    assert status.antenna_works(0)
    await until(lambda: rig.reader.last_status is not None)  # the heartbeat keeps it fresh
