"""The golden vectors of docs/protocols/tsp1.md, checked against the codec and message set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from drivers.shuffler.codes import DeviceState, StatusFlag
from drivers.shuffler.commitment import deck_commitment
from drivers.shuffler.events import GroupDispensedEvent
from drivers.shuffler.messages import DispenseGroup, Status
from drivers.tsp.cobs import cobs_encode
from drivers.tsp.common import ErrorCode, ErrorResponse, FaultRaised
from drivers.tsp.deframer import Deframer
from drivers.tsp.frame import Flags, Frame, parse_frame

SPEC = Path(__file__).resolve().parents[2] / "docs" / "protocols" / "tsp1.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", SPEC.read_text(encoding="utf-8"), re.DOTALL)


def _vectors() -> list[tuple[str, bytes, bytes]]:
    vectors = []
    for block in _blocks("tsp1-vectors"):
        for entry in block.strip().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in entry.strip().splitlines())
            vectors.append(
                (fields["name"], bytes.fromhex(fields["frame"]), bytes.fromhex(fields["wire"]))
            )
    return vectors


VECTORS = _vectors()


def test_the_spec_has_the_vectors() -> None:
    assert len(VECTORS) >= 10


@pytest.mark.parametrize(("name", "raw", "wire"), VECTORS, ids=[v[0] for v in VECTORS])
def test_golden_vector(name: str, raw: bytes, wire: bytes) -> None:
    frame = parse_frame(raw)
    assert isinstance(frame, Frame), frame
    assert frame.encode() == raw
    assert cobs_encode(raw) + b"\x00" == wire
    assert frame.to_wire() == wire
    assert Deframer().feed(wire) == [frame]


def _frame(name_start: str) -> Frame:
    raw = next(raw for name, raw, _ in VECTORS if name.startswith(name_start))
    frame = parse_frame(raw)
    assert isinstance(frame, Frame)
    return frame


def test_group_dispensed_vectors_decode() -> None:
    live = _frame("GROUP_DISPENSED, EVT seq 34, LIVE")
    assert (live.flags, live.seq) == (Flags.EVT, 34)
    assert GroupDispensedEvent.decode(live.payload) == GroupDispensedEvent(
        1042, 3, 1, 4, bytes([51, 24]), 44
    )
    withheld = _frame("GROUP_DISPENSED, EVT seq 34, WITHHOLD")
    assert GroupDispensedEvent.decode(withheld.payload).cards == b"\xfd\xfd"


def test_fault_raised_vector_decodes() -> None:
    frame = _frame("FAULT_RAISED")
    assert FaultRaised.decode(frame.payload) == FaultRaised(
        17, 0x0101, 3, 0x03, 23, "jam at pick roller"
    )


def test_ping_response_vector_decodes() -> None:
    frame = _frame("PING response")
    assert (frame.flags, frame.seq, frame.corr) == (Flags.RSP, 33, 7)
    assert Status.decode(frame.payload) == Status(
        DeviceState.READY, StatusFlag(0x0310), 0, 1042, 0, 52, 3_600_000, 0x5EED1234, 0
    )


def test_request_and_error_vectors_decode() -> None:
    assert DispenseGroup.decode(_frame("DISPENSE_GROUP").payload) == DispenseGroup(1042, 3, 2, 1, 4)
    assert ErrorResponse.decode(_frame("ERROR").payload) == ErrorResponse(3, "deck in play")


def test_already_done_vector_is_what_the_device_sends_for_a_group_twice() -> None:
    frame = _frame("ERROR response, RSP seq 37")
    assert (frame.type, frame.flags, frame.seq, frame.corr) == (0x7F, Flags.RSP, 37, 9)
    error = ErrorResponse.decode(frame.payload)
    assert error == ErrorResponse(ErrorCode.ALREADY_DONE, "group 3 was already dispensed")
    assert (error.code, error.name) == (9, "ALREADY_DONE")
    rebuilt = Frame(0x7F, Flags.RSP, 37, 9, error.encode())
    assert rebuilt.encode() == frame.encode()


def test_commitment_vector() -> None:
    fields = dict(line.split(": ", 1) for line in _blocks("tsp1-commitment")[0].splitlines())
    commitment = deck_commitment(
        int(fields["shuffle_id"]), bytes.fromhex(fields["salt"]), bytes(range(52))
    )
    assert commitment.hex() == fields["commitment"]
