"""Every field protocol.py puts in a request or reads out of an answer, against FEIG's documents.

``docs/protocols/feig-isc.md`` §1 names the documents; the short names are the page's: "M02" is
the manual "ID ISC.M02-B" (H21010-1e-ID-B), "MU02" the manual "ID ISC.MU02.02" (H90701-3e-ID-B),
"CPR40" the manual "ID CPR40.xx - Family" (H71100-13e-ID-B), "SDK" FEIG's fedm-classlib 04.06.10
(``fedm-classlib/src/impl/core/i_scan/``). Each expected value below is read off the page or the
SDK line its comment names, never off the module. Whole frames are written out byte by byte and
their CRC16 is the manual's C loop as ``test_feig_protocol.py`` transcribes it (M02 §3.2 p. 18).
Besides the values: each length refused one byte either side of its limit and accepted at it,
and the round trips the codec promises.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

import drivers.rfid.feig.protocol as p
from drivers.rfid.feig.frames import ProtocolError, decode, encode_request
from tests.rfid.test_feig_protocol import manual_crc, vector


def framed(*fields: int) -> bytes:
    """A standard frame from its fields as a manual draws them, LENGTH first, and its CRC16,
    least significant byte first (M02 pp. 16-18)."""
    body = bytes(fields)
    crc = manual_crc(body)
    return body + bytes((crc & 0xFF, crc >> 8))


def test_the_framing_helper_is_the_manual_s() -> None:
    assert framed(0x06, 0x01, 0x6A, 0x01) == vector("RF on request, COM-ADR 1")


# --------------------------------------------------------------------------- control bytes

#: M02 Annex E p. 104 (and each command's own page); [0x6E] from MU02 §9.8 p. 69; the
#: inventory's sub-command 0x01 from M02 §7.1 p. 57.
CONTROL_BYTES = [
    ("CMD_BAUD_RATE_DETECTION", 0x52),
    ("CMD_CPU_RESET", 0x63),
    ("CMD_SOFTWARE_VERSION", 0x65),
    ("CMD_RF_RESET", 0x69),
    ("CMD_RF_ON_OFF", 0x6A),
    ("CMD_DIAGNOSTIC", 0x6E),
    ("CMD_SET_OUTPUT", 0x71),
    ("CMD_READ_CONFIG", 0x80),
    ("CMD_WRITE_CONFIG", 0x81),
    ("CMD_SAVE_CONFIG", 0x82),
    ("CMD_DEFAULT_CONFIG", 0x83),
    ("CMD_ISO_HOST", 0xB0),
    ("ISO_INVENTORY", 0x01),
]


@pytest.mark.parametrize(("name", "byte"), CONTROL_BYTES, ids=[n for n, _ in CONTROL_BYTES])
def test_each_control_byte_is_the_manual_s(name: str, byte: int) -> None:
    assert getattr(p, name) == byte


def test_the_requests_without_a_builder_are_the_vectors_with_the_module_s_control_bytes() -> None:
    assert encode_request(p.CMD_CPU_RESET, b"", 1) == vector("CPU reset request, COM-ADR 1")
    led = bytes.fromhex("0001 0000 000a 0000")  # OS, OSF, OS-Time, 0x0000 (M02 pp. 53-54)
    assert encode_request(p.CMD_SET_OUTPUT, led, 1) == vector("set output request")
    # [0x82] CFG-ADR 0x01: CFG1 alone (M02 §5.3 p. 43); [0x83] CFG-ADR 0xC1: every block, in
    # RAM and EEPROM (M02 §5.4 p. 44).
    save = encode_request(p.CMD_SAVE_CONFIG, bytes((p.config_address(1),)), 1)
    assert save == framed(0x06, 0x01, 0x82, 0x01)
    every = bytes((p.config_address(1, eeprom=True, every=True),))
    assert encode_request(p.CMD_DEFAULT_CONFIG, every, 1) == framed(0x06, 0x01, 0x83, 0xC1)


# --------------------------------------------------------------------------- status codes

#: M02 Annex D pp. 101-102; 0x15, 0x16, 0x84 and 0xF1 from MU02 Annex C pp. 91-92.
STATUS_CODES = [
    ("OK", 0x00),
    ("NO_TRANSPONDER", 0x01),
    ("DATA_FALSE", 0x02),
    ("WRITE_ERROR", 0x03),
    ("ADDRESS_ERROR", 0x04),
    ("WRONG_TRANSPONDER_TYPE", 0x05),
    ("EEPROM_FAILURE", 0x10),
    ("PARAMETER_RANGE_ERROR", 0x11),
    ("READ_PROTECT", 0x15),
    ("WRITE_PROTECT", 0x16),
    ("FIRMWARE_ACTIVATION_REQUIRED", 0x17),
    ("UNKNOWN_COMMAND", 0x80),
    ("LENGTH_ERROR", 0x81),
    ("COMMAND_NOT_AVAILABLE", 0x82),
    ("RF_COMMUNICATION_ERROR", 0x83),
    ("RF_WARNING", 0x84),
    ("EPC_ERROR", 0x85),
    ("MORE_DATA", 0x94),
    ("ISO15693_ERROR", 0x95),
    ("HARDWARE_WARNING", 0xF1),
]


@pytest.mark.parametrize(("name", "code"), STATUS_CODES, ids=[n for n, _ in STATUS_CODES])
def test_each_status_code_is_the_manual_s_and_named_with_its_number(name: str, code: int) -> None:
    assert p.Status[name] == code
    assert p.status_name(code) == f"{name} ({code:#04x})"


def test_the_status_codes_are_exactly_those_of_the_manuals() -> None:
    assert {s.name: s.value for s in p.Status} == dict(STATUS_CODES)


@pytest.mark.parametrize("code", [0x06, 0x0F, 0x18, 0x42, 0x93, 0xFF])
def test_a_status_code_the_manuals_do_not_list_is_named_by_its_number_alone(code: int) -> None:
    assert p.status_name(code) == f"{code:#04x}"


# --------------------------------------------------------------------------- [0x65]

#: M02 Annex K p. 106, as printed.
ANNEX_K = {
    11: "ID ISC.DAT", 12: "ID ISC.UMUX", 13: "ID ISC.GPC", 20: "ID RW40.30-U",
    30: "ID ISC.M01", 31: "ID ISC.M02", 33: "ID ISC.M02M8", 40: "ID ISC.LR100",
    41: "ID ISC.LR200", 42: "ID ISC.LR2000", 43: "ID ISC.LR2500-B", 44: "ID ISC.LR2500-A",
    45: "ID ISC.LR1002", 50: "ID ISC.MU02", 54: "ID ISC.MRU102", 55: "ID ISC.MRU200",
    56: "ID ISC.MRU200-U", 60: "ID ISC.PRH101", 61: "ID ISC.PRH101-U (USB-Version)",
    62: "ID ISC.PRHD102", 63: "ID ISC.PRH102", 71: "ID ISC.PRH100–U (USB-Version)",
    72: "ID ISC.PRH100", 73: "ID ISC.MR100–U (USB-Version)", 74: "ID ISC.MR100 / .PR100",
    75: "ID ISC.MR200-A / -E", 76: "ID ISC.MR101-A", 77: "ID ISC.MR102", 78: "ID ISC.MR101-U",
    80: "ID CPR.M02", 81: "ID CPR.02", 82: "ID CPR40.30-Ux", 83: "ID CPR40.0x-Ax / -Cx",
    84: "ID CPR.M03 (586/#)", 85: "ID CPR.03 (584/#)", 86: "ID CPR30", 87: "ID CPR.52",
    88: "ID CPR.04-U", 92: "ID ISC.LRU1000", 93: "ID ISC.LRU2000", 94: "ID ISC.LRU3000",
    100: "ID MAX50",
}  # fmt: skip


def model_name(sw_type: int) -> str:
    """Annex K's name as tablectl spells it: no note in brackets, a plain hyphen, and type 33
    as the SDK names it (``FEDM_ISC.h``, ``FEDM_ISC_NAME_ISCM02_M8`` "ID ISC.M02.M8")."""
    if sw_type == 33:
        return "ID ISC.M02.M8"
    return re.sub(r" \(.*\)$", "", ANNEX_K[sw_type]).replace("–", "-")


@pytest.mark.parametrize("sw_type", range(256))
def test_every_sw_type_is_named_as_annex_k_names_it_or_by_its_number(sw_type: int) -> None:
    version = p.SoftwareVersion(0x0102, 0x00, 0x00, sw_type, 0x0008)
    expected = model_name(sw_type) if sw_type in ANNEX_K else f"reader type {sw_type}"
    assert version.reader_type == expected
    assert str(version) == f"{expected} firmware 01.02.00"


def test_a_software_version_answer_is_read_field_by_field() -> None:
    # M02 §6.4 p. 47: STATUS, SW-REV (bytes 5-6, MSB first, M02 p. 17), D-REV, HW-TYPE,
    # SW-TYPE, TR-TYPE (bytes 10-11). Every byte differs, so a field read from its neighbour's
    # place shows.
    answer = framed(0x0D, 0x01, 0x65, 0x00, 0x04, 0x03, 0x02, 0x81, 0x21, 0x02, 0x18)
    data = decode(answer, answer=True).data
    version = p.SoftwareVersion.decode(data)
    assert (version.sw_rev, version.d_rev, version.hw_type) == (0x0403, 0x02, 0x81)
    assert (version.sw_type, version.tr_type) == (0x21, 0x0218)
    assert version.encode() == data
    # SW-REV high, SW-REV low, D-REV, two decimal digits each, as the SDK writes a revision
    # (peripheral_devices/FedmIscPeripheralDevice.cpp: "%02d.%02d.%02d"; the feig-isc page §5.3).
    assert version.firmware == "04.03.02"
    assert p.SoftwareVersion(0x0A0B, 0x0C, 0, 33, 0x0008).firmware == "10.11.12"


@pytest.mark.parametrize("size", [0, 6, 8, 13])
def test_a_software_version_answer_of_other_than_7_bytes_is_refused(size: int) -> None:
    with pytest.raises(ProtocolError, match=f"^a software version answer of {size} bytes, not 7$"):
        p.SoftwareVersion.decode(bytes(range(1, size + 1)))


@given(st.binary(min_size=7, max_size=7))
def test_a_software_version_decodes_and_encodes_back_to_the_same_seven_bytes(data: bytes) -> None:
    version = p.SoftwareVersion.decode(data)
    assert version.encode() == data
    assert version.sw_rev == data[0] << 8 | data[1]
    assert version.tr_type == data[5] << 8 | data[6]


#: TR-TYPE bits: I-Code1 bit 0, ISO 15693 bit 3, ISO 18000-3M3 bit 9 (M02 §6.4 p. 47);
#: ISO 14443-A bit 4, ISO 14443-B bit 5 (CPR40 §5.4 p. 72).
TR_TYPE_BITS = [
    ("ICODE1", 0),
    ("ISO15693", 3),
    ("ISO14443A", 4),
    ("ISO14443B", 5),
    ("ISO18000_3M3", 9),
]


@pytest.mark.parametrize(("name", "bit"), TR_TYPE_BITS, ids=[n for n, _ in TR_TYPE_BITS])
def test_each_tr_type_bit_is_the_manual_s_and_reads_that_kind_alone(name: str, bit: int) -> None:
    support = p.TransponderSupport[name]
    assert support == 1 << bit
    tr_type = (1 << bit).to_bytes(2, "big")  # MSB first (M02 p. 17)
    version = p.SoftwareVersion.decode(bytes((0x01, 0x02, 0x00, 0x00, 0x21)) + tr_type)
    assert [s.name for s in p.TransponderSupport if version.reads(s)] == [name]


def test_a_tr_type_of_every_other_bit_reads_none_of_the_kinds() -> None:
    every_other = 0xFFFF & ~sum(1 << bit for _, bit in TR_TYPE_BITS)
    version = p.SoftwareVersion(0x0102, 0, 0, 33, every_other)
    assert not any(version.reads(s) for s in p.TransponderSupport)
    assert len(p.TransponderSupport) == len(TR_TYPE_BITS)


# --------------------------------------------------------------------------- reader control


def test_the_reader_control_requests_broadcast_unless_given_an_address() -> None:
    # M02 §6.1 p. 45: [0x52][0x00]; COM-ADR 255 reaches any reader (M02 p. 16).
    assert p.baud_rate_detection_request() == framed(0x06, 0xFF, 0x52, 0x00)
    # M02 §6.7 p. 52: RF 0x00, the field off; 0x01 on.
    assert p.rf_on_off_request(False, 1) == framed(0x06, 0x01, 0x6A, 0x00)
    assert p.rf_on_off_request(True) == framed(0x06, 0xFF, 0x6A, 0x01)


# --------------------------------------------------------------------------- inventory


def test_the_inventory_mode_bits_and_the_antenna_count_are_the_manual_s() -> None:
    # MORE is MODE bit 7 (M02 p. 57; SDK FEDM_ISC.h FEDM_ISC_ISO_MODE_MORE 0x80), ANT bit 4
    # (MU02 p. 76; FEDM_ISC_ISO_MODE_ANT 0x10); ANT_SEL is one byte (SDK FEDM_ISCReaderID.h,
    # FEDM_ISC_TMP_B0_REQ_ANT_SEL), a bit an antenna: eight.
    assert (p.MODE_MORE, p.MODE_ANT, p.MAX_ANTENNA) == (0x80, 0x10, 8)


@pytest.mark.parametrize(
    ("antennas", "ant_sel"),
    [
        ([], 0x00),
        ([1], 0x01),
        ([2], 0x02),
        ([8], 0x80),
        ([1, 8], 0x81),
        ([3, 3], 0x04),
        (range(1, 9), 0xFF),
        ([5, 2, 7], 0x52),
    ],
    ids=["none", "1", "2", "8", "1-and-8", "3-twice", "all-eight", "unsorted"],
)
def test_ant_sel_has_bit_n_minus_1_for_antenna_n(antennas: list[int], ant_sel: int) -> None:
    # MU02 p. 76: ANT_SEL bit 0 ANT1, bit 1 ANT2 …; the SDK's TagInventory takes it as the
    # "flag field with antennas".
    assert p.antenna_select(antennas) == ant_sel
    assert p.selected_antennas(ant_sel) == sorted(set(antennas))


@pytest.mark.parametrize("antenna", [0, 9, -1, 16])
def test_an_antenna_outside_1_to_8_is_refused(antenna: int) -> None:
    with pytest.raises(ProtocolError, match=f"^antenna {antenna} is not 1…8$"):
        p.antenna_select([1, antenna])


def test_bits_above_the_eighth_select_no_antenna() -> None:
    assert p.selected_antennas(0x100) == []
    assert p.selected_antennas(0x1FF) == list(range(1, 9))


@given(st.integers(0, 0xFF))
def test_ant_sel_round_trips_through_the_antennas_it_selects(ant_sel: int) -> None:
    antennas = p.selected_antennas(ant_sel)
    assert antennas == sorted(set(antennas))
    assert p.antenna_select(antennas) == ant_sel


def test_an_inventory_request_carries_mode_and_ant_sel_as_the_manuals_draw_them() -> None:
    # [0xB0][0x01][MODE][ANT_SEL] (M02 p. 57; MU02 p. 76).
    assert p.inventory_request([8], address=1) == framed(0x08, 0x01, 0xB0, 0x01, 0x10, 0x80)
    assert p.inventory_request([], more=True) == framed(0x08, 0xFF, 0xB0, 0x01, 0x90, 0x00)
    assert p.inventory_request(None) == framed(0x07, 0xFF, 0xB0, 0x01, 0x00)


def test_an_inventory_request_in_an_advanced_frame() -> None:
    # STX, ALENGTH (two bytes, MSB first), COM-ADR, CONTROL-BYTE … (MU02 pp. 16-17).
    built = p.inventory_request([1, 2], address=1, advanced=True)
    assert built == framed(0x02, 0x00, 0x0A, 0x01, 0xB0, 0x01, 0x10, 0x03)


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("block", "eeprom", "every", "cfg_adr"),
    [
        (0, False, False, 0x00),
        (1, False, False, 0x01),
        (5, False, False, 0x05),
        (63, False, False, 0x3F),
        (5, True, False, 0x85),
        (0, True, False, 0x80),
        (5, False, True, 0x45),
        (63, True, True, 0xFF),
        (0, True, True, 0xC0),
    ],
)
def test_cfg_adr_has_the_block_in_bits_0_to_5_mode_in_bit_6_and_loc_in_bit_7(
    block: int, eeprom: bool, every: bool, cfg_adr: int
) -> None:
    # M02 §4 p. 19 and §5.4 p. 44: bits 0-5 CFGn, bit 6 MODE (all blocks), bit 7 LOC (EEPROM).
    assert p.config_address(block, eeprom=eeprom, every=every) == cfg_adr
    assert (p.CFG_EEPROM, p.CFG_ALL) == (0x80, 0x40)


def test_cfg_adr_is_the_block_alone_unless_asked_for_loc_or_mode() -> None:
    assert p.config_address(5) == 0x05


@pytest.mark.parametrize("block", [-1, 64, 0x80, 0x81])
def test_a_config_block_outside_0_to_63_is_refused(block: int) -> None:
    # Six bits of CFG-ADR hold CFGn (M02 §4 p. 19): 0…63.
    with pytest.raises(ProtocolError, match=f"^configuration block {block} is not 0…63$"):
        p.config_address(block)
    with pytest.raises(ProtocolError, match=r"is not 0…63$"):
        p.read_config_request(block)


def test_a_write_configuration_request_is_cfg_adr_and_the_14_byte_record() -> None:
    record = bytes.fromhex("01000a010000001e000000000000")
    # M02 §5.2 p. 42; the feig-isc page's vector (COM-ADR 0, LOC 1).
    built = p.write_config_request(1, record, eeprom=True, address=0)
    assert built == vector("write configuration request, CFG1 to RAM and EEPROM")
    assert p.write_config_request(4, record) == framed(0x14, 0xFF, 0x81, 0x04, *record)
    assert p.CFG_RECORD == 14  # M02 §5.1 p. 41: "blocks of 14 bytes each"


@pytest.mark.parametrize("size", [0, 13, 15, 16])
def test_a_configuration_record_of_other_than_14_bytes_is_refused(size: int) -> None:
    with pytest.raises(ProtocolError, match=f"^a configuration block has 14 bytes, not {size}$"):
        p.write_config_request(1, bytes(size))


def test_a_config_block_of_63_is_read_and_written_and_one_of_64_is_refused() -> None:
    # From RAM unless asked for the EEPROM: LOC 0 (M02 §5.1 p. 41).
    assert p.read_config_request(63) == framed(0x06, 0xFF, 0x80, 0x3F)
    assert p.write_config_request(63, bytes(14), address=1)[3] == 0x3F
    with pytest.raises(ProtocolError, match=r"is not 0…63$"):
        p.write_config_request(64, bytes(14))


# --------------------------------------------------------------------------- diagnostic


def test_the_diagnostic_modes_ask_for_the_vectors_records() -> None:
    # Modes 0x01, 0x03 and 0x05 as the SDK's Set_0x6E_ReaderDiagnosticData switches on them
    # (FEDM_ISCReader.cpp); 0x04 from MU02 §9.8 p. 69.
    modes = [
        (p.DIAG_GENERAL, "diagnostic request, mode 0x01"),
        (p.DIAG_MULTIPLEXER, "diagnostic request, mode 0x03"),
        (p.DIAG_INTERNAL, "diagnostic request, mode 0x04"),
        (p.DIAG_MULTIPLEXER_IMPEDANCE, "diagnostic request, mode 0x05"),
    ]
    for mode, name in modes:
        assert p.diagnostic_request(mode, 1) == vector(name)
    assert p.diagnostic_request(0x01) == framed(0x06, 0xFF, 0x6E, 0x01)


#: FLAGS A and FLAGS B of mode 0x01, bit by bit, as the SDK's FEDM_ISCReaderDiagnostic.h
#: names them (bRfHardware … bTempAlarm in ucFlagsA, bMuxStatus, bDatStatus, bDCAntError in
#: ucFlagsB), with a word the SDK's comment for the bit uses.
GENERAL_FLAGS = [
    ("RF_HARDWARE", 0, 0, "hardware"),
    ("RF_NOISE", 0, 1, "noise"),
    ("IMPEDANCE_BELOW_50", 0, 2, "below 50"),
    ("IMPEDANCE_ABOVE_50", 0, 3, "above 50"),
    ("POWER_AMPLIFIER", 0, 4, "amplifier"),
    ("TEMPERATURE_WARNING", 0, 5, "temperature warning"),
    ("SYNC_TIMEOUT", 0, 6, "timeout"),
    ("TEMPERATURE_ALARM", 0, 7, "temperature alarm"),
    ("MULTIPLEXER", 1, 0, "multiplexer"),
    ("ANTENNA_TUNER", 1, 1, "tuner"),
    ("ANTENNA_DC_POWER", 1, 2, "dc power"),
]


@pytest.mark.parametrize(
    ("name", "byte", "bit", "word"), GENERAL_FLAGS, ids=[n for n, *_ in GENERAL_FLAGS]
)
def test_each_general_flag_is_its_bit_and_names_that_one_problem(
    name: str, byte: int, bit: int, word: str
) -> None:
    data = bytearray(2)
    data[byte] = 1 << bit
    general = p.GeneralDiagnostic.decode(bytes(data))
    assert general.flags == p.GeneralFlag[name]  # FLAGS A the low byte, B the high
    assert p.GeneralFlag[name] == 1 << (8 * byte + bit)
    (problem,) = general.problems()
    assert word in problem.lower()


def test_no_flag_is_no_problem_and_every_flag_is_every_problem_in_bit_order() -> None:
    assert p.GeneralDiagnostic.decode(b"\x00\x00").problems() == []
    every = p.GeneralDiagnostic.decode(b"\xff\x07").problems()
    assert [
        next(word for *_, word in GENERAL_FLAGS if word in problem.lower()) for problem in every
    ] == [word for *_, word in GENERAL_FLAGS]
    assert p.GeneralDiagnostic.decode(b"\xff\xf8").problems() == every[:8]  # B's bits 3-7: unused


def test_a_general_diagnostic_answer_is_flags_a_then_flags_b() -> None:
    # The SDK copies the answer's first two data bytes into ucFlagsA, ucFlagsB.
    answer = framed(0x08, 0x01, 0x6E, 0x00, 0x82, 0x04)
    general = p.GeneralDiagnostic.decode(decode(answer, answer=True).data)
    assert (general.flags_a, general.flags_b, general.flags) == (0x82, 0x04, 0x0482)
    assert general.encode() == b"\x82\x04"


def test_a_general_diagnostic_answer_of_two_bytes_or_more_is_read_and_of_fewer_refused() -> None:
    # The SDK reads 2 bytes of a record that may be longer (it steps 30 bytes a record).
    padded = p.GeneralDiagnostic.decode(bytes((0x01, 0x02)) + bytes(range(3, 31)))
    assert (padded.flags_a, padded.flags_b) == (0x01, 0x02)
    assert p.GeneralDiagnostic.decode(b"\x01\x02\x03").flags == 0x0201
    for size in (0, 1):
        with pytest.raises(ProtocolError, match=f"^a general diagnostic answer of {size} bytes"):
            p.GeneralDiagnostic.decode(bytes(range(1, size + 1)))


@given(st.integers(0, 0xFF), st.integers(0, 0xFF))
def test_a_general_diagnostic_round_trips_with_a_in_the_low_byte(a: int, b: int) -> None:
    general = p.GeneralDiagnostic.decode(bytes((a, b)))
    assert general.encode() == bytes((a, b))
    assert (general.flags & 0xFF, general.flags >> 8) == (a, b)
    assert len(general.problems()) == sum(bool(general.flags & f) for f in p.GeneralFlag)


def test_the_five_channel_states_are_distinct_and_named_for_the_fault_report() -> None:
    assert [s.name for s in p.ChannelState] == ["OK", "OPEN", "SHORT", "POWER", "FAULT"]


def test_a_multiplexer_status_byte_other_than_zero_is_a_fault_on_its_channel() -> None:
    # SDK: ucMuxStatusCh1 … ucMuxStatusCh8, a byte a channel in order; it names no values.
    answer = vector("diagnostic answer, mode 0x03, channel 2 open, channel 4 short")
    faults = p.decode_multiplexer_status(decode(answer, answer=True).data)
    assert {n: s.name for n, s in faults.items()} == {2: "FAULT", 4: "FAULT"}
    ends = p.decode_multiplexer_status(bytes((0x80, 0, 0, 0, 0, 0, 0, 0x01)))
    assert sorted(ends) == [1, 8]
    assert p.decode_multiplexer_status(bytes(8)) == {}


def test_a_multiplexer_status_answer_of_8_bytes_or_more_is_read_and_of_7_refused() -> None:
    # The SDK copies 8 bytes of a record it steps 30 bytes at a time: what follows is no channel.
    assert p.decode_multiplexer_status(bytes(8) + b"\xff") == {}
    assert list(p.decode_multiplexer_status(bytes(7) + b"\x01" + bytes(22))) == [8]
    with pytest.raises(ProtocolError, match=r"^a multiplexer status answer of 7 bytes, not 8$"):
        p.decode_multiplexer_status(b"\x01" * 7)


@pytest.mark.parametrize("channel", range(1, 9))
def test_each_impedance_field_names_its_state_on_channel_n_at_bit_n_minus_1(channel: int) -> None:
    # SDK: CNTRL_OUT1 (power), PHASE_LT50_OUT1 (below 50 ohm), PHASE_GT50_OUT1 (above), in that
    # order, bit 0 channel 1 … bit 7 channel 8.
    bit = 1 << (channel - 1)
    for field, state in ((0, "POWER"), (1, "SHORT"), (2, "OPEN")):
        data = bytearray(3)
        data[field] = bit
        impedance = p.MultiplexerImpedance.decode(bytes(data))
        assert {n: s.name for n, s in impedance.faults().items()} == {channel: state}
        assert impedance.state(channel).name == state
        assert impedance.encode() == bytes(data)


def test_above_50_ohm_outranks_below_and_below_outranks_power() -> None:
    # The order the feig-isc page (§9) gives: open, then short, then power.
    both = p.MultiplexerImpedance.decode(bytes((0x01, 0x03, 0x07)))
    assert both.faults() == {
        1: p.ChannelState.OPEN,
        2: p.ChannelState.OPEN,
        3: p.ChannelState.OPEN,
    }
    assert p.MultiplexerImpedance(0x0F, 0x0C, 0x08).faults() == {
        1: p.ChannelState.POWER,
        2: p.ChannelState.POWER,
        3: p.ChannelState.SHORT,
        4: p.ChannelState.OPEN,
    }
    assert p.MultiplexerImpedance(0, 0, 0).faults() == {}


def test_a_multiplexer_impedance_answer_is_power_then_below_then_above() -> None:
    answer = vector("diagnostic answer, mode 0x05, channel 2 open, channel 4 short")
    data = decode(answer, answer=True).data
    impedance = p.MultiplexerImpedance.decode(data)
    assert (impedance.power, impedance.below_50, impedance.above_50) == (0x00, 0x08, 0x02)
    assert impedance.encode() == data
    distinct = p.MultiplexerImpedance.decode(b"\x11\x22\x44")
    assert (distinct.power, distinct.below_50, distinct.above_50) == (0x11, 0x22, 0x44)


def test_a_multiplexer_impedance_answer_of_3_bytes_or_more_is_read_and_of_2_refused() -> None:
    # An LRU2000 or LRU3000 sends 12 bytes, four outputs (SDK Set_0x6E_ReaderDiagnosticData):
    # the first three are output 1's.
    twelve = p.MultiplexerImpedance.decode(bytes((0x01, 0x02, 0x04)) + b"\xff" * 9)
    assert (twelve.power, twelve.below_50, twelve.above_50) == (0x01, 0x02, 0x04)
    for size in (0, 2):
        with pytest.raises(ProtocolError, match=f"^a multiplexer impedance answer of {size} bytes"):
            p.MultiplexerImpedance.decode(b"\x01" * size)


def test_a_multiplexer_has_eight_channels_and_a_bit_above_the_eighth_is_none() -> None:
    # Eight outputs, as ANT_SEL has eight bits (SDK FEDM_ISCReaderID.h) and mode 0x05's fields
    # eight channels (SDK bMuxCh1 … bMuxCh8).
    wide = p.MultiplexerImpedance(power=0x3FF, below_50=0, above_50=0)
    assert wide.faults() == dict.fromkeys(range(1, 9), p.ChannelState.POWER)
    assert p.MultiplexerImpedance(power=0x300, below_50=0, above_50=0).faults() == {}


@given(st.binary(min_size=3, max_size=3))
def test_a_multiplexer_impedance_round_trips_and_names_every_channel_with_a_bit(
    data: bytes,
) -> None:
    impedance = p.MultiplexerImpedance.decode(data)
    assert impedance.encode() == data
    either = data[0] | data[1] | data[2]
    assert sorted(impedance.faults()) == [n for n in range(1, 9) if either >> (n - 1) & 1]


@pytest.mark.parametrize(
    ("builder", "placed", "flags"),
    [
        (p.inventory_request, ([1],), ["more", "address", "advanced"]),
        (p.config_address, (1,), ["eeprom", "every"]),
        (p.read_config_request, (1,), ["eeprom", "address"]),
        (p.write_config_request, (1, bytes(14)), ["eeprom", "address"]),
    ],
    ids=["inventory_request", "config_address", "read_config_request", "write_config_request"],
)
def test_the_builders_options_are_named_never_placed(
    builder: Callable[..., object], placed: tuple[object, ...], flags: list[str]
) -> None:
    # A bare True in the wrong place would read the EEPROM or ask for MORE unasked.
    parameters = inspect.signature(builder).parameters
    assert [n for n, a in parameters.items() if a.kind is a.KEYWORD_ONLY] == flags
    builder(*placed)
    with pytest.raises(TypeError, match="positional argument"):
        builder(*placed, True)


def test_the_answers_are_values_that_cannot_be_changed() -> None:
    version = p.SoftwareVersion(0x0102, 0, 0, 33, 0x0008)
    general = p.GeneralDiagnostic(0, 1)
    impedance = p.MultiplexerImpedance(0, 0, 2)
    with pytest.raises(AttributeError):
        version.sw_type = 31  # type: ignore[misc]
    with pytest.raises(AttributeError):
        general.flags_b = 0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        impedance.above_50 = 0  # type: ignore[misc]
    assert {version, p.SoftwareVersion(0x0102, 0, 0, 33, 0x0008)} == {version}
