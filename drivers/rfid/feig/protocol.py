"""The ID ISC commands ``feig-isc`` uses: requests, status codes and the answers' contents.

Every request and answer is a frame of :mod:`drivers.rfid.feig.frames`; an inventory's data sets
are :mod:`drivers.rfid.feig.datasets`; the configuration blocks are
:mod:`drivers.rfid.feig.setup`. Where each byte comes from is in the docstrings below and, with
worked examples, in ``docs/protocols/feig-isc.md``. "M02" is FEIG's manual "ID ISC.M02-B"
(H21010-1e-ID-B), "MU02" the manual "ID ISC.MU02.02" (H90701-3e-ID-B), "CPR40" the manual
"ID CPR40.xx", "the SDK" FEIG's fedm-classlib 04.06.10. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar, Final

from drivers.rfid.feig.frames import BROADCAST, ProtocolError, encode_request

# --------------------------------------------------------------------------- control bytes
# M02 Annex E p. 104; [0x6E] from MU02 §9.8 p. 69 and the SDK.

CMD_BAUD_RATE_DETECTION: Final = 0x52
CMD_CPU_RESET: Final = 0x63
CMD_SOFTWARE_VERSION: Final = 0x65
CMD_RF_RESET: Final = 0x69
CMD_RF_ON_OFF: Final = 0x6A
CMD_DIAGNOSTIC: Final = 0x6E
CMD_SET_OUTPUT: Final = 0x71
CMD_READ_CONFIG: Final = 0x80
CMD_WRITE_CONFIG: Final = 0x81
CMD_SAVE_CONFIG: Final = 0x82
CMD_DEFAULT_CONFIG: Final = 0x83
CMD_ISO_HOST: Final = 0xB0
ISO_INVENTORY: Final = 0x01

MODE_MORE: Final = 0x80
"""Inventory MODE bit 7: the next data sets of the inventory already taken (M02 p. 57; the
SDK's ``FEDM_ISC_ISO_MODE_MORE``)."""
MODE_ANT: Final = 0x10
"""Inventory MODE bit 4: ANT_SEL follows and the data sets carry antenna information (MU02
p. 76; the SDK's ``FEDM_ISC_ISO_MODE_ANT``)."""
MAX_ANTENNA: Final = 8
"""ANT_SEL is one byte, a bit an antenna (MU02 p. 76; the SDK's ``FEDM_ISC_TMP_B0_REQ_ANT_SEL``):
antennas 1…8, as many as an ID ISC.M02.M8's multiplexer has."""


class Status(IntEnum):
    """The STATUS byte of an answer (M02 Annex D pp. 101-102; MU02 Annex C pp. 91-92)."""

    OK = 0x00
    NO_TRANSPONDER = 0x01
    DATA_FALSE = 0x02
    WRITE_ERROR = 0x03
    ADDRESS_ERROR = 0x04
    WRONG_TRANSPONDER_TYPE = 0x05
    EEPROM_FAILURE = 0x10
    PARAMETER_RANGE_ERROR = 0x11
    READ_PROTECT = 0x15
    WRITE_PROTECT = 0x16
    FIRMWARE_ACTIVATION_REQUIRED = 0x17
    UNKNOWN_COMMAND = 0x80
    LENGTH_ERROR = 0x81
    COMMAND_NOT_AVAILABLE = 0x82
    RF_COMMUNICATION_ERROR = 0x83
    RF_WARNING = 0x84
    EPC_ERROR = 0x85
    MORE_DATA = 0x94
    ISO15693_ERROR = 0x95
    HARDWARE_WARNING = 0xF1


def status_name(code: int) -> str:
    """``MORE_DATA (0x94)``; the bare number for a code FEIG's manuals do not list."""
    try:
        return f"{Status(code).name} (0x{code:02x})"
    except ValueError:
        return f"0x{code:02x}"


#: Reader types, the SW-TYPE of ``[0x65]`` (M02 Annex K p. 106).
READER_TYPES: Final = {
    11: "ID ISC.DAT", 12: "ID ISC.UMUX", 13: "ID ISC.GPC", 20: "ID RW40.30-U",
    30: "ID ISC.M01", 31: "ID ISC.M02", 33: "ID ISC.M02.M8", 40: "ID ISC.LR100",
    41: "ID ISC.LR200", 42: "ID ISC.LR2000", 43: "ID ISC.LR2500-B", 44: "ID ISC.LR2500-A",
    45: "ID ISC.LR1002", 50: "ID ISC.MU02", 54: "ID ISC.MRU102", 55: "ID ISC.MRU200",
    56: "ID ISC.MRU200-U", 60: "ID ISC.PRH101", 61: "ID ISC.PRH101-U", 62: "ID ISC.PRHD102",
    63: "ID ISC.PRH102", 71: "ID ISC.PRH100-U", 72: "ID ISC.PRH100", 73: "ID ISC.MR100-U",
    74: "ID ISC.MR100 / .PR100", 75: "ID ISC.MR200-A / -E", 76: "ID ISC.MR101-A",
    77: "ID ISC.MR102", 78: "ID ISC.MR101-U", 80: "ID CPR.M02", 81: "ID CPR.02",
    82: "ID CPR40.30-Ux", 83: "ID CPR40.0x-Ax / -Cx", 84: "ID CPR.M03", 85: "ID CPR.03",
    86: "ID CPR30", 87: "ID CPR.52", 88: "ID CPR.04-U", 92: "ID ISC.LRU1000",
    93: "ID ISC.LRU2000", 94: "ID ISC.LRU3000", 100: "ID MAX50",
}  # fmt: skip


class TransponderSupport(IntEnum):
    """Bits of the ``[0x65]`` TR-TYPE field: the transponders the firmware reads (M02 §6.4
    p. 47; bits 4 and 5 from CPR40 §5.4 p. 72)."""

    ICODE1 = 1 << 0
    ISO15693 = 1 << 3
    ISO14443A = 1 << 4
    ISO14443B = 1 << 5
    ISO18000_3M3 = 1 << 9


# --------------------------------------------------------------------------- inventory


def antenna_select(antennas: Iterable[int]) -> int:
    """ANT_SEL for these antennas: bit n-1 for antenna n."""
    mask = 0
    for antenna in antennas:
        if not 1 <= antenna <= MAX_ANTENNA:
            raise ProtocolError(f"antenna {antenna} is not 1…{MAX_ANTENNA}")
        mask |= 1 << (antenna - 1)
    return mask


def selected_antennas(mask: int) -> list[int]:
    """The antennas an ANT_SEL selects, ascending."""
    return [bit + 1 for bit in range(MAX_ANTENNA) if mask >> bit & 1]


def inventory_request(
    antennas: Iterable[int] | None,
    *,
    more: bool = False,
    address: int = BROADCAST,
    advanced: bool = False,
) -> bytes:
    """``[0xB0][0x01][MODE]`` and, with ``antennas``, ``[ANT_SEL]`` (M02 p. 57, MU02 p. 76).

    ``antennas`` None is the plain inventory: no ANT_SEL, data sets without antenna
    information. ``more`` asks for the next page of the inventory already taken: the same
    request with MODE bit MORE set (the SDK's ``TagInventory``).
    """
    mode = MODE_MORE if more else 0
    data = bytes((ISO_INVENTORY,))
    if antennas is None:
        data += bytes((mode,))
    else:
        data += bytes((mode | MODE_ANT, antenna_select(antennas)))
    return encode_request(CMD_ISO_HOST, data, address, advanced=advanced)


# --------------------------------------------------------------------------- reader control


def baud_rate_detection_request(address: int = BROADCAST) -> bytes:
    """``[0x52][0x00]``: answered only at the reader's own baud rate and parity (M02 §6.1
    p. 45); the answer is ``[0x52]`` with STATUS 0x00 and no data."""
    return encode_request(CMD_BAUD_RATE_DETECTION, b"\x00", address)


def rf_on_off_request(on: bool, address: int = BROADCAST) -> bytes:
    """``[0x6A][RF]``: the reader's RF field on (0x01) or off (0x00) (M02 §6.7 p. 52)."""
    return encode_request(CMD_RF_ON_OFF, b"\x01" if on else b"\x00", address)


@dataclass(frozen=True, slots=True)
class SoftwareVersion:
    """The answer to ``[0x65]`` (M02 §6.4 p. 47): SW-REV, D-REV, HW-TYPE, SW-TYPE, TR-TYPE."""

    sw_rev: int
    d_rev: int
    hw_type: int
    sw_type: int
    tr_type: int

    SIZE: ClassVar[int] = 7

    def encode(self) -> bytes:
        """The answer's 7 data bytes (the two-byte fields most significant byte first)."""
        return (
            self.sw_rev.to_bytes(2, "big")
            + bytes((self.d_rev, self.hw_type, self.sw_type))
            + self.tr_type.to_bytes(2, "big")
        )

    @classmethod
    def decode(cls, data: bytes) -> SoftwareVersion:
        """Read the answer's data."""
        if len(data) != cls.SIZE:
            raise ProtocolError(f"a software version answer of {len(data)} bytes, not 7")
        return cls(int.from_bytes(data[0:2], "big"), data[2], data[3], data[4],
                   int.from_bytes(data[5:7], "big"))  # fmt: skip

    @property
    def reader_type(self) -> str:
        """The model's name by SW-TYPE, or the number when Annex K does not list it."""
        return READER_TYPES.get(self.sw_type, f"reader type {self.sw_type}")

    @property
    def firmware(self) -> str:
        """``04.02.01``: SW-REV's two bytes and D-REV."""
        return f"{self.sw_rev >> 8:02d}.{self.sw_rev & 0xFF:02d}.{self.d_rev:02d}"

    def reads(self, support: TransponderSupport) -> bool:
        """Whether the firmware reads this kind of transponder."""
        return bool(self.tr_type & support)

    def __str__(self) -> str:
        return f"{self.reader_type} firmware {self.firmware}"


# --------------------------------------------------------------------------- configuration

CFG_EEPROM: Final = 0x80
"""CFG-ADR bit 7, LOC: the EEPROM (and the RAM) instead of the RAM alone (M02 §5.1 p. 41)."""
CFG_ALL: Final = 0x40
"""CFG-ADR bit 6, MODE: every block ([0x82], [0x83]; M02 §5.3 p. 43)."""
CFG_RECORD: Final = 14
"""A configuration block's parameter bytes (M02 §4 p. 19)."""


def config_address(block: int, *, eeprom: bool = False, every: bool = False) -> int:
    """CFG-ADR: the block (0…63), LOC and MODE."""
    if not 0 <= block <= 0x3F:
        raise ProtocolError(f"configuration block {block} is not 0…63")
    return block | (CFG_EEPROM if eeprom else 0) | (CFG_ALL if every else 0)


def read_config_request(block: int, *, eeprom: bool = False, address: int = BROADCAST) -> bytes:
    """``[0x80][CFG-ADR]``; the answer's data is the 14-byte CFG-REC (M02 §5.1 p. 41)."""
    return encode_request(CMD_READ_CONFIG, bytes((config_address(block, eeprom=eeprom),)), address)


def write_config_request(
    block: int, record: bytes, *, eeprom: bool = False, address: int = BROADCAST
) -> bytes:
    """``[0x81][CFG-ADR][CFG-REC: 14]`` (M02 §5.2 p. 42)."""
    if len(record) != CFG_RECORD:
        raise ProtocolError(f"a configuration block has {CFG_RECORD} bytes, not {len(record)}")
    cfg_adr = bytes((config_address(block, eeprom=eeprom),))
    return encode_request(CMD_WRITE_CONFIG, cfg_adr + record, address)


# --------------------------------------------------------------------------- diagnostic

DIAG_GENERAL: Final = 0x01
"""``[0x6E]`` mode 0x01, general RF status: two flag bytes, A and B (the SDK's
``FEDM_ISCReaderDiagnostic.h`` ``ucFlagsA``/``ucFlagsB``; ``Set_0x6E_ReaderDiagnosticData``
copies them from the answer's first two data bytes: no echo of the mode)."""
DIAG_MULTIPLEXER: Final = 0x03
"""Mode 0x03: one impedance-status byte for each of the multiplexer's 8 channels (the SDK's
``ucMuxStatusCh1`` … ``ucMuxStatusCh8``: "only for HF Reader")."""
DIAG_INTERNAL: Final = 0x04
"""Mode 0x04: hardware and configuration status, INT_ERROR A and B (MU02 p. 69; the SDK)."""
DIAG_MULTIPLEXER_IMPEDANCE: Final = 0x05
"""Mode 0x05: for the multiplexer on an antenna output, three bit fields, a bit a channel:
power, impedance below 50 Ω, impedance above 50 Ω (the SDK's ``CNTRL_OUT1``,
``PHASE_LT50_OUT1``, ``PHASE_GT50_OUT1``; the SDK marks the mode "only HF/UHF LR-Reader", so a
reader may refuse it: the driver then asks mode 0x03)."""


class GeneralFlag(IntEnum):
    """Mode 0x01 flags (the SDK's bit fields; A in the low byte, B in the high byte)."""

    RF_HARDWARE = 0x0001
    RF_NOISE = 0x0002
    IMPEDANCE_BELOW_50 = 0x0004
    IMPEDANCE_ABOVE_50 = 0x0008
    POWER_AMPLIFIER = 0x0010
    TEMPERATURE_WARNING = 0x0020
    SYNC_TIMEOUT = 0x0040
    TEMPERATURE_ALARM = 0x0080
    MULTIPLEXER = 0x0100
    ANTENNA_TUNER = 0x0200
    ANTENNA_DC_POWER = 0x0400


_FLAG_WORDS: Final = {
    GeneralFlag.RF_HARDWARE: "RF hardware error",
    GeneralFlag.RF_NOISE: "RF noise",
    GeneralFlag.IMPEDANCE_BELOW_50: "antenna impedance below 50 ohm",
    GeneralFlag.IMPEDANCE_ABOVE_50: "antenna impedance above 50 ohm",
    GeneralFlag.POWER_AMPLIFIER: "RF power amplifier",
    GeneralFlag.TEMPERATURE_WARNING: "temperature warning",
    GeneralFlag.SYNC_TIMEOUT: "synchronisation timeout",
    GeneralFlag.TEMPERATURE_ALARM: "temperature alarm",
    GeneralFlag.MULTIPLEXER: "multiplexer",
    GeneralFlag.ANTENNA_TUNER: "antenna tuner",
    GeneralFlag.ANTENNA_DC_POWER: "antenna DC power",
}


@dataclass(frozen=True, slots=True)
class GeneralDiagnostic:
    """``[0x6E]`` mode 0x01: FLAGS A and FLAGS B."""

    flags_a: int
    flags_b: int

    @property
    def flags(self) -> int:
        """Both bytes as one word, A low."""
        return self.flags_a | self.flags_b << 8

    def problems(self) -> list[str]:
        """What the flags say is wrong, in words (empty: nothing)."""
        return [words for flag, words in _FLAG_WORDS.items() if self.flags & flag]

    def encode(self) -> bytes:
        """The answer's data."""
        return bytes((self.flags_a, self.flags_b))

    @classmethod
    def decode(cls, data: bytes) -> GeneralDiagnostic:
        """Read the answer's data (its first two bytes; a reader may pad the record)."""
        if len(data) < 2:
            raise ProtocolError(f"a general diagnostic answer of {len(data)} bytes, not 2")
        return cls(data[0], data[1])


class ChannelState(IntEnum):
    """A multiplexer channel's state, read off the mode 0x05 bit fields."""

    OK = 0
    OPEN = 1
    """Impedance above 50 Ω: no antenna, a cut cable."""
    SHORT = 2
    """Impedance below 50 Ω: a shorted antenna or cable."""
    POWER = 3
    """The channel's power is wrong."""
    FAULT = 4
    """Out of order, how not said (a mode 0x03 status byte other than 0x00)."""


def decode_multiplexer_status(data: bytes) -> dict[int, ChannelState]:
    """``[0x6E]`` mode 0x03: one status byte a channel, 1…8; the SDK names no values, so any
    byte but 0x00 is a channel out of order."""
    if len(data) < MAX_ANTENNA:
        raise ProtocolError(f"a multiplexer status answer of {len(data)} bytes, not 8")
    return {n: ChannelState.FAULT for n, byte in enumerate(data[:MAX_ANTENNA], 1) if byte}


@dataclass(frozen=True, slots=True)
class MultiplexerImpedance:
    """``[0x6E]`` mode 0x05 for one multiplexer: three bit fields, bit n-1 for channel n."""

    power: int
    below_50: int
    above_50: int

    def state(self, channel: int) -> ChannelState:
        """Channel ``channel``'s state (1…8)."""
        bit = 1 << (channel - 1)
        if self.above_50 & bit:
            return ChannelState.OPEN
        if self.below_50 & bit:
            return ChannelState.SHORT
        if self.power & bit:
            return ChannelState.POWER
        return ChannelState.OK

    def faults(self) -> dict[int, ChannelState]:
        """Every channel that is not in order."""
        states = {n: self.state(n) for n in range(1, MAX_ANTENNA + 1)}
        return {n: state for n, state in states.items() if state is not ChannelState.OK}

    def encode(self) -> bytes:
        """The answer's data."""
        return bytes((self.power, self.below_50, self.above_50))

    @classmethod
    def decode(cls, data: bytes) -> MultiplexerImpedance:
        """Read the first output's three bytes (a reader with more outputs sends more)."""
        if len(data) < 3:
            raise ProtocolError(f"a multiplexer impedance answer of {len(data)} bytes, not 3")
        return cls(data[0], data[1], data[2])


def diagnostic_request(mode: int, address: int = BROADCAST) -> bytes:
    """``[0x6E][MODE]`` (MU02 §9.8 p. 69)."""
    return encode_request(CMD_DIAGNOSTIC, bytes((mode,)), address)
