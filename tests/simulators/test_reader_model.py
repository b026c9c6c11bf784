"""The simulated TSP/1 reader as a pure model: sweeps, debounce, faults, snapshots, requests."""

from __future__ import annotations

import random

import pytest

from drivers.rfid.tsp_reader.codes import (
    AntennaCode,
    MsgType,
    ReaderState,
    Report,
    ScanMode,
    StatusFlag,
    ZoneCode,
)
from drivers.rfid.tsp_reader.events import (
    EVENTS,
    AntennaFault,
    InventorySnapshot,
    TagArrivedEvent,
    TagDepartedEvent,
    ZoneOverflow,
)
from drivers.rfid.tsp_reader.messages import (
    AntennaAssignment,
    ReaderIdentity,
    ReaderStatus,
    ReadTagMemory,
    SetAntennaMap,
    SetScan,
    TagMemory,
)
from drivers.tsp.common import ErrorCode, ErrorResponse
from drivers.tsp.frame import MAX_PAYLOAD
from simulators.rfid.model import ReaderConfig, ReaderModel
from simulators.rfid.requests import tag_memory

A, B, C = (bytes.fromhex(f"04a1b2c3d4e5{n:02x}") for n in range(3))
PERIOD = 0.01
SEAT_AND_BOARD = SetAntennaMap(
    (AntennaAssignment(0, ZoneCode.SEAT_HOLE, 1, 10), AntennaAssignment(1, ZoneCode.BOARD, 0, 10))
)


def configured(
    arrive_n: int = 2, depart_n: int = 3, snapshot_ms: int = 0, max_queue: int = 64
) -> ReaderModel:
    model = ReaderModel(ReaderConfig(max_queue=max_queue), random.Random(5), 0.0)
    answer = model.handle(MsgType.SET_ANTENNA_MAP, SEAT_AND_BOARD.encode(), 0.0)
    assert answer == (MsgType.SET_ANTENNA_MAP, b"\x00")
    report = Report.EDGES | (Report.SNAPSHOTS if snapshot_ms else Report.NONE)
    scan = SetScan(ScanMode.CONTINUOUS, int(PERIOD * 1000), arrive_n, depart_n, report, snapshot_ms)
    assert model.handle(MsgType.SET_SCAN, scan.encode(), 0.0)[1] == b"\x00"
    return model


def sweeps(model: ReaderModel, count: int) -> list[object]:
    """Run ``count`` sweeps; the decoded events they raised."""
    assert model.next_sweep is not None
    for _ in range(count):
        model.tick(model.next_sweep)
    return [EVENTS.decode(t, p) for t, p in model.take_events()]


def test_a_new_reader_is_unconfigured_and_sweeps_nothing() -> None:
    model = ReaderModel(ReaderConfig(), random.Random(1), 0.0)
    model.place(0, [A])
    assert model.next_deadline() is None
    status = ReaderStatus.decode(model.handle(MsgType.GET_STATUS, b"", 1.0)[1])
    assert status.state is ReaderState.UNCONFIGURED
    assert status.flags & StatusFlag.CONFIG_PENDING
    identity = ReaderIdentity.decode(model.handle(MsgType.IDENTIFY, b"", 1.0)[1])
    assert (identity.n_antennas, identity.boot_id) == (16, model.boot_id)


def test_a_tag_arrives_after_arrive_n_sweeps_and_departs_after_depart_n() -> None:
    model = configured(arrive_n=2, depart_n=3)
    model.place(0, [A])
    assert sweeps(model, 1) == []
    [arrived] = sweeps(model, 1)
    assert isinstance(arrived, TagArrivedEvent)
    assert (arrived.antenna, arrived.zone_kind, arrived.zone_index, arrived.uid) == (0, 1, 1, A)
    assert arrived.reads == 2
    model.remove([A])
    assert sweeps(model, 2) == []
    [departed] = sweeps(model, 1)
    assert isinstance(departed, TagDepartedEvent)
    assert departed.uid == A


def test_flapping_reads_are_absorbed_by_the_debounce() -> None:
    model = configured(arrive_n=1, depart_n=12)
    model.place(0, [A, B])
    model.antennas[0].flap_rate = 0.3
    events = sweeps(model, 400)
    assert [type(e) for e in events] == [TagArrivedEvent, TagArrivedEvent]
    assert model.antennas[0].missed_reads > 100  # the reads really flapped


def test_with_a_short_debounce_flapping_makes_cards_leave() -> None:
    model = configured(arrive_n=1, depart_n=1)
    model.place(0, [A, B])
    model.antennas[0].flap_rate = 0.3
    assert any(isinstance(e, TagDepartedEvent) for e in sweeps(model, 50))


def test_stacked_cards_lose_some_but_never_all_reads() -> None:
    model = configured()
    antenna = model.antennas[0]
    model.place(0, [A, B, C])
    antenna.stacked_miss_rate = 1.0
    rng = random.Random(3)
    reads = [antenna.read(rng) for _ in range(50)]
    assert all(0 < len(read) < 3 for read in reads)


def test_three_tags_on_a_seat_overflow_until_one_is_lifted() -> None:
    model = configured(arrive_n=1, depart_n=1)
    model.place(0, [A, B])
    assert not [e for e in sweeps(model, 1) if isinstance(e, ZoneOverflow)]
    model.place(0, [C])
    assert [e for e in sweeps(model, 1) if isinstance(e, ZoneOverflow)] == [ZoneOverflow(0, 3)]
    assert not [e for e in sweeps(model, 3) if isinstance(e, ZoneOverflow)]  # reported once
    model.remove([C])
    assert [e for e in sweeps(model, 1) if isinstance(e, ZoneOverflow)] == [ZoneOverflow(0, 2)]
    # The board holds five: three are no overflow there.
    model.place(1, [C, bytes.fromhex("04000000000001"), bytes.fromhex("04000000000002")])
    assert not [e for e in sweeps(model, 2) if isinstance(e, ZoneOverflow)]


def test_a_broken_antenna_reports_once_reads_nothing_and_loses_nothing() -> None:
    model = configured(arrive_n=1, depart_n=2, snapshot_ms=10)
    model.place(0, [A, B])
    sweeps(model, 2)
    model.break_antenna(0, AntennaCode.OPEN, 1000, model.next_sweep or 0)
    model.break_antenna(0, AntennaCode.OPEN, 1000, model.next_sweep or 0)
    model.remove([A])
    events = sweeps(model, 5)
    assert [e for e in events if not isinstance(e, InventorySnapshot)] == [AntennaFault(0, 1, 1000)]
    snapshot = next(e for e in reversed(events) if isinstance(e, InventorySnapshot))
    seat = next(entry for entry in snapshot.entries if entry.antenna == 0)
    assert (seat.status, set(seat.uids)) == (AntennaCode.OPEN, {A, B})  # no departure invented
    assert model.repair_antenna(0)
    events = sweeps(model, 1)
    assert AntennaFault(0, AntennaCode.OK, 0) in events
    snapshot = next(e for e in events if isinstance(e, InventorySnapshot))
    assert next(e for e in snapshot.entries if e.antenna == 0).status == AntennaCode.SETTLING
    events = sweeps(model, 2)
    assert TagDepartedEvent(0, 1, 1, A, events[0].t_last_ms, events[0].sweep) in events  # type: ignore[attr-defined]
    snapshot = [e for e in events if isinstance(e, InventorySnapshot)][-1]
    assert next(e for e in snapshot.entries if e.antenna == 0).status == AntennaCode.OK


def test_a_full_queue_drops_edges_and_forces_a_snapshot() -> None:
    model = configured(arrive_n=1, max_queue=2, snapshot_ms=60_000)
    model.queued_events = lambda: 2
    model.place(0, [A])
    events = sweeps(model, 1)
    assert [type(e) for e in events] == [InventorySnapshot]
    assert model.events.dropped == 1
    status = ReaderStatus.decode(model.handle(MsgType.PING, b"", 1.0)[1])
    assert not status.flags & StatusFlag.EVENTS_DROPPED  # the snapshot went out: all caught up


def test_a_view_too_big_for_one_frame_goes_out_in_several_snapshots() -> None:
    model = ReaderModel(ReaderConfig(n_antennas=32), random.Random(1), 0.0)
    mapping = tuple(AntennaAssignment(n, ZoneCode.MUCK, 0, 5) for n in range(32))
    model.handle(MsgType.SET_ANTENNA_MAP, SetAntennaMap(mapping).encode(), 0.0)
    for antenna in range(32):
        model.place(antenna, [bytes([0xE0, antenna, n, 0, 0, 0, 0, 1]) for n in range(6)])
    model.handle(MsgType.SET_SCAN, SetScan(0, 10, 1, 1, Report.SNAPSHOTS, 10).encode(), 0.0)
    snapshots = [e for e in sweeps(model, 1) if isinstance(e, InventorySnapshot)]
    assert len(snapshots) > 1
    assert all(len(s.encode()) <= MAX_PAYLOAD for s in snapshots)
    assert len({s.sweep for s in snapshots}) == 1
    listed = {entry.antenna: len(entry.uids) for s in snapshots for entry in s.entries}
    assert listed == dict.fromkeys(range(32), 6)


def test_mapping_an_antenna_as_it_is_keeps_its_tags() -> None:
    model = configured(arrive_n=1)
    model.place(0, [A])
    sweeps(model, 1)
    model.handle(MsgType.SET_ANTENNA_MAP, SEAT_AND_BOARD.encode(), 1.0)
    assert model.antennas[0].asserted() == [A]
    moved = SetAntennaMap((AntennaAssignment(0, ZoneCode.SEAT_HOLE, 2, 10),))
    model.handle(MsgType.SET_ANTENNA_MAP, moved.encode(), 1.0)
    assert model.antennas[0].asserted() == []
    assert not model.antennas[1].enabled


def test_a_reboot_forgets_the_map_but_not_the_tags() -> None:
    model = configured(arrive_n=1)
    model.place(0, [A])
    sweeps(model, 1)
    boot = model.boot_id
    model.boot(5.0)
    assert model.boot_id != boot
    assert model.antennas[0].tags == [A]
    assert not model.antennas[0].enabled
    assert model.next_deadline() is None


ANTENNA_16 = AntennaAssignment(16, 1, 1, 10)
KIND_9 = AntennaAssignment(0, 9, 0, 10)


@pytest.mark.parametrize(
    ("msg_type", "payload", "code"),
    [
        (MsgType.SET_ANTENNA_MAP, SetAntennaMap((ANTENNA_16,)).encode(), ErrorCode.BAD_ARG),
        (MsgType.SET_ANTENNA_MAP, SetAntennaMap((KIND_9,)).encode(), ErrorCode.BAD_ARG),
        (MsgType.SET_ANTENNA_MAP, b"\x02\x00\x01", ErrorCode.BAD_LENGTH),
        (MsgType.SET_SCAN, SetScan(0, 0, 1, 1, Report.EDGES, 0).encode(), ErrorCode.BAD_ARG),
        (MsgType.SET_SCAN, SetScan(7, 10, 1, 1, Report.EDGES, 0).encode(), ErrorCode.NOT_SUPPORTED),
        (MsgType.READ_TAG_MEMORY, ReadTagMemory(0, C, 0, 1).encode(), ErrorCode.BAD_ARG),
        (0x55, b"", ErrorCode.NOT_SUPPORTED),
    ],
)
def test_bad_requests_are_refused_with_the_right_error(
    msg_type: int, payload: bytes, code: ErrorCode
) -> None:
    model = configured()
    answer_type, answer = model.handle(msg_type, payload, 1.0)
    assert answer_type == MsgType.ERROR
    assert ErrorResponse.decode(answer).code == code


def test_tag_memory_and_scan_now() -> None:
    model = configured(arrive_n=1)
    model.place(0, [A])
    sweeps(model, 1)
    memory = model.handle(MsgType.READ_TAG_MEMORY, ReadTagMemory(0, A, 2, 3).encode(), 1.0)[1]
    assert TagMemory.decode(memory).data == tag_memory(A)[8:20]
    snapshot = InventorySnapshot.decode(model.handle(MsgType.SCAN_NOW, b"", 1.0)[1])
    assert [(e.antenna, e.uids) for e in snapshot.entries] == [(0, (A,)), (1, ())]


def test_a_broken_antenna_is_reported_again_when_mapped_after_a_reboot() -> None:
    model = configured()
    model.break_antenna(0, AntennaCode.SHORT, 7, 0.5)
    assert [EVENTS.decode(t, p) for t, p in model.take_events()] == [AntennaFault(0, 2, 7)]
    model.boot(1.0)
    model.handle(MsgType.SET_ANTENNA_MAP, SEAT_AND_BOARD.encode(), 1.0)
    assert [EVENTS.decode(t, p) for t, p in model.take_events()] == [AntennaFault(0, 2, 7)]
    model.handle(MsgType.SET_ANTENNA_MAP, SEAT_AND_BOARD.encode(), 1.1)  # the same map again
    assert model.take_events() == []
