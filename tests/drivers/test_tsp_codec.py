"""The TSP/1 codec: COBS, CRC, frames and the incremental deframer."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from drivers.tsp.cobs import CobsError, cobs_decode, cobs_encode
from drivers.tsp.crc import crc16_ccitt_false
from drivers.tsp.deframer import Deframer, DeframerStats
from drivers.tsp.frame import (
    MAX_PAYLOAD,
    MAX_WIRE_FRAME,
    TYPE_ACK,
    TYPE_ERROR,
    TYPE_GET_STATUS,
    TYPE_IDENTIFY,
    TYPE_NAK,
    TYPE_PING,
    CorruptFrameError,
    Flags,
    Frame,
    NakReason,
    Rejected,
    check_flags,
    next_seq,
    parse_frame,
)


def test_crc_check_value() -> None:
    assert crc16_ccitt_false(b"123456789") == 0x29B1


@pytest.mark.parametrize(
    ("data", "encoded"),
    [
        (b"", b"\x01"),
        (b"\x00", b"\x01\x01"),
        (b"\x00\x00", b"\x01\x01\x01"),
        (b"\x11\x22\x00\x33", b"\x03\x11\x22\x02\x33"),
        (bytes(range(1, 255)), b"\xff" + bytes(range(1, 255))),
        (bytes(range(255)), b"\x01\xff" + bytes(range(1, 255))),
        (bytes(range(1, 256)), b"\xff" + bytes(range(1, 255)) + b"\x02\xff"),
    ],
)
def test_cobs_reference_examples(data: bytes, encoded: bytes) -> None:
    assert cobs_encode(data) == encoded
    assert cobs_decode(encoded) == data


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (b"\x00", "zero code byte at offset 0"),
        (b"\x05\x01", "block at offset 0 runs past the end (4 bytes wanted)"),
        (b"\x04\x01", "block at offset 0 runs past the end (3 bytes wanted)"),
        (b"\x02\x01\xff\x01", "block at offset 2 runs past the end (254 bytes wanted)"),
        (b"\x03\x01\x00", "zero byte inside the block at offset 0"),
    ],
)
def test_cobs_rejects_invalid_and_says_where_and_what(bad: bytes, why: str) -> None:
    with pytest.raises(CobsError) as refused:
        cobs_decode(bad)
    assert str(refused.value) == why


@given(st.binary(max_size=2000))
def test_cobs_round_trip_and_no_zero(data: bytes) -> None:
    encoded = cobs_encode(data)
    assert 0 not in encoded
    assert cobs_decode(encoded) == data
    assert len(encoded) <= len(data) + 1 + len(data) // 254


frames = st.builds(
    Frame,
    type=st.integers(0, 255),
    flags=st.sampled_from([Flags.REQ, Flags.RSP, Flags.EVT, Flags.ACK, Flags.NAK])
    | st.sampled_from([Flags.REQ | Flags.RETX, Flags.EVT | Flags.RETX]),
    seq=st.integers(0, 255),
    corr=st.integers(0, 255),
    payload=st.binary(max_size=MAX_PAYLOAD),
)


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@given(st.lists(frames, max_size=8), st.data())
def test_round_trip_under_any_chunking(sent: list[Frame], data: st.DataObject) -> None:
    stream = b"".join(frame.to_wire() for frame in sent)
    deframer = Deframer()
    received = [item for chunk in data.draw(chunked(stream)) for item in deframer.feed(chunk)]
    assert received == sent
    assert deframer.stats.dropped_bytes == 0
    assert deframer.buffered == 0


@given(st.binary(max_size=4096))
@settings(max_examples=1000)
@example(b"\x00" * 10)
@example(b"\xff" * 3000)
def test_garbage_never_raises_and_buffer_stays_bounded(junk: bytes) -> None:
    deframer = Deframer()
    for item in deframer.feed(junk):
        # Anything decoded from noise passed the CRC: it re-encodes to exactly what was cut out.
        if isinstance(item, Frame):
            assert item.to_wire()[:-1] in junk
    assert deframer.buffered <= MAX_WIRE_FRAME


@given(st.binary(max_size=3000), frames)
def test_resynchronises_after_garbage(junk: bytes, frame: Frame) -> None:
    deframer = Deframer()
    deframer.feed(junk)
    # The delimiter ends whatever the noise left in the buffer; the next frame then decodes.
    assert deframer.feed(b"\x00" + frame.to_wire()) == [frame]


@given(st.lists(st.binary(min_size=1, max_size=600), max_size=20))
def test_buffer_bounded_under_any_stream(chunks: list[bytes]) -> None:
    deframer = Deframer()
    for chunk in chunks:
        deframer.feed(chunk)
        assert deframer.buffered <= MAX_WIRE_FRAME


def test_oversized_run_is_discarded_up_to_the_next_delimiter() -> None:
    deframer = Deframer()
    good = Frame(0x12, Flags.REQ, 7)
    assert deframer.feed(b"\x01" * (MAX_WIRE_FRAME + 50)) == []
    assert deframer.buffered == 0
    # The tail of the overlong run (even if it looks like a frame) is still garbage.
    assert deframer.feed(good.to_wire()[:-1] + b"\x00" + good.to_wire()) == [good]
    assert deframer.stats.oversized == 1


def test_truncated_frame_never_yields_a_frame() -> None:
    wire = Frame(0x45, Flags.EVT, 3, 0, b"abc").to_wire()
    deframer = Deframer()
    assert deframer.feed(wire[:-4] + b"\x00") == []
    assert deframer.stats.cobs_errors + deframer.stats.crc_errors + deframer.stats.short_frames == 1


def test_bad_crc_is_counted_and_dropped() -> None:
    raw = bytearray(Frame(0x12, Flags.REQ, 7).encode())
    raw[-1] ^= 0x40
    deframer = Deframer()
    assert deframer.feed(cobs_encode(bytes(raw)) + b"\x00") == []
    assert deframer.stats.crc_errors == 1


def _with_crc(body: bytes) -> bytes:
    return body + crc16_ccitt_false(body).to_bytes(2, "little")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (bytes([2, 0x12, 0x01, 9, 0, 0, 0]), NakReason.BAD_VERSION),
        (bytes([1, 0x12, 0x01, 9, 0, 5, 0]), NakReason.BAD_LENGTH),
        (bytes([1, 0x12, 0x03, 9, 0, 0, 0]), NakReason.BAD_FLAGS),
        (bytes([1, 0x12, 0x40 | 0x01, 9, 0, 0, 0]), NakReason.BAD_FLAGS),
        (bytes([1, 0x12, 0x22, 9, 0, 0, 0]), NakReason.BAD_FLAGS),
    ],
)
def test_bad_header_with_good_crc_is_rejected(body: bytes, reason: NakReason) -> None:
    result = parse_frame(_with_crc(body))
    assert isinstance(result, Rejected)
    assert result.reason is reason
    assert result.seq == 9


def _request(payload: bytes, length: int) -> bytes:
    """A PING request carrying ``payload`` whose header says ``length``, with a good CRC."""
    header = bytes([1, 0x12, 0x01, 9, 0]) + length.to_bytes(2, "little")
    return _with_crc(header + payload)


@pytest.mark.parametrize(
    ("size", "length", "accepted"),
    [
        (4, 4, True),
        (4, 3, False),  # a length field shorter than the payload
        (4, 5, False),  # longer than the payload
        (0, 1, False),
        (1, 0, False),
        (MAX_PAYLOAD - 1, MAX_PAYLOAD - 1, True),
        (MAX_PAYLOAD, MAX_PAYLOAD, True),  # the limit itself
        (MAX_PAYLOAD + 1, MAX_PAYLOAD + 1, False),  # one over it, however honest the field
        (MAX_PAYLOAD + 1, MAX_PAYLOAD, False),
    ],
)
def test_the_length_field_is_the_payload_s_at_each_side_of_it_and_of_the_limit(
    size: int, length: int, accepted: bool
) -> None:
    result = parse_frame(_request((bytes(range(256)) * 5)[:size], length))
    if accepted:
        assert isinstance(result, Frame)
        assert len(result.payload) == size
    else:
        assert isinstance(result, Rejected)
        assert result.reason is NakReason.BAD_LENGTH
        assert result.detail == f"length field {length}, payload {size} bytes"


def test_check_flags_accepts_every_single_kind() -> None:
    for kind in (Flags.REQ, Flags.RSP, Flags.EVT, Flags.ACK, Flags.NAK):
        assert check_flags(kind) is None


# The spec's own numbers (docs/protocols/tsp1.md), written here as the spec writes them, so a
# constant changed on both sides of the link at once still fails.


def test_the_message_types_flags_and_nak_reasons_are_the_spec_s_numbers() -> None:
    assert (TYPE_ACK, TYPE_NAK, TYPE_IDENTIFY, TYPE_GET_STATUS, TYPE_PING, TYPE_ERROR) == (
        0x00, 0x01, 0x10, 0x11, 0x12, 0x7F,
    )  # fmt: skip
    assert [int(f) for f in (Flags.REQ, Flags.RSP, Flags.EVT, Flags.ACK, Flags.NAK)] == [
        0x01, 0x02, 0x04, 0x08, 0x10,
    ]  # fmt: skip
    assert int(Flags.RETX) == 0x20
    assert [int(r) for r in NakReason] == [1, 2, 3, 4]
    assert [r.name for r in NakReason] == ["BAD_VERSION", "BAD_LENGTH", "BAD_FLAGS", "BUSY"]


def test_the_deframer_holds_1100_bytes_waiting_for_a_delimiter_and_not_one_more() -> None:
    def garbage(stats: DeframerStats) -> int:
        return stats.cobs_errors + stats.crc_errors + stats.short_frames

    deframer = Deframer()
    assert deframer.feed(b"\x01" * 1100 + b"\x00") == []  # taken whole: read, not a frame
    assert (deframer.stats.oversized, garbage(deframer.stats)) == (0, 1)
    assert deframer.feed(b"\x01" * 1101 + b"\x00") == []
    assert (deframer.stats.oversized, garbage(deframer.stats)) == (1, 1)


@pytest.mark.parametrize("size", range(9))
def test_fewer_bytes_than_a_header_and_a_crc_are_short_whatever_they_hold(size: int) -> None:
    for raw in (bytes(size), bytes(range(1, size + 1))):
        with pytest.raises(CorruptFrameError) as refused:
            parse_frame(raw)
        assert refused.value.what == "short"


@pytest.mark.parametrize("version", [0, 2, 255])
def test_any_version_but_1_is_refused_below_as_above(version: int) -> None:
    result = parse_frame(_with_crc(bytes([version, 0x12, 0x01, 9, 0, 0, 0])))
    assert isinstance(result, Rejected)
    assert result.reason is NakReason.BAD_VERSION


@pytest.mark.parametrize("flags", [0x00, 0x20])
def test_flags_naming_no_kind_are_refused(flags: int) -> None:
    assert (
        check_flags(flags) == f"flags {flags:#04x} must name exactly one of REQ, RSP, EVT, ACK, NAK"
    )


def test_the_sequence_number_runs_1_to_255_and_wraps_to_1_never_0() -> None:
    assert [next_seq(seq) for seq in range(256)] == [*range(1, 256), 1]


def test_a_frame_without_a_sequence_number_carries_0_none() -> None:
    assert Frame(TYPE_PING, Flags.EVT).encode()[3] == 0


def test_a_decoded_frame_is_a_value_that_cannot_be_changed() -> None:
    frame = Frame(TYPE_PING, Flags.REQ, 7, 0, b"ab")
    again = parse_frame(frame.encode())
    assert again == frame
    assert hash(again) == hash(frame)
    assert {frame, again} == {frame}
    with pytest.raises(AttributeError):
        again.seq = 8  # type: ignore[misc]
    rejected = parse_frame(_with_crc(bytes([2, 0x12, 0x01, 9, 0, 0, 0])))
    assert isinstance(rejected, Rejected)
    assert hash(rejected) == hash(Rejected(rejected.reason, rejected.seq, rejected.detail))
    with pytest.raises(AttributeError):
        rejected.seq = 8  # type: ignore[misc]
