"""The byte vectors of docs/protocols/feig-isc.md against the codec, the driver and the simulator.

The vectors are literal frames written out field by field from FEIG's documents (the page cites
the document and page of every field); their CRCs are checked here with this file's own
transcription of the ID ISC.M02 manual's C example (§3.2 p. 18), not the codec's table. The
simulator must answer each request vector with the answer vector, byte for byte, and the
driver's request builders must build the request vectors.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from drivers.rfid.feig import datasets as d
from drivers.rfid.feig import protocol as p
from drivers.rfid.feig import setup
from drivers.rfid.feig.frames import (
    ADVANCED_MAX,
    STANDARD_MAX,
    STX,
    Frame,
    FrameDecoder,
    Garbage,
    ProtocolError,
    decode,
    encode_request,
)
from simulators.feig.bus import FeigLine
from simulators.feig.radio import AntennaFault

SPEC = Path(__file__).resolve().parents[2] / "docs" / "protocols" / "feig-isc.md"


def _vectors() -> dict[str, bytes]:
    text = SPEC.read_text(encoding="utf-8")
    vectors: dict[str, bytes] = {}
    for block in re.findall(r"```feig-vectors\n(.*?)```", text, re.DOTALL):
        for entry in block.strip().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in entry.strip().splitlines())
            vectors[fields["name"]] = bytes.fromhex(fields["bytes"])
    return vectors


VECTORS = _vectors()


def manual_crc(data: bytes) -> int:
    """The ID ISC.M02 manual's CRC16 C example, line by line."""
    crc = 0xFFFF  # CRC_PRESET
    for byte in data:
        crc ^= byte
        for _ in range(8):
            if crc & 0x0001:  # noqa: SIM108 (as the manual writes it)
                crc = (crc >> 1) ^ 0x8408  # CRC_POLYNOM
            else:
                crc = crc >> 1
    return crc


def vector(start: str) -> bytes:
    """The one vector whose name starts with ``start``."""
    (raw,) = [raw for name, raw in VECTORS.items() if name.startswith(start)]
    return raw


def test_the_page_has_the_examples() -> None:
    assert len(VECTORS) >= 40
    assert all(("request" in name) != ("answer" in name) for name in VECTORS)


def test_the_manuals_crc_check_value() -> None:
    assert manual_crc(b"123456789") == 0x6F91


@pytest.mark.parametrize(("name", "raw"), list(VECTORS.items()), ids=list(VECTORS))
def test_each_example_is_a_whole_frame_that_decodes_and_encodes_back(name: str, raw: bytes) -> None:
    length = raw[1] << 8 | raw[2] if raw[0] == STX else raw[0]
    assert length == len(raw)
    assert manual_crc(raw[:-2]) == raw[-2] | raw[-1] << 8  # least significant byte first
    frame = decode(raw, answer="answer" in name)
    assert frame.encode() == raw


#: The driver's builders for the request vectors.
BUILT: dict[str, Callable[[], bytes]] = {
    "software version request, broadcast": lambda: encode_request(p.CMD_SOFTWARE_VERSION),
    "software version request, COM-ADR 1": lambda: encode_request(p.CMD_SOFTWARE_VERSION, b"", 1),
    "software version request, advanced frame, broadcast": lambda: encode_request(
        p.CMD_SOFTWARE_VERSION, advanced=True
    ),
    "baud rate detection request, COM-ADR 1": lambda: p.baud_rate_detection_request(1),
    "RF reset request, COM-ADR 1": lambda: encode_request(p.CMD_RF_RESET, b"", 1),
    "RF on request, COM-ADR 1": lambda: p.rf_on_off_request(True, 1),
    "read configuration request, CFG1 from RAM, COM-ADR 1": lambda: p.read_config_request(
        1, address=1
    ),
    "read configuration request, CFG1 from EEPROM, COM-ADR 1": lambda: p.read_config_request(
        1, eeprom=True, address=1
    ),
    "read configuration request, CFG4 from RAM, COM-ADR 1": lambda: p.read_config_request(
        4, address=1
    ),
    "inventory request, plain, COM-ADR 1": lambda: p.inventory_request(None, address=1),
    "inventory request, plain, MORE, COM-ADR 1": lambda: p.inventory_request(
        None, more=True, address=1
    ),
    "inventory request, antennas 1 to 7, COM-ADR 1": lambda: p.inventory_request(
        range(1, 8), address=1
    ),
    "inventory request, antennas 1 to 7, MORE, COM-ADR 1": lambda: p.inventory_request(
        range(1, 8), more=True, address=1
    ),
    "inventory request, antennas 1 to 7, COM-ADR 2": lambda: p.inventory_request(
        range(1, 8), address=2
    ),
    "diagnostic request, mode 0x01, COM-ADR 1": lambda: p.diagnostic_request(0x01, 1),
    "diagnostic request, mode 0x05, COM-ADR 1": lambda: p.diagnostic_request(0x05, 1),
}


@pytest.mark.parametrize("name", list(BUILT), ids=list(BUILT))
def test_the_driver_builds_the_request_vectors(name: str) -> None:
    assert BUILT[name]() == vector(name)


def test_the_driver_reads_the_answer_vectors() -> None:
    answer = decode(vector("software version answer, COM-ADR 1, ISO 15693 only"), answer=True)
    version = p.SoftwareVersion.decode(answer.data)
    assert (str(version), version.sw_type) == ("ID ISC.M02.M8 firmware 01.02.00", 33)
    assert version.reads(p.TransponderSupport.ISO15693)
    assert not version.reads(p.TransponderSupport.ISO14443A)
    cfg1 = decode(
        vector("read configuration answer, CFG1, COM-ADR 1 at 115200 baud e,8,1"), answer=True
    )
    interface = setup.Interface(cfg1.data)
    assert (interface.address, interface.baudrate, interface.parity) == (1, 115200, "even")
    assert interface.response_time == pytest.approx(3.0)
    cfg4 = decode(vector("read configuration answer, CFG4 as shipped, COM-ADR 1"), answer=True)
    assert setup.Transponder(cfg4.data).time_slots == 16
    assert (
        setup.problems(interface, setup.Transponder(cfg4.data), baudrate=115200, parity="even")
        == []
    )

    def sets(name: str, with_antenna: bool) -> list[d.DataSet]:
        return d.decode_inventory(decode(vector(name), answer=True).data, with_antenna=with_antenna)

    plain = sets("inventory answer, plain, ISO 15693 tag e0040150a1b2c3d4", False)
    assert [s.uid_text() for s in plain] == ["e0040150a1b2c3d4"]
    short = sets("inventory answer, plain, ISO 14443-A tag 04a1b2c3", False)
    assert [s.uid_text() for s in short] == ["04a1b2c3"]
    nfc = sets(
        "inventory answer, antennas, ISO 14443-A tag 04262d64c1556c on antenna 2 at RSSI 0x40", True
    )
    assert [(s.uid_text(), s.antennas) for s in nfc] == [
        ("04262d64c1556c", (d.AntennaRead(2, 0x40),))
    ]
    both = sets(
        "inventory answer, antennas, tag e0040150a1b2c3d4 on antennas 3 (0x5a) and 4 (0x3c)", True
    )
    assert both[0].antennas == (d.AntennaRead(3, 0x5A), d.AntennaRead(4, 0x3C))
    more = decode(
        vector("inventory answer 0x94, more data, tag e0040150a1b2c3d5 on antenna 1 at RSSI 0x48"),
        answer=True,
    )
    assert more.status == p.Status.MORE_DATA
    general = decode(vector("diagnostic answer, mode 0x01, multiplexer"), answer=True)
    assert p.GeneralDiagnostic.decode(general.data).flags & p.GeneralFlag.MULTIPLEXER
    channels = decode(
        vector("diagnostic answer, mode 0x05, channel 2 open, channel 4 short"), answer=True
    )
    assert p.MultiplexerImpedance.decode(channels.data).faults() == {
        2: p.ChannelState.OPEN,
        4: p.ChannelState.SHORT,
    }  # fmt: skip


def tagged_line(*placed: tuple[str, int, int], transponders: str = "both") -> FeigLine:
    """A line with reader COM-ADR 1, tags (uid, antenna, rssi) placed, no RSSI noise."""
    kinds = (
        frozenset({"iso15693"})
        if transponders == "iso15693"
        else frozenset({"iso15693", "iso14443a"})
    )
    line = FeigLine((1,), seed=1, rf_timing=False, transponders=kinds)
    line.radio.noise = 0
    for uid, antenna, rssi in placed:
        line.radio.place(bytes.fromhex(uid), antenna)
        line.radio.strength[bytes.fromhex(uid)] = rssi
    return line


def answers(line: FeigLine, *requests: bytes) -> list[bytes]:
    out = []
    for n, request in enumerate(requests):
        out += [answer.data for answer in line.receive(request, 1.0 + n)]
    return out


ISO15693_ONLY = "iso15693"
#: (request, its answer, the tags on the line: uid, antenna, RSSI), each by its name's start.
EXCHANGES: list[tuple[str, str, tuple[tuple[str, int, int], ...], str]] = [
    (
        "software version request, broadcast",
        "software version answer, COM-ADR 1, ISO 15693 and",
        (),
        "",
    ),
    (
        "software version request, COM-ADR 1",
        "software version answer, COM-ADR 1, ISO 15693 only",
        (),
        ISO15693_ONLY,
    ),
    ("baud rate detection request", "baud rate detection answer", (), ""),
    ("RF reset request", "RF reset answer", (), ""),
    ("RF on request", "RF on answer", (), ""),
    ("read configuration request, CFG1 from RAM", "read configuration answer, CFG1", (), ""),
    ("read configuration request, CFG4", "read configuration answer, CFG4", (), ""),
    (
        "inventory request, plain, COM-ADR 1",
        "inventory answer, plain, ISO 15693",
        (("e0040150a1b2c3d4", 5, 0x50),),
        "",
    ),
    (
        "inventory request, plain, COM-ADR 1",
        "inventory answer, plain, ISO 14443-A",
        (("04a1b2c3", 1, 0x50),),
        "",
    ),
    (
        "inventory request, antennas 1 to 7, COM-ADR 1",
        "inventory answer, antennas, ISO 15693",
        (("e0040150a1b2c3d4", 3, 0x5A),),
        "",
    ),
    (
        "inventory request, antennas 1 to 7, COM-ADR 1",
        "inventory answer, antennas, ISO 14443-A",
        (("04262d64c1556c", 2, 0x40),),
        "",
    ),
    ("inventory request, antennas 1 to 7, COM-ADR 1", "inventory answer 0x01", (), ""),
    ("inventory request, antennas 1 to 7, MORE", "inventory answer 0x82", (), ""),
    ("diagnostic request, mode 0x01", "diagnostic answer, mode 0x01, no problem", (), ""),
    ("diagnostic request, mode 0x04", "diagnostic answer, mode 0x04", (), ""),
    ("diagnostic request, mode 0x02", "diagnostic answer 0x11", (), ""),
    ("unknown command request", "unknown command answer", (), ""),
]


@pytest.mark.parametrize(("request_name", "answer_name", "tags", "kinds"), EXCHANGES)
def test_the_simulator_answers_each_request_vector_with_its_answer_vector(
    request_name: str, answer_name: str, tags: tuple[tuple[str, int, int], ...], kinds: str
) -> None:
    line = tagged_line(*tags, transponders=kinds or "both")
    assert answers(line, vector(request_name)) == [vector(answer_name)]


def test_the_simulator_names_broken_channels_as_the_vectors_do() -> None:
    line = tagged_line()
    line.radio.faults[2] = AntennaFault.OPEN
    line.radio.faults[4] = AntennaFault.SHORT
    warned = answers(line, vector("inventory request, antennas 1 to 7, COM-ADR 1"))
    assert warned == [vector("inventory answer 0x84, RF warning, no data sets")]
    assert answers(line, vector("diagnostic request, mode 0x01, COM-ADR 1")) == [
        vector("diagnostic answer, mode 0x01, multiplexer")
    ]
    assert answers(line, vector("diagnostic request, mode 0x05, COM-ADR 1")) == [
        vector("diagnostic answer, mode 0x05, channel 2 open, channel 4 short")
    ]
    assert answers(line, vector("diagnostic request, mode 0x03, COM-ADR 1")) == [
        vector("diagnostic answer, mode 0x03, channel 2 open, channel 4 short")
    ]


def test_the_simulator_takes_the_configuration_vectors() -> None:
    line = FeigLine((0,), seed=1, rf_timing=False)
    written = answers(line, vector("write configuration request, CFG1 to RAM and EEPROM"))
    assert written == [vector("write configuration answer, COM-ADR 1")]
    assert answers(line, encode_request(p.CMD_READ_CONFIG, b"\x15", 1)) == [
        vector("read configuration answer 0x15, reserved block, COM-ADR 1")
    ]


def test_the_simulator_answers_an_rf_fault_and_pages_as_the_vectors_do() -> None:
    line = tagged_line()
    line.readers[0].rf_flags = p.GeneralFlag.RF_HARDWARE
    failed = answers(line, vector("inventory request, antennas 1 to 7, COM-ADR 1"))
    assert failed == [vector("inventory answer 0x83, RF communication error")]
    line = tagged_line(("e0040150a1b2c3d5", 1, 0x48))
    for n in range(12):  # twelve more on antenna 7: the first page holds twelve, then 0x94
        line.radio.place(bytes.fromhex(f"e00401500000{n:04x}"), 7)
    first = answers(line, vector("inventory request, antennas 1 to 7, COM-ADR 1"))[0]
    assert decode(first, answer=True).status == p.Status.MORE_DATA
    assert (
        first[5:25]
        == vector(
            "inventory answer 0x94, more data, tag e0040150a1b2c3d5 on antenna 1 at RSSI 0x48"
        )[5:25]
    )  # the first data set, byte for byte


@pytest.mark.parametrize(
    ("advanced", "answer", "minimum"),
    [(False, False, 5), (False, True, 6), (True, False, 7), (True, True, 8)],
    ids=["standard-request", "standard-answer", "advanced-request", "advanced-answer"],
)
def test_a_length_field_below_the_shortest_frame_is_garbage_and_the_shortest_decodes(
    advanced: bool, answer: bool, minimum: int
) -> None:
    """M02 §3.1 / MU02 p. 17: LENGTH (ALENGTH) counts the whole frame, so one below the
    shortest frame of its kind is no frame; the shortest itself (no data) is one."""
    shortest = Frame(0x01, 0x52, b"", 0x00 if answer else None, advanced).encode()
    assert len(shortest) == minimum
    assert decode(shortest, answer=answer) == Frame(
        0x01, 0x52, b"", 0x00 if answer else None, advanced
    )
    below = minimum - 1
    head = bytes((STX, below >> 8, below & 0xFF)) if advanced else bytes((below,))
    decoder = FrameDecoder(answers=answer)
    items = list(decoder.feed(head + shortest[len(head) :]))
    field = "ALENGTH" if advanced else "LENGTH"
    assert items[0] == Garbage(1, f"{field} {below} is below {minimum}")


@pytest.mark.parametrize(
    ("advanced", "limit"),
    [(False, STANDARD_MAX), (True, ADVANCED_MAX)],
    ids=["standard", "advanced"],
)
def test_a_frame_of_the_longest_length_its_kind_holds_encodes_and_one_byte_more_does_not(
    advanced: bool, limit: int
) -> None:
    """LENGTH is one byte (a standard frame holds up to 255), ALENGTH two (65535)."""
    overhead = (3 if advanced else 1) + 2 + 2  # length field(s), COM-ADR and CMD, CRC16
    longest = Frame(0x01, 0xB0, bytes(limit - overhead), None, advanced)
    wire = longest.encode()
    assert len(wire) == limit
    assert decode(wire, answer=False) == longest
    with pytest.raises(ProtocolError, match=f"a frame of {limit + 1} bytes does not fit"):
        Frame(0x01, 0xB0, bytes(limit - overhead + 1), None, advanced).encode()


def test_frames_and_garbage_are_values_that_cannot_be_changed() -> None:
    frame = decode(encode_request(0x65, b"", 0x01), answer=False)
    assert {frame, decode(encode_request(0x65, b"", 0x01), answer=False)} == {frame}
    with pytest.raises(AttributeError):
        frame.command = 0x66  # type: ignore[misc]
    garbage = Garbage(1, "crc")
    assert {garbage, Garbage(1, "crc")} == {garbage}
    with pytest.raises(AttributeError):
        garbage.size = 2  # type: ignore[misc]


@pytest.mark.parametrize("first", [0x00, 0x01])
def test_a_standard_length_byte_below_the_stx_is_a_length_too_short_not_an_advanced_frame(
    first: int,
) -> None:
    decoder = FrameDecoder(answers=False)
    assert list(decoder.feed(bytes((first,)))) == [Garbage(1, f"LENGTH {first} is below 5")]


def test_an_advanced_header_with_an_alength_too_short_is_garbage_once_its_three_bytes_are_in() -> (
    None
):
    decoder = FrameDecoder(answers=True)
    items = list(decoder.feed(bytes((STX, 0x00, 0x07))))
    assert items[0] == Garbage(1, "ALENGTH 7 is below 8")


@pytest.mark.parametrize(
    ("raw", "answer"),
    [
        (encode_request(0x65, b"", 0x01)[:-1], False),  # not all of it
        (encode_request(0x65, b"", 0x01) * 2, False),  # two frames
        (encode_request(0x65, b"", 0x01) + b"\x09", False),  # one, and the start of another
        (encode_request(0x65, b"", 0x01)[:-1], True),
    ],
    ids=["short", "two", "one-and-a-start", "short-answer"],
)
def test_decode_takes_exactly_one_whole_frame_and_says_which_it_wanted(
    raw: bytes, answer: bool
) -> None:
    wanted = "answer" if answer else "request"
    with pytest.raises(ProtocolError, match=f"is not one {wanted}$"):
        decode(raw, answer=answer)


def test_a_partial_frame_survives_a_silence_of_the_data_timeout_and_not_a_moment_more() -> None:
    frame = encode_request(0x65, b"", 0x01)
    kept = FrameDecoder(answers=False, data_timeout=0.5)
    assert list(kept.feed(frame[:3], now=10.0)) == []
    assert list(kept.feed(frame[3:], now=10.5)) == [decode(frame, answer=False)]
    dropped = FrameDecoder(answers=False, data_timeout=0.5)
    assert list(dropped.feed(frame[:3], now=10.0)) == []
    items = list(dropped.feed(frame[3:], now=10.5001))
    assert items[0] == Garbage(3, "data timeout: the rest of the frame never came")


def test_after_a_length_too_short_or_a_bad_crc_the_next_frame_in_the_same_bytes_decodes() -> None:
    frame = encode_request(0x65, b"", 0x01)
    bad_crc = frame[:-1] + bytes((frame[-1] ^ 0xFF,))
    for noise, why in ((b"\x01", "LENGTH 1 is below 5"), (bad_crc, "crc")):
        items = list(FrameDecoder(answers=False).feed(noise + frame))
        assert items == [Garbage(len(noise), why), decode(frame, answer=False)]


def test_the_frame_limits_are_the_manual_s_255_and_65535_bytes() -> None:
    assert (STANDARD_MAX, ADVANCED_MAX) == (255, 65535)


@pytest.mark.parametrize("advanced", [False, True])
def test_an_answer_s_status_is_the_byte_after_its_command_in_either_format(advanced: bool) -> None:
    answer = Frame(0x01, 0xB0, b"\x01\x02", 0x83, advanced)
    assert decode(answer.encode(), answer=True) == answer


def test_two_bytes_of_an_advanced_header_wait_for_the_third() -> None:
    decoder = FrameDecoder(answers=True)
    assert list(decoder.feed(bytes((STX, 0x00)))) == []
    assert decoder.pending == 2
