"""The PN532 commands the reader uses: request data out, decoded response parameters in.

Request helpers return the frame data (``PD0`` = command code, then the input parameters);
decoders take the response parameters (after the ``code + 1`` byte) and raise
:class:`ResponseError` when they do not have the documented shape (UM0701-02 chapter 7).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from controller.uids import uid_from_bytes
from drivers.errors import DeviceError

WAKE_UP: Final = b"\x55\x55" + bytes(14)
"""HSU wake-up: ``0x55`` wakes the chip, the long preamble gives it time to start its clock."""


class Command(IntEnum):
    """Command codes (``PD0`` of a host frame); the response code is one more."""

    DIAGNOSE = 0x00
    GET_FIRMWARE_VERSION = 0x02
    GET_GENERAL_STATUS = 0x04
    READ_REGISTER = 0x06
    WRITE_REGISTER = 0x08
    SET_PARAMETERS = 0x12
    SAM_CONFIGURATION = 0x14
    POWER_DOWN = 0x16
    RF_CONFIGURATION = 0x32
    IN_DATA_EXCHANGE = 0x40
    IN_DESELECT = 0x44
    IN_LIST_PASSIVE_TARGET = 0x4A
    IN_RELEASE = 0x52
    IN_AUTO_POLL = 0x60


class Modulation(IntEnum):
    """InListPassiveTarget's BrTy: baud rate and card type."""

    TYPE_A_106 = 0x00
    FELICA_212 = 0x01
    FELICA_424 = 0x02
    TYPE_B_106 = 0x03
    JEWEL_106 = 0x04


class SamMode(IntEnum):
    """SAMConfiguration modes; NORMAL (no SAM) also takes the chip out of LowVbat mode."""

    NORMAL = 0x01
    VIRTUAL_CARD = 0x02
    WIRED_CARD = 0x03
    DUAL_CARD = 0x04


#: GetGeneralStatus error codes that mean the RF front end itself is in trouble.
RF_HARDWARE_ERRORS: Final = {
    0x0A: "RF field not switched on in time",
    0x0D: "temperature error: antenna drivers switched off",
    0x2D: "over-current: antenna drivers switched off",
}


class ResponseError(DeviceError, ValueError):
    """A response whose parameters do not decode (a failed exchange, like a timeout)."""


def command_name(code: int) -> str:
    """``InListPassiveTarget (0x4a)`` style name for messages."""
    try:
        name = "".join(part.title() for part in Command(code).name.split("_"))
    except ValueError:
        name = "command"
    return f"{name} (0x{code:02x})"


def request(command: Command, params: bytes = b"") -> bytes:
    """Frame data of a command."""
    return bytes((command,)) + params


def response_params(command: int, data: bytes) -> bytes:
    """Check that response data answers ``command``; return its parameters."""
    if not data or data[0] != (command + 1) & 0xFF:
        got = f"0x{data[0]:02x}" if data else "nothing"
        raise ResponseError(f"expected the answer to {command_name(command)}, got {got}")
    return data[1:]


# --------------------------------------------------------------------------- requests


def sam_configuration(mode: SamMode = SamMode.NORMAL) -> bytes:
    """Normal mode: no secure access module, and out of LowVbat into normal power mode."""
    return request(Command.SAM_CONFIGURATION, bytes((mode,)))


def get_firmware_version() -> bytes:
    """Ask for IC, version, revision and supported protocols."""
    return request(Command.GET_FIRMWARE_VERSION)


def get_general_status() -> bytes:
    """Ask for the last error, the external field and the initialised targets."""
    return request(Command.GET_GENERAL_STATUS)


def rf_field(on: bool) -> bytes:
    """RFConfiguration item 0x01: switch the RF field on or off."""
    return request(Command.RF_CONFIGURATION, bytes((0x01, 0x01 if on else 0x00)))


def rf_max_retries(atr: int = 0xFF, psl: int = 0x01, passive_activation: int = 0x02) -> bytes:
    """RFConfiguration item 0x05: retries; ``passive_activation`` 0xFF would wait for ever."""
    return request(Command.RF_CONFIGURATION, bytes((0x05, atr, psl, passive_activation)))


def in_list_passive_target(
    max_targets: int = 2, modulation: Modulation = Modulation.TYPE_A_106
) -> bytes:
    """Activate up to ``max_targets`` (1 or 2) passive targets."""
    if max_targets not in (1, 2):
        raise ValueError("the PN532 activates one or two targets at a time")
    return request(Command.IN_LIST_PASSIVE_TARGET, bytes((max_targets, modulation)))


def in_deselect(target: int = 0) -> bytes:
    """Deselect (halt) a target, or all with 0, keeping them known to the chip."""
    return request(Command.IN_DESELECT, bytes((target,)))


def in_release(target: int = 0) -> bytes:
    """Release a target, or all with 0."""
    return request(Command.IN_RELEASE, bytes((target,)))


# --------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class FirmwareVersion:
    """GetFirmwareVersion: ``IC`` is 0x32 for a PN532."""

    ic: int
    version: int
    revision: int
    support: int

    def __str__(self) -> str:
        return f"PN5{self.ic:02x} v{self.version}.{self.revision}"


def decode_firmware_version(params: bytes) -> FirmwareVersion:
    """Decode GetFirmwareVersion's four bytes."""
    if len(params) != 4:
        raise ResponseError(f"GetFirmwareVersion answered {len(params)} bytes, expected 4")
    return FirmwareVersion(*params)


@dataclass(frozen=True, slots=True)
class GeneralStatus:
    """GetGeneralStatus: last error, external field present, number of targets."""

    error: int
    external_field: bool
    targets: int

    @property
    def rf_fault(self) -> str | None:
        """A description when the error code says the RF front end failed."""
        return RF_HARDWARE_ERRORS.get(self.error)


def decode_general_status(params: bytes) -> GeneralStatus:
    """Decode GetGeneralStatus (the per-target details and SAM status are not needed)."""
    if len(params) < 3:
        raise ResponseError(f"GetGeneralStatus answered {len(params)} bytes, expected 3 or more")
    return GeneralStatus(params[0], bool(params[1]), params[2])


@dataclass(frozen=True, slots=True)
class TargetA:
    """One ISO/IEC 14443 type A target from InListPassiveTarget at 106 kbps."""

    number: int
    sens_res: bytes
    sel_res: int
    nfcid: bytes
    ats: bytes = b""

    @property
    def uid(self) -> str:
        """The canonical UID text."""
        return uid_from_bytes(self.nfcid)


def decode_targets_a(params: bytes) -> tuple[TargetA, ...]:
    """Decode InListPassiveTarget's answer at 106 kbps type A: NbTg, then each target."""
    if not params:
        raise ResponseError("InListPassiveTarget answered no parameters")
    count, rest, targets = params[0], params[1:], []
    if count > 2:
        raise ResponseError(f"InListPassiveTarget reported {count} targets (at most 2)")
    for _ in range(count):
        if len(rest) < 5 or len(rest) < 5 + rest[4]:
            raise ResponseError("InListPassiveTarget target data is truncated")
        size = rest[4]
        number, sens_res, sel_res, nfcid = rest[0], rest[1:3], rest[3], rest[5 : 5 + size]
        rest = rest[5 + size :]
        ats = b""
        if sel_res & 0x20:  # ISO/IEC 14443-4 target: its ATS follows, led by a length byte
            if not rest or not 1 <= rest[0] <= len(rest):
                raise ResponseError(f"target {number} has a truncated ATS")
            ats, rest = rest[1 : rest[0]], rest[rest[0] :]
        if len(nfcid) not in (4, 7, 10):
            raise ResponseError(f"target {number} has a {len(nfcid)}-byte NFCID1")
        targets.append(TargetA(number, bytes(sens_res), sel_res, bytes(nfcid), bytes(ats)))
    if rest:
        raise ResponseError(f"InListPassiveTarget answer has {len(rest)} unexpected bytes")
    return tuple(targets)


def decode_status(command: int, params: bytes) -> int:
    """The status byte of commands that answer only a status (InDeselect, InRelease…)."""
    if len(params) != 1:
        raise ResponseError(f"{command_name(command)} answered {len(params)} bytes, expected 1")
    return params[0] & 0x3F
