"""The TSP/1 reader message set: golden vectors, round trips of every message, garbage."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.table.inputs import Zone
from drivers.rfid.tsp_reader.codes import (
    AirInterface,
    Capability,
    ReaderState,
    Report,
    ScanMode,
    StatusFlag,
    ZoneCode,
    zone_code,
    zone_of,
)
from drivers.rfid.tsp_reader.events import (
    EVENTS,
    AntennaFault,
    InventorySnapshot,
    SnapshotEntry,
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
from drivers.tsp.common import FaultCleared, FaultRaised, Result
from drivers.tsp.events import UnknownEvent
from drivers.tsp.frame import Flags, Frame, parse_frame
from drivers.tsp.payload import PayloadError

SPEC = Path(__file__).resolve().parents[2] / "docs" / "protocols" / "tsp1.md"
UID = bytes.fromhex("e004010012345678")


def _vector(name_start: str) -> Frame:
    for block in re.findall(r"```tsp1-vectors\n(.*?)```", SPEC.read_text(), re.DOTALL):
        for entry in block.strip().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in entry.strip().splitlines())
            if fields["name"].startswith(name_start):
                frame = parse_frame(bytes.fromhex(fields["frame"]))
                assert isinstance(frame, Frame)
                return frame
    raise AssertionError(f"no vector {name_start!r} in {SPEC}")


def test_golden_vectors_decode_to_their_messages() -> None:
    arrived = _vector("TAG_ARRIVED")
    assert (arrived.flags, arrived.seq) == (Flags.EVT, 9)
    assert EVENTS.decode(arrived.type, arrived.payload) == TagArrivedEvent(
        3, ZoneCode.SEAT_HOLE, 3, UID, -41, 123456, 2, 880
    )
    departed = _vector("TAG_DEPARTED")
    assert EVENTS.decode(departed.type, departed.payload) == TagDepartedEvent(
        3, 1, 3, UID, 124000, 890
    )
    snapshot = _vector("INVENTORY_SNAPSHOT")
    assert EVENTS.decode(snapshot.type, snapshot.payload) == InventorySnapshot(
        900, 125000, (SnapshotEntry(3, 0, (UID,)), SnapshotEntry(10, 0), SnapshotEntry(4, 1))
    )
    fault = _vector("ANTENNA_FAULT, EVT seq 12")
    assert EVENTS.decode(fault.type, fault.payload) == AntennaFault(4, 1, 1000)
    repaired = _vector("ANTENNA_FAULT, EVT seq 13")
    assert EVENTS.decode(repaired.type, repaired.payload) == AntennaFault(4, 0, 0)
    overflow = _vector("ZONE_OVERFLOW")
    assert EVENTS.decode(overflow.type, overflow.payload) == ZoneOverflow(3, 3)
    mapping = _vector("SET_ANTENNA_MAP")
    assert SetAntennaMap.decode(mapping.payload) == SetAntennaMap(
        (AntennaAssignment(0, 1, 1, 10), AntennaAssignment(10, 2, 0, 20))
    )
    scan = _vector("SET_SCAN")
    assert SetScan.decode(scan.payload) == SetScan(
        ScanMode.CONTINUOUS, 50, 2, 3, Report.EDGES | Report.SNAPSHOTS, 1000
    )
    ping = _vector("PING response (reader)")
    status = ReaderStatus.decode(ping.payload)
    scanning, no_flags = ReaderState.SCANNING, StatusFlag(0)
    assert status == ReaderStatus(scanning, no_flags, 24, 0xFFFFFFEF, 0x5EED1234, 3_600_000)
    assert not status.antenna_works(4)
    assert status.antenna_works(3)


uids = st.binary(min_size=1, max_size=10)
u8 = st.integers(0, 255)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
text = st.text(max_size=20).filter(lambda t: len(t.encode()) <= 255)

MESSAGES: list[tuple[str, st.SearchStrategy[Any]]] = [
    (
        "identity",
        st.builds(
            ReaderIdentity,
            u8,
            u8,
            text,
            text,
            text,
            text,
            text,
            st.binary(min_size=32, max_size=32),
            u32,
            st.builds(Capability, st.integers(0, 63)),
            st.builds(AirInterface, st.integers(0, 15)),
            u8,
        ),
    ),
    (
        "status",
        st.builds(
            ReaderStatus,
            st.sampled_from(ReaderState),
            st.builds(StatusFlag, st.integers(0, 15)),
            u16,
            u32,
            u32,
            u32,
        ),
    ),
    ("result", st.builds(Result, u8)),
    ("memory", st.builds(TagMemory, st.binary(max_size=255))),
    (
        "map",
        st.builds(
            SetAntennaMap,
            st.lists(st.builds(AntennaAssignment, u8, u8, u8, u8, st.booleans()), max_size=32).map(
                tuple
            ),
        ),
    ),
    (
        "scan",
        st.builds(
            SetScan,
            st.sampled_from(ScanMode),
            u16,
            u8,
            u8,
            st.builds(Report, st.integers(0, 3)),
            u16,
        ),
    ),
    ("read", st.builds(ReadTagMemory, u8, uids, u8, u8)),
    ("arrived", st.builds(TagArrivedEvent, u8, u8, u8, uids, st.integers(-128, 127), u32, u8, u16)),
    ("departed", st.builds(TagDepartedEvent, u8, u8, u8, uids, u32, u16)),
    (
        "snapshot",
        st.builds(
            InventorySnapshot,
            u16,
            u32,
            st.lists(
                st.builds(SnapshotEntry, u8, u8, st.lists(uids, max_size=6).map(tuple)),
                max_size=12,
            ).map(tuple),
        ),
    ),
    ("fault", st.builds(AntennaFault, u8, u8, u16)),
    ("overflow", st.builds(ZoneOverflow, u8, u8)),
    ("raised", st.builds(FaultRaised, u16, u16, u8, u8, u8, text)),
    ("cleared", st.builds(FaultCleared, u16, u16, u8)),
]


@pytest.mark.parametrize(("name", "strategy"), MESSAGES, ids=[m[0] for m in MESSAGES])
@given(data=st.data())
def test_every_message_round_trips(name: str, strategy: st.SearchStrategy[Any], data: Any) -> None:
    message = data.draw(strategy)
    decode: Callable[[bytes], Any] = type(message).decode
    payload = message.encode()
    assert decode(payload) == message
    # Receivers ignore what later protocol versions append.
    assert decode(payload + b"\x00\xff") == message
    # A payload cut short is a PayloadError, never anything else.
    if payload:
        with pytest.raises(PayloadError):
            decode(payload[: data.draw(st.integers(0, len(payload) - 1))])


@given(st.sampled_from(sorted(EVENTS.classes)), st.binary(max_size=64))
def test_garbage_event_payloads_raise_only_payload_errors(msg_type: int, payload: bytes) -> None:
    try:
        event = EVENTS.decode(msg_type, payload)
    except PayloadError:
        return
    assert type(event) is EVENTS.classes[msg_type]


def test_unknown_event_types_are_kept_not_fatal() -> None:
    assert EVENTS.decode(0x6F, b"\x01\x02") == UnknownEvent(0x6F, b"\x01\x02")


ZONES = ["seat:1", "seat:10", "board", "burn", "muck", "enroll", "shuffler_in"]


@pytest.mark.parametrize("text", ZONES)
def test_zones_round_trip_through_their_wire_codes(text: str) -> None:
    zone = Zone.parse(text)
    assert zone_of(*zone_code(zone)) == zone


def test_wire_zones_the_core_has_no_name_for() -> None:
    assert zone_of(ZoneCode.OTHER, 0) is None
    assert zone_of(ZoneCode.SEAT_HOLE, 11) is None
    assert zone_of(99, 0) is None
