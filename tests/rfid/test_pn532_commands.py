"""Host-side PN532 command encoding and response decoding (UM0701-02 chapter 7)."""

from __future__ import annotations

import pytest

from drivers.rfid.pn532 import commands as cmd


def test_in_list_passive_target_answer_from_the_user_manual() -> None:
    # UM0701-02 InListPassiveTarget example: one MIFARE Classic 1K at 106 kbps type A.
    (target,) = cmd.decode_targets_a(bytes.fromhex("0101000408044a3b2c1d"))
    assert target == cmd.TargetA(1, b"\x00\x04", 0x08, bytes.fromhex("4a3b2c1d"))
    assert target.uid == "4a3b2c1d"


def test_two_targets_with_seven_byte_uids() -> None:
    answer = bytes.fromhex("02" + "01004400" + "0704a1b2c3d4e580" + "02004400" + "0704112233445566")
    assert [t.uid for t in cmd.decode_targets_a(answer)] == ["04a1b2c3d4e580", "04112233445566"]


def test_iso14443_4_target_carries_its_ats() -> None:
    answer = bytes.fromhex("01" + "01004420" + "0704a1b2c3d4e580" + "0575778102")
    (target,) = cmd.decode_targets_a(answer)
    assert target.ats == bytes.fromhex("75778102")


def test_no_target() -> None:
    assert cmd.decode_targets_a(b"\x00") == ()


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("", "no parameters"),
        ("03", "3 targets"),
        ("010100440007", "truncated"),
        ("0101004400070102", "truncated"),
        ("01010044000504a1b2c3d4", "5-byte"),
        ("0101000408044a3b2c1dff", "unexpected"),
        ("0101004420040102030409", "ATS"),
    ],
)
def test_malformed_target_lists_are_refused(answer: str, message: str) -> None:
    with pytest.raises(cmd.ResponseError, match=message):
        cmd.decode_targets_a(bytes.fromhex(answer))


def test_firmware_version() -> None:
    firmware = cmd.decode_firmware_version(bytes.fromhex("32010607"))
    assert (firmware.ic, firmware.version, firmware.revision) == (0x32, 1, 6)
    assert str(firmware) == "PN532 v1.6"
    with pytest.raises(cmd.ResponseError, match="expected 4"):
        cmd.decode_firmware_version(b"\x32\x01")


def test_general_status_flags_rf_hardware_faults() -> None:
    assert cmd.decode_general_status(bytes.fromhex("00000000")).rf_fault is None
    overcurrent = cmd.decode_general_status(bytes.fromhex("2d000000"))
    assert overcurrent.rf_fault is not None
    assert "over-current" in overcurrent.rf_fault
    with pytest.raises(cmd.ResponseError):
        cmd.decode_general_status(b"\x00")


def test_response_code_must_answer_the_command() -> None:
    assert cmd.response_params(0x4A, bytes.fromhex("4b00")) == b"\x00"
    with pytest.raises(cmd.ResponseError, match=r"InListPassiveTarget \(0x4a\), got 0x03"):
        cmd.response_params(0x4A, bytes.fromhex("0332010607"))


def test_request_builders() -> None:
    assert cmd.sam_configuration() == b"\x14\x01"
    assert cmd.get_firmware_version() == b"\x02"
    assert cmd.in_list_passive_target() == b"\x4a\x02\x00"
    assert cmd.rf_field(on=False) == b"\x32\x01\x00"
    assert cmd.rf_max_retries(passive_activation=3) == b"\x32\x05\xff\x01\x03"
    assert cmd.in_deselect() == b"\x44\x00"
    assert cmd.in_release(1) == b"\x52\x01"
    assert cmd.WAKE_UP.startswith(b"\x55\x55")
    assert not cmd.WAKE_UP[2:].strip(b"\x00")
    with pytest.raises(ValueError, match="one or two"):
        cmd.in_list_passive_target(3)
    assert cmd.decode_status(cmd.Command.IN_DESELECT, b"\x27") == 0x27
    with pytest.raises(cmd.ResponseError, match="expected 1"):
        cmd.decode_status(cmd.Command.IN_RELEASE, b"")
