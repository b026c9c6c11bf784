"""The simulated line of ID ISC.M02.M8 readers, byte for byte, and the codec's invariants.

Pure: the line is fed bytes with the time they arrive, as the pty server feeds it. What each
answer must be is FEIG's (docs/protocols/feig-isc.md gives the document and page); the literal
byte vectors of those documents are checked in ``test_feig_protocol.py``.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers.rfid.feig import datasets as d
from drivers.rfid.feig import protocol as p
from drivers.rfid.feig import setup
from drivers.rfid.feig.frames import (
    BROADCAST,
    DATA_TIMEOUT,
    Frame,
    FrameDecoder,
    Garbage,
    crc16,
    decode,
    encode_request,
)
from drivers.rfid.feig.link import FeigLink
from simulators.feig.bus import FeigLine
from simulators.feig.radio import AntennaFault
from simulators.feig.reader import PAGE_MAX, ReaderModel

T15693 = "e0040150a1b2c3d4"
T14443 = "04262d64c1556c"


def line(*addresses: int, **options: object) -> FeigLine:
    return FeigLine(addresses or (1,), seed=1, rf_timing=False, **options)  # type: ignore[arg-type]


def ask(bus: FeigLine, request: bytes, now: float = 1.0) -> list[Frame | Garbage]:
    """The answers to ``request``, decoded as a host decodes them."""
    decoder = FrameDecoder(answers=True)
    return [item for answer in bus.receive(request, now) for item in decoder.feed(answer.data)]


def one(bus: FeigLine, request: bytes, now: float = 1.0) -> Frame:
    answers = ask(bus, request, now)
    assert len(answers) == 1, answers
    assert isinstance(answers[0], Frame)
    return answers[0]


VERSION = encode_request(p.CMD_SOFTWARE_VERSION, b"", 1)


def test_a_partial_frame_followed_by_silence_is_dropped_and_the_next_request_read() -> None:
    bus = line()
    assert bus.receive(VERSION[:3], 1.0) == []
    # More than 12 ms of silence (ID ISC.M02 manual p. 17): the half request is dropped …
    answer = one(bus, VERSION, 1.0 + DATA_TIMEOUT + 0.001)
    assert (answer.command, answer.status) == (p.CMD_SOFTWARE_VERSION, p.Status.OK)
    assert bus.counters.data_timeouts == 1
    # … but bytes that keep coming belong to the frame they continue.
    assert bus.receive(VERSION[:3], 2.0) == []
    rest = ask(bus, VERSION[3:], 2.0 + DATA_TIMEOUT / 2)
    assert [item.command for item in rest if isinstance(item, Frame)] == [0x65]


def test_an_advanced_frame_is_read_whole_and_not_answered_and_the_line_stays_in_step() -> None:
    bus = line()
    advanced = encode_request(p.CMD_SOFTWARE_VERSION, b"", BROADCAST, advanced=True)
    assert advanced[:4] == bytes((0x02, 0x00, 0x07, 0xFF))
    assert bus.receive(advanced + VERSION, 1.0)[0].data == one(line(), VERSION).encode()
    assert bus.counters.advanced == 1


def test_a_corrupted_or_foreign_request_gets_no_answer() -> None:
    bus = line(1, 2)
    bad = bytearray(VERSION)
    bad[-1] ^= 0x01
    assert bus.receive(bytes(bad), 1.0) == []
    assert bus.receive(encode_request(p.CMD_SOFTWARE_VERSION, b"", 7), 2.0) == []
    assert one(bus, encode_request(p.CMD_SOFTWARE_VERSION, b"", 2), 3.0).address == 2


def test_every_reader_answers_a_broadcast_so_two_collide() -> None:
    assert one(line(5), encode_request(p.CMD_SOFTWARE_VERSION)).address == 5  # its own COM-ADR
    bus = line(1, 2)
    answers = ask(bus, encode_request(p.CMD_SOFTWARE_VERSION))
    assert not any(isinstance(item, Frame) for item in answers)
    assert bus.counters.collisions == 1


def test_a_request_before_the_starting_delay_is_counted() -> None:
    bus = line()
    bus.answered_until = 1.0
    one(bus, VERSION, 1.002)
    one(bus, VERSION, 1.010)
    assert bus.counters.rushed == 1


def inventory(bus: FeigLine, antennas: list[int] | None, *, more: bool = False) -> Frame:
    return one(bus, p.inventory_request(antennas, more=more, address=1))


def test_a_full_reader_is_paged_at_sixteen_data_sets_or_what_fits_a_frame() -> None:
    bus = line()
    for n in range(40):
        bus.radio.place(bytes.fromhex(f"e00401500000{n:04x}"), 1 + n % 8)
    for antennas in (list(range(1, 9)), None):
        with_antenna = antennas is not None
        first = inventory(bus, antennas)
        pages = [first]
        while pages[-1].status == p.Status.MORE_DATA:
            pages.append(inventory(bus, antennas, more=True))
        assert pages[-1].status == p.Status.OK
        sizes = [len(d.decode_inventory(page.data, with_antenna=with_antenna)) for page in pages]
        assert sum(sizes) == 40
        assert max(sizes) == (12 if with_antenna else PAGE_MAX)  # 20-byte sets: 12 fit 255
        assert all(len(page.encode()) <= 255 for page in pages)


def test_more_that_does_not_follow_its_inventory_is_not_available() -> None:
    bus = line()
    assert inventory(bus, [1], more=True).status == p.Status.COMMAND_NOT_AVAILABLE
    inventory(bus, [1])
    assert inventory(bus, None, more=True).status == p.Status.COMMAND_NOT_AVAILABLE  # MU02 p. 92


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (bytes((0x01,)), p.Status.LENGTH_ERROR),
        (bytes((0x01, 0x10)), p.Status.LENGTH_ERROR),  # ANT without ANT_SEL
        (bytes((0x01, 0x00, 0x01)), p.Status.LENGTH_ERROR),  # ANT_SEL without ANT
        (bytes((0x01, 0x10, 0x00)), p.Status.PARAMETER_RANGE_ERROR),  # no antenna selected
        (bytes((0x23, 0x00)), p.Status.UNKNOWN_COMMAND),  # not simulated
    ],
)
def test_a_bad_iso_host_request_gets_its_status(data: bytes, status: int) -> None:
    assert one(line(), encode_request(p.CMD_ISO_HOST, data, 1)).status == status


def test_both_transponder_types_by_default_and_an_m02m8_as_sold_reads_iso15693_only() -> None:
    for transponders, expected, tr_type in (
        (frozenset({"iso15693", "iso14443a"}), {T15693, T14443}, 0x0018),
        (frozenset({"iso15693"}), {T15693}, 0x0008),
    ):
        bus = line(transponders=transponders)
        bus.radio.place(bytes.fromhex(T15693), 1)
        bus.radio.place(bytes.fromhex(T14443), 2)
        sets = d.decode_inventory(inventory(bus, [1, 2]).data, with_antenna=True)
        assert {item.uid_text() for item in sets} == expected
        assert p.SoftwareVersion.decode(one(bus, VERSION).data).tr_type == tr_type


def test_the_reader_aborts_an_inventory_longer_than_its_tr_response_time() -> None:
    bus = FeigLine((1,), seed=1)  # timed: 163 ms an antenna (M02 Annex C)
    reader = bus.readers[0]
    assert one(bus, p.inventory_request([1, 2], address=1)).status == p.Status.NO_TRANSPONDER
    cfg1 = bytearray(reader.ram[setup.CFG_INTERFACE])
    cfg1[6:8] = (2).to_bytes(2, "big")  # 200 ms
    reader.ram[setup.CFG_INTERFACE] = bytes(cfg1)
    answers = bus.receive(p.inventory_request([1, 2], address=1), 2.0)
    assert decode(answers[0].data, answer=True).status == p.Status.RF_COMMUNICATION_ERROR
    assert answers[0].work == pytest.approx(0.205)  # the reaction and TR-RESPONSE-TIME


def config(bus: FeigLine, command: int, data: bytes) -> Frame:
    return one(bus, encode_request(command, data, 1))


def test_configuration_blocks_read_write_save_and_default_as_the_manual_says() -> None:
    bus = line()
    reader = bus.readers[0]
    cfg1 = config(bus, p.CMD_READ_CONFIG, bytes((setup.CFG_INTERFACE,)))
    assert setup.Interface(cfg1.data).baudrate == 115200
    assert config(bus, p.CMD_READ_CONFIG, bytes((2,))).status == p.Status.READ_PROTECT
    slower = setup.Interface(cfg1.data).with_line(address=1, baudrate=38400, parity="even")
    written = config(bus, p.CMD_WRITE_CONFIG, bytes((setup.CFG_INTERFACE,)) + slower.record)
    assert written.status == p.Status.OK
    assert reader.eeprom[setup.CFG_INTERFACE] == cfg1.data  # RAM only, until saved
    assert config(bus, p.CMD_SAVE_CONFIG, bytes((setup.CFG_INTERFACE,))).status == p.Status.OK
    assert reader.eeprom[setup.CFG_INTERFACE] == slower.record
    eeprom = config(bus, p.CMD_READ_CONFIG, bytes((p.CFG_EEPROM | setup.CFG_INTERFACE,)))
    assert setup.Interface(eeprom.data).baudrate == 38400
    bad = bytearray(slower.record)
    bad[2] = 0x0C  # no such BAUD
    refused = config(bus, p.CMD_WRITE_CONFIG, bytes((setup.CFG_INTERFACE,)) + bytes(bad))
    assert refused.status == p.Status.PARAMETER_RANGE_ERROR
    assert config(bus, p.CMD_WRITE_CONFIG, bytes((5,)) + bytes(14)).status == p.Status.WRITE_PROTECT
    assert config(bus, p.CMD_WRITE_CONFIG, b"\x01").status == p.Status.LENGTH_ERROR
    assert config(bus, p.CMD_DEFAULT_CONFIG, bytes((p.CFG_ALL,))).status == p.Status.OK
    assert reader.ram[setup.CFG_INTERFACE] == setup.DEFAULT_CFG1  # COM-ADR 0, 38400, e,8,1
    assert reader.address == 0


def test_what_cfg4_lets_answer() -> None:
    bus = line()
    reader: ReaderModel = bus.readers[0]
    bus.radio.place(bytes.fromhex(T15693), 1)
    bus.radio.place(bytes.fromhex("e004015000000002"), 1)
    bus.radio.place(bytes.fromhex("e004015000000003"), 2)
    cfg4 = bytearray(setup.DEFAULT_CFG4)
    cfg4[4] |= setup.NO_TS  # one time slot: the two on antenna 1 collide
    reader.ram[setup.CFG_TRANSPONDER] = bytes(cfg4)
    sets = d.decode_inventory(inventory(bus, [1, 2]).data, with_antenna=True)
    assert [item.uid_text() for item in sets] == ["e004015000000003"]
    cfg4 = bytearray(setup.DEFAULT_CFG4)
    cfg4[4] |= setup.AFI
    cfg4[5] = 0x07
    reader.ram[setup.CFG_TRANSPONDER] = bytes(cfg4)
    assert inventory(bus, [1, 2]).status == p.Status.NO_TRANSPONDER


def test_a_reader_in_scan_mode_takes_no_host_command() -> None:
    bus = line()
    cfg1 = bytearray(bus.readers[0].ram[setup.CFG_INTERFACE])
    cfg1[13] |= setup.SCAN_MODE
    bus.readers[0].ram[setup.CFG_INTERFACE] = bytes(cfg1)
    assert inventory(bus, [1]).status == p.Status.COMMAND_NOT_AVAILABLE


def test_reader_control_commands() -> None:
    bus = line()
    reader = bus.readers[0]
    detect = one(bus, p.baud_rate_detection_request(1))
    assert (detect.command, detect.status, detect.data) == (0x52, p.Status.OK, b"")
    assert one(bus, p.rf_on_off_request(True, 1)).status == p.Status.OK
    assert reader.rf_on
    assert one(bus, encode_request(p.CMD_RF_ON_OFF, b"\x02", 1)).status == (
        p.Status.PARAMETER_RANGE_ERROR
    )
    assert one(bus, encode_request(p.CMD_SET_OUTPUT, bytes(8), 1)).status == p.Status.OK
    assert one(bus, encode_request(0x42, b"", 1)).status == p.Status.UNKNOWN_COMMAND
    assert one(bus, encode_request(p.CMD_CPU_RESET, b"", 1)).status == p.Status.OK
    assert not reader.rf_on  # "the RF-field will be switch off after a CPU Reset" (M02 p. 46)


def test_the_diagnostic_names_a_broken_channel_in_feigs_fields() -> None:
    bus = line(1, 2)
    bus.radio.faults[2] = AntennaFault.OPEN
    bus.radio.faults[4] = AntennaFault.SHORT
    bus.radio.faults[10] = AntennaFault.POWER  # reader 2's antenna 2
    assert inventory(bus, [1, 2]).status == p.Status.RF_WARNING
    assert inventory(bus, [1]).status == p.Status.NO_TRANSPONDER  # antenna 1 is fine
    general = p.GeneralDiagnostic.decode(one(bus, p.diagnostic_request(0x01, 1)).data)
    assert general.flags == p.GeneralFlag.MULTIPLEXER
    impedance = p.MultiplexerImpedance.decode(one(bus, p.diagnostic_request(0x05, 1)).data)
    assert impedance.faults() == {2: p.ChannelState.OPEN, 4: p.ChannelState.SHORT}
    second = one(bus, p.diagnostic_request(0x05, 2))
    assert p.MultiplexerImpedance.decode(second.data).faults() == {2: p.ChannelState.POWER}
    channels = one(bus, p.diagnostic_request(0x03, 1)).data
    assert channels == bytes((0, 0x04, 0, 0x02, 0, 0, 0, 0))
    assert one(bus, p.diagnostic_request(0x04, 1)).data == bytes(2)
    assert one(bus, p.diagnostic_request(0x77, 1)).status == p.Status.PARAMETER_RANGE_ERROR


# --------------------------------------------------------------------------- invariants

uids_15693 = st.binary(min_size=8, max_size=8).map(lambda b: b.hex())
uids_14443 = (
    st.sampled_from([4, 7, 10])
    .flatmap(lambda n: st.binary(min_size=n, max_size=n).filter(lambda b: n != 4 or b[0] != 0))
    .map(lambda b: b.hex())
)
reads = st.lists(
    st.builds(d.AntennaRead, st.integers(1, 8), st.integers(0, 255), st.integers(0, 255)),
    min_size=1,
    max_size=3,
)


@given(
    st.lists(
        st.one_of(
            st.builds(lambda u, r: d.DataSet.iso15693(u, antennas=r), uids_15693, reads),
            st.builds(lambda u, r: d.DataSet.iso14443a(u, antennas=r), uids_14443, reads),
        ),
        max_size=8,
    ),
    st.booleans(),
)
def test_data_sets_round_trip_with_and_without_antennas(
    sets: list[d.DataSet], with_antenna: bool
) -> None:
    if not with_antenna:
        sets = [d.DataSet(s.tr_type, s.uid, s.dsfid, s.tr_info, s.opt_info) for s in sets]
    raw = d.encode_inventory(sets, with_antenna=with_antenna)
    back = d.decode_inventory(raw, with_antenna=with_antenna)
    assert [(s.uid_text(), s.antennas) for s in back] == [(s.uid_text(), s.antennas) for s in sets]


@given(st.binary(max_size=200), st.booleans())
def test_the_decoder_survives_any_bytes_and_finds_the_frame_after_them(
    noise: bytes, answers: bool
) -> None:
    frame = Frame(3, p.CMD_SOFTWARE_VERSION, b"\x01\x02", 0 if answers else None).encode()
    decoder = FrameDecoder(answers=answers)
    list(decoder.feed(noise, 0.0))
    found = [item for item in decoder.feed(frame, 1.0) if isinstance(item, Frame)]
    assert found[-1].encode() == frame  # after the silence, the frame is read whatever came first


@given(st.binary(min_size=1, max_size=64))
def test_the_crc_is_the_manuals_bitwise_algorithm(data: bytes) -> None:
    crc = 0xFFFF  # ID ISC.M02 manual §3.2 p. 18
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
    assert crc16(data) == crc


def test_the_host_reads_an_advanced_answer_and_the_standard_one_after_it() -> None:
    # A reader that answers in the advanced frame (ID ISC.MU02.02 manual p. 16) does not knock
    # the host's decoder out of step: the frame is cut by its ALENGTH.
    advanced = Frame(1, p.CMD_SOFTWARE_VERSION, bytes(7), 0, advanced=True).encode()
    assert advanced[:3] == bytes((0x02, 0x00, 0x0F))  # STX, ALENGTH 15
    standard = Frame(1, p.CMD_RF_RESET, b"", 0).encode()
    items = list(FrameDecoder(answers=True).feed(advanced + standard))
    assert [(item.command, item.advanced) for item in items if isinstance(item, Frame)] == [
        (p.CMD_SOFTWARE_VERSION, True),
        (p.CMD_RF_RESET, False),
    ]


async def test_the_link_takes_an_advanced_answer_and_keeps_the_starting_delay() -> None:
    sent: list[tuple[float, bytes]] = []
    link = FeigLink(timeout=1.0)
    loop = asyncio.get_running_loop()

    def write(data: bytes) -> None:
        sent.append((loop.time(), data))
        answer = Frame(1, data[2], bytes(7), 0, advanced=True).encode()
        loop.call_soon(link.data_received, answer)

    link.write = write
    first = await link.call(encode_request(p.CMD_SOFTWARE_VERSION, b"", 1))
    second = await link.call(encode_request(p.CMD_SOFTWARE_VERSION, b"", 1))
    assert first.advanced
    assert second.advanced
    assert sent[1][0] - sent[0][0] >= 0.005  # 5 ms of silence after the answer before a frame


def test_a_reader_answers_only_at_the_baud_rate_it_runs_at() -> None:
    bus = line(1, 2)
    bus.readers[1].running_baud = 38400
    detect = p.baud_rate_detection_request(2)
    assert bus.receive(detect, 1.0, line_baud=115200) == []
    assert bus.counters.wrong_speed == 1
    assert [decode(a.data, answer=True).address for a in bus.receive(detect, 2.0, 38400)] == [2]
    # A new BAUD counts once the reader is reset (M02 p. 21): until then it runs as it did.
    cfg1 = setup.Interface(bus.readers[0].ram[setup.CFG_INTERFACE])
    slower = cfg1.with_line(address=1, baudrate=9600, parity="even").record
    written = bus.receive(encode_request(p.CMD_WRITE_CONFIG, b"\x81" + slower, 1), 3.0, 115200)
    assert decode(written[0].data, answer=True).status == p.Status.OK
    assert bus.readers[0].running_baud == 115200
    bus.receive(encode_request(p.CMD_CPU_RESET, b"", 1), 4.0, 115200)
    assert bus.readers[0].running_baud == 9600
