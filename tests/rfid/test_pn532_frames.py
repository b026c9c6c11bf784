"""The PN532 HSU frame codec: golden vectors, round trips under any chunking, garbage, resync."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers.rfid.pn532.frames import (
    ACK_BYTES,
    ERROR_FRAME_BYTES,
    MAX_EXTENDED_LEN,
    MAX_FRAME_BYTES,
    MAX_NORMAL_LEN,
    NACK_BYTES,
    Ack,
    DecodedItem,
    ErrorFrame,
    Frame,
    FrameDecoder,
    Garbage,
    InformationFrame,
    Nack,
    encode,
    encode_information,
)

# Frames as UM0701-02 documents them and as libnfc 1.8 sends and expects them.
GOLDEN: list[tuple[str, Frame]] = [
    ("0000ff00ff00", Ack()),
    ("0000ffff0000", Nack()),
    ("0000ff01ff7f8100", ErrorFrame()),
    ("0000ff02fed4022a00", InformationFrame(0xD4, b"\x02")),  # GetFirmwareVersion
    ("0000ff06fad50332010607e800", InformationFrame(0xD5, bytes.fromhex("0332010607"))),
    ("0000ff03fdd4140117" + "00", InformationFrame(0xD4, bytes.fromhex("1401"))),  # SAMConfig
    ("0000ff04fcd44a0100e100", InformationFrame(0xD4, bytes.fromhex("4a0100"))),  # InList…
]


def frames() -> st.SearchStrategy[Frame]:
    tfi = st.sampled_from([0xD4, 0xD5])
    normal = st.builds(InformationFrame, tfi, st.binary(max_size=254), st.just(False))
    extended = st.builds(InformationFrame, tfi, st.binary(max_size=264), st.just(True))
    return st.one_of(st.just(Ack()), st.just(Nack()), st.just(ErrorFrame()), normal, extended)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in pairwise(bounds)]


def decode_all(chunks: list[bytes], decoder: FrameDecoder | None = None) -> list[DecodedItem]:
    decoder = decoder or FrameDecoder()
    items: list[DecodedItem] = []
    for chunk in chunks:
        items += decoder.feed(chunk)
    return items


@pytest.mark.parametrize(("wire", "frame"), GOLDEN)
def test_golden_frames_encode_and_decode(wire: str, frame: Frame) -> None:
    assert encode(frame) == bytes.fromhex(wire)
    assert FrameDecoder().feed(bytes.fromhex(wire)) == [frame]


def test_extended_frame_header_and_checksums() -> None:
    frame = encode_information(0xD4, bytes(255))  # 256 bytes with the TFI: too long for LEN
    assert frame[:8] == bytes.fromhex("0000ffffff0100ff")
    assert frame[8] == 0xD4
    assert frame[-2:] == bytes((0x2C, 0x00))  # DCS makes D4 + 255 zeros sum to 0 mod 256
    assert FrameDecoder().feed(frame) == [InformationFrame(0xD4, bytes(255), extended=True)]


def test_encoder_refuses_frames_too_long() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        encode_information(0xD4, bytes(265))
    with pytest.raises(ValueError, match="extended"):
        encode_information(0xD4, bytes(255), extended=False)


def test_long_preamble_and_missing_postamble_are_tolerated() -> None:
    wire = bytes(12) + bytes.fromhex("00ff02fed4022a")  # no postamble, many preamble zeros
    assert FrameDecoder().feed(wire + ACK_BYTES) == [InformationFrame(0xD4, b"\x02"), Ack()]


def test_bad_length_checksum_is_garbage_then_resync() -> None:
    items = FrameDecoder().feed(bytes.fromhex("0000ff02ffd4022a00") + ACK_BYTES)
    assert items[-1] == Ack()
    assert any(isinstance(i, Garbage) and "length checksum" in i.reason for i in items)


def test_bad_data_checksum_is_garbage_then_resync() -> None:
    items = FrameDecoder().feed(bytes.fromhex("0000ff02fed4022b00") + NACK_BYTES)
    assert items[-1] == Nack()
    assert isinstance(items[0], Garbage)
    assert items[0].reason == "data checksum mismatch"


def test_truncated_frame_does_not_swallow_the_next_one() -> None:
    truncated = bytes.fromhex("0000ff05fbd44a")  # claims 5 bytes, only 2 came
    good = encode_information(0xD5, b"\x15")
    items = FrameDecoder().feed(truncated + good)
    assert items[-1] == InformationFrame(0xD5, b"\x15")


def test_extended_length_out_of_range_is_refused() -> None:
    wire = bytes.fromhex("0000ffffff0200fe")  # LEN 512 > 265, LCS consistent
    items = FrameDecoder().feed(wire + ERROR_FRAME_BYTES)
    assert items[-1] == ErrorFrame()
    assert any(isinstance(i, Garbage) and "out of range" in i.reason for i in items)


@given(st.lists(frames(), max_size=8), st.lists(st.integers(min_value=0), max_size=12))
def test_round_trip_under_any_chunking(sent: list[Frame], cuts: list[int]) -> None:
    wire = b"".join(encode(f) for f in sent)
    assert decode_all(chunked(wire, cuts)) == sent


@given(st.binary(max_size=2000), st.lists(st.integers(min_value=0), max_size=20))
def test_garbage_never_raises_and_the_buffer_stays_bounded(data: bytes, cuts: list[int]) -> None:
    decoder = FrameDecoder()
    for chunk in chunked(data, cuts):
        for item in decoder.feed(chunk):
            assert isinstance(item, Ack | Nack | ErrorFrame | InformationFrame | Garbage)
        assert decoder.pending <= MAX_FRAME_BYTES


@given(st.binary(max_size=600))
def test_decoded_frames_are_never_invented(data: bytes) -> None:
    for item in FrameDecoder().feed(data):
        if isinstance(item, InformationFrame):
            assert encode(item)[1:-1] in data  # start code … DCS, as received
        elif isinstance(item, Ack | Nack | ErrorFrame):
            assert encode(item)[1:-1] in data


@given(st.binary(max_size=400), st.lists(frames(), min_size=1, max_size=4))
def test_resync_after_reset(garbage: bytes, sent: list[Frame]) -> None:
    decoder = FrameDecoder()
    decoder.feed(garbage)
    decoder.reset()
    assert decoder.feed(b"".join(encode(f) for f in sent)) == sent


@given(
    st.binary(max_size=400).filter(lambda g: b"\x00\xff" not in g),
    st.lists(frames(), min_size=1, max_size=4),
    st.lists(st.integers(min_value=0), max_size=8),
)
def test_resync_after_noise_without_start_code(
    garbage: bytes, sent: list[Frame], cuts: list[int]
) -> None:
    items = decode_all(chunked(garbage + b"".join(encode(f) for f in sent), cuts))
    assert [i for i in items if not isinstance(i, Garbage)] == sent
    noise = [i for i in items if isinstance(i, Garbage)]
    assert sum(g.size for g in noise) <= len(garbage) + 1  # + the first frame's preamble
    assert all(g.data.strip(b"\x00") for g in noise)  # zeros alone are preamble, not garbage


@pytest.mark.parametrize("length", [1, 2, MAX_NORMAL_LEN, MAX_NORMAL_LEN + 1, MAX_EXTENDED_LEN])
def test_an_extended_frame_decodes_at_each_length_up_to_the_limit(length: int) -> None:
    data = bytes(range(256))[: length - 1] + b"\x5a" * max(0, length - 257)
    wire = encode_information(0xD5, data, extended=True)
    assert FrameDecoder().feed(wire) == [InformationFrame(0xD5, data, True)]


@pytest.mark.parametrize("length", [0, MAX_EXTENDED_LEN + 1, 0xFFFF])
def test_an_extended_length_outside_1_to_the_limit_is_garbage(length: int) -> None:
    size = bytes((length >> 8, length & 0xFF))
    header = b"\x00\x00\xff\xff\xff" + size + bytes((-sum(size) & 0xFF,))
    items = FrameDecoder().feed(header + ERROR_FRAME_BYTES)
    assert items[-1] == ErrorFrame()
    assert Garbage(f"extended length {length} out of range", 2, b"\x00\xff") in items


def test_encoding_takes_the_format_each_length_needs_and_refuses_beyond_the_limit() -> None:
    normal = encode_information(0xD4, b"\x01" * (MAX_NORMAL_LEN - 1))
    # LEN and LCS: the normal format up to its limit (0xFF 0xFF would announce an extended one)
    assert normal[3:5] == bytes((MAX_NORMAL_LEN, -MAX_NORMAL_LEN & 0xFF))
    extended = encode_information(0xD4, b"\x01" * MAX_NORMAL_LEN)
    assert extended[3:5] == b"\xff\xff"  # one more: the extended format
    assert extended[5:7] == (MAX_NORMAL_LEN + 1).to_bytes(2, "big")
    encode_information(0xD4, b"\x01" * (MAX_EXTENDED_LEN - 1))
    with pytest.raises(ValueError, match="exceeds the PN532 maximum"):
        encode_information(0xD4, b"\x01" * MAX_EXTENDED_LEN)
    with pytest.raises(ValueError, match="needs the extended format"):
        encode_information(0xD4, b"\x01" * MAX_NORMAL_LEN, extended=False)


# UM0701-02's own numbers, as the manual writes them.


def test_the_longest_frame_the_decoder_holds_is_the_manual_s_273_bytes() -> None:
    # start code 00 FF, extended header FF FF LENM LENL LCS, TFI and 264 data bytes, DCS
    assert MAX_FRAME_BYTES == 2 + 5 + 265 + 1 == 273
    longest = encode_information(0xD5, bytes(264))  # with a preamble and a postamble zero
    decoder = FrameDecoder()
    assert decoder.feed(longest[:-2]) == []  # all but the DCS
    assert decoder.pending <= 273
    assert decoder.feed(longest[-2:]) == [InformationFrame(0xD5, bytes(264), True)]


def test_frames_are_values_that_cannot_be_changed() -> None:
    assert {ErrorFrame(), ErrorFrame()} == {ErrorFrame()}
    frame = InformationFrame(0xD5, b"\x4b\x01")
    assert {frame, InformationFrame(0xD5, b"\x4b\x01")} == {frame}
    with pytest.raises(AttributeError):
        frame.tfi = 0xD4  # type: ignore[misc]


@pytest.mark.parametrize("lcs", [0x00, 0xF5, 0xF7])
def test_a_bad_extended_length_checksum_is_garbage_as_soon_as_its_seven_bytes_are_in(
    lcs: int,
) -> None:
    # LENM 01 LENL 09 want LCS F6; F5 and F7 miss it by one either way
    items = FrameDecoder().feed(bytes.fromhex("00ffffff0109") + bytes((lcs,)))
    assert items[0] == Garbage("extended length checksum mismatch", 2, b"\x00\xff")


def test_a_bad_checksum_drops_the_start_code_alone_so_a_frame_inside_is_found() -> None:
    good = encode_information(0xD5, b"\x15")[1:]  # 00 FF … without a preamble
    # a normal header whose data checksum fails; a real frame starts right after its start code
    items = FrameDecoder().feed(bytes.fromhex("00ff02fed4022b") + good)
    assert items[0] == Garbage("data checksum mismatch", 2, b"\x00\xff")
    assert items[-1] == InformationFrame(0xD5, b"\x15")


@pytest.mark.parametrize("tfi", [0x01, 0x7E, 0x80, 0xD5])
def test_only_tfi_7f_with_nothing_after_it_is_the_error_frame(tfi: int) -> None:
    items = FrameDecoder().feed(encode_information(tfi, b""))
    assert items == [InformationFrame(tfi, b"")]
    assert FrameDecoder().feed(encode_information(0x7F, b"")) == [ErrorFrame()]


def test_garbage_is_a_value_that_cannot_be_changed() -> None:
    garbage = Garbage("no start code", 1, b"\x01")
    assert {garbage, Garbage("no start code", 1, b"\x01")} == {garbage}
    with pytest.raises(AttributeError):
        garbage.size = 2  # type: ignore[misc]


def test_noise_without_a_start_code_is_dropped_whole_unless_it_ends_in_a_zero() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\x01\x02\x03") == [Garbage("no start code", 3, b"\x01\x02\x03")]
    assert decoder.pending == 0
    assert decoder.feed(b"\x01\x02\x00") == [Garbage("no start code", 2, b"\x01\x02")]
    assert decoder.pending == 1  # the 00 may be the first half of a start code


def test_a_normal_length_of_0_is_an_ack_with_its_checksum_ff_and_garbage_with_any_other() -> None:
    items = FrameDecoder().feed(bytes.fromhex("00ff0001") + ACK_BYTES)
    assert items[0] == Garbage("length checksum mismatch", 2, b"\x00\xff")
    assert items[-1] == Ack()
    # LCS 00 checks out, and a zero after it would pass as the DCS of an empty body: an
    # information frame holds its TFI at least, so this is garbage, and never a crash
    items = FrameDecoder().feed(bytes.fromhex("00ff0000") + ACK_BYTES)
    assert items[0] == Garbage("normal length 0 out of range", 2, b"\x00\xff")
    assert items[-1] == Ack()


def test_acks_and_nacks_back_to_back_without_pre_or_postamble_are_each_read_in_either_order() -> (
    None
):
    # each takes its own four bytes from the start code, not the next one's first
    assert FrameDecoder().feed(bytes.fromhex("00ffff0000ff00ff")) == [Nack(), Ack()]
    assert FrameDecoder().feed(bytes.fromhex("00ff00ff00ffff00")) == [Ack(), Nack()]


def test_acks_and_nacks_are_values() -> None:
    assert {Ack(), Ack(), Nack()} == {Ack(), Nack()}


def test_a_frame_is_decoded_the_moment_its_dcs_is_in_and_the_next_one_right_after_it() -> None:
    first = encode_information(0xD5, b"\x15")[1:-1]  # 00 FF … DCS: no preamble, no postamble
    second = encode_information(0xD5, b"\x4b\x00")[1:-1]
    decoder = FrameDecoder()
    assert decoder.feed(first) == [InformationFrame(0xD5, b"\x15")]
    assert decoder.pending == 0
    assert decoder.feed(first + second) == [
        InformationFrame(0xD5, b"\x15"),
        InformationFrame(0xD5, b"\x4b\x00"),
    ]


def test_after_a_bad_extended_length_checksum_the_rest_of_the_bytes_is_read_at_once() -> None:
    items = FrameDecoder().feed(bytes.fromhex("00ffffff010900") + ACK_BYTES)
    assert items[0] == Garbage("extended length checksum mismatch", 2, b"\x00\xff")
    assert items[-1] == Ack()


def test_garbage_reports_carry_the_first_64_bytes_and_the_whole_count() -> None:
    noise = bytes(range(1, 101))
    assert FrameDecoder().feed(noise) == [Garbage("no start code", 100, noise[:64])]
