"""The subset of FEIG's ID ISC host protocol that ``feig-isc`` speaks (docs/protocols/feig-isc.md).

Every frame is the standard protocol frame::

    host → reader: [LENGTH][COM-ADR][CMD][DATA…][CRC16 LSB][CRC16 MSB]
    reader → host: [LENGTH][COM-ADR][CMD][STATUS][DATA…][CRC16 LSB][CRC16 MSB]

LENGTH counts the whole frame, CRC included; the CRC-16 (polynomial 0x8408 reflected, preset
0xFFFF, no final XOR: CRC-16/MCRF4XX) covers every byte before it and goes least significant byte
first. Pure: encoders, decoders and a stream decoder, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from drivers.errors import DeviceError

BROADCAST: Final = 0xFF
"""COM-ADR every reader answers."""
MAX_FRAME: Final = 255
"""The standard frame's LENGTH is one byte."""
MIN_REQUEST: Final = 5
MIN_RESPONSE: Final = 6

CMD_ISO_HOST: Final = 0xB0
ISO_INVENTORY: Final = 0x01
CMD_SOFTWARE_VERSION: Final = 0x65
CMD_RF_RESET: Final = 0x69
CMD_DIAGNOSTIC: Final = 0x6E

MODE_MORE: Final = 0x01
"""Inventory MODE bit 0: send the next data sets of the inventory already taken."""
MODE_ANT: Final = 0x10
"""Inventory MODE bit 4: ANT_SEL follows, and every data set carries ANT_NR, ANT_STATUS, RSSI."""
ANT_SEL_BYTES: Final = 4
"""ANT_SEL: a 32-bit field, most significant byte first; bit n-1 selects antenna n (1…32)."""
MAX_ANTENNA: Final = 32

TR_TYPE_ISO15693: Final = 0x03
TR_TYPE_ISO14443A: Final = 0x04
"""An ISO/IEC 14443-A tag (4- or 7-byte UID, least significant byte first, zero-filled to 8)."""
RECORD_SIZE: Final = 13
"""One inventory data set: TR-TYPE, DSFID, UID (8, least significant byte first), ANT_NR,
ANT_STATUS, RSSI."""
RECORDS_PER_FRAME: Final = (MAX_FRAME - MIN_RESPONSE - 1) // RECORD_SIZE
"""19: what one standard response frame holds (the rest comes with status 0x94 and MORE)."""

DIAG_GENERAL: Final = 0x01
DIAG_ANTENNAS: Final = 0x04


class Status(IntEnum):
    """The reader's STATUS byte (the codes this driver meets)."""

    OK = 0x00
    NO_TRANSPONDER = 0x01
    UNKNOWN_COMMAND = 0x80
    LENGTH_ERROR = 0x81
    NOT_AVAILABLE = 0x82
    RF_COMMUNICATION_ERROR = 0x83
    RF_WARNING = 0x84
    MORE_DATA = 0x94


class AntennaState(IntEnum):
    """One antenna's state in the multiplexer diagnostic (0x6E mode 0x04)."""

    OK = 0x00
    OPEN = 0x01
    SHORT = 0x02


def status_name(code: int) -> str:
    """``MORE_DATA (0x94)``; the bare number for a code this host does not know."""
    if code in Status._value2member_map_:
        return f"{Status(code).name} (0x{code:02x})"
    return f"0x{code:02x}"


class ProtocolError(DeviceError):
    """A frame or a payload that does not follow the protocol."""


# --------------------------------------------------------------------------- CRC


def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE: Final = _crc_table()


def crc16(data: bytes) -> int:
    """CRC-16/MCRF4XX: poly 0x8408 reflected, preset 0xFFFF (``b"123456789"`` → 0x6F91)."""
    crc = 0xFFFF
    for byte in data:
        crc = (crc >> 8) ^ _TABLE[(crc ^ byte) & 0xFF]
    return crc


def _sealed(body: bytes) -> bytes:
    crc = crc16(body)
    return body + bytes((crc & 0xFF, crc >> 8))


# --------------------------------------------------------------------------- frames


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded frame: a request (``status`` None) or a response."""

    address: int
    command: int
    data: bytes
    status: int | None = None


@dataclass(frozen=True, slots=True)
class Garbage:
    """Bytes that were no frame, and why (``crc`` when a whole frame failed its CRC)."""

    size: int
    reason: str


def encode_request(command: int, data: bytes = b"", address: int = BROADCAST) -> bytes:
    """A host → reader frame."""
    length = 3 + len(data) + 2
    if length > MAX_FRAME:
        raise ProtocolError(f"request of {length} bytes does not fit a standard frame")
    return _sealed(bytes((length, address, command)) + data)


def encode_response(command: int, status: int, data: bytes = b"", address: int = 0x00) -> bytes:
    """A reader → host frame."""
    length = 4 + len(data) + 2
    if length > MAX_FRAME:
        raise ProtocolError(f"response of {length} bytes does not fit a standard frame")
    return _sealed(bytes((length, address, command, status)) + data)


class FrameDecoder:
    """Cuts a byte stream into frames by their LENGTH byte, checking each CRC.

    ``responses`` says which direction it decodes (a response has a STATUS byte). A LENGTH that
    cannot be a frame is dropped one byte at a time; a frame whose CRC fails is dropped whole
    (the host asks again, or the reader does not answer it).
    """

    def __init__(self, *, responses: bool) -> None:
        self.responses = responses
        self._minimum = MIN_RESPONSE if responses else MIN_REQUEST
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes held that do not make a whole frame yet."""
        return len(self._buffer)

    def reset(self) -> None:
        """Forget a partial frame."""
        self._buffer.clear()

    def feed(self, data: bytes) -> Iterator[Frame | Garbage]:
        """Decode what ``data`` completes."""
        buffer = self._buffer
        buffer += data
        while buffer:
            length = buffer[0]
            if length < self._minimum:
                del buffer[0]
                yield Garbage(1, f"LENGTH {length} is below {self._minimum}")
                continue
            if len(buffer) < length:
                return
            frame = bytes(buffer[:length])
            del buffer[:length]
            if crc16(frame[:-2]) != frame[-2] | frame[-1] << 8:
                yield Garbage(length, "crc")
                continue
            if self.responses:
                yield Frame(frame[1], frame[2], frame[4:-2], frame[3])
            else:
                yield Frame(frame[1], frame[2], frame[3:-2])


# --------------------------------------------------------------------------- commands


def antenna_select(antennas: Iterable[int]) -> bytes:
    """ANT_SEL for these antennas (1…32)."""
    mask = 0
    for antenna in antennas:
        if not 1 <= antenna <= MAX_ANTENNA:
            raise ProtocolError(f"antenna {antenna} is not 1…{MAX_ANTENNA}")
        mask |= 1 << (antenna - 1)
    return mask.to_bytes(ANT_SEL_BYTES, "big")


def selected_antennas(field: bytes) -> list[int]:
    """The antennas an ANT_SEL selects, ascending."""
    mask = int.from_bytes(field, "big")
    return [bit + 1 for bit in range(MAX_ANTENNA) if mask >> bit & 1]


def inventory_request(
    antennas: Iterable[int], *, more: bool = False, address: int = BROADCAST
) -> bytes:
    """``[0xB0][0x01][MODE][ANT_SEL]``: inventory on these antennas (MORE: the next page)."""
    mode = MODE_ANT | (MODE_MORE if more else 0)
    data = bytes((ISO_INVENTORY, mode)) + antenna_select(antennas)
    return encode_request(CMD_ISO_HOST, data, address)


@dataclass(frozen=True, slots=True)
class TagRecord:
    """One inventory data set: a tag as one antenna heard it."""

    uid: bytes
    """As it travels: least significant byte first."""
    antenna: int
    rssi: int
    antenna_status: int = 0
    dsfid: int = 0
    tr_type: int = TR_TYPE_ISO15693

    @classmethod
    def of(cls, uid: bytes, antenna: int, rssi: int) -> TagRecord:
        """The data set of a tag whose UID is ``uid`` (most significant byte first, as
        spelt): an 8-byte UID is ISO/IEC 15693, a 4- or 7-byte one ISO/IEC 14443-A."""
        if len(uid) == 8:
            return cls(uid[::-1], antenna, rssi)
        if len(uid) in (4, 7):
            return cls(uid[::-1], antenna, rssi, tr_type=TR_TYPE_ISO14443A)
        raise ProtocolError(f"no transponder type has a {len(uid)}-byte UID")

    def encode(self) -> bytes:
        """The data set's 13 bytes."""
        uid = self.uid
        if self.tr_type == TR_TYPE_ISO14443A and len(uid) in (4, 7):
            uid += bytes(8 - len(uid))
        if len(uid) != 8:
            raise ProtocolError(f"a data set's UID field has 8 bytes, not {len(self.uid)}")
        head = bytes((self.tr_type, self.dsfid))
        return head + uid + bytes((self.antenna, self.antenna_status, self.rssi))


def encode_inventory_data(records: Iterable[TagRecord]) -> bytes:
    """An inventory response's DATA: DATA-SETS, then the data sets."""
    chosen = list(records)
    return bytes((len(chosen),)) + b"".join(record.encode() for record in chosen)


def decode_inventory_data(data: bytes) -> list[TagRecord]:
    """An inventory response's DATA (empty for status 0x01)."""
    if not data:
        return []
    count = data[0]
    if len(data) != 1 + count * RECORD_SIZE:
        raise ProtocolError(
            f"inventory answer of {len(data)} bytes does not hold {count} data sets"
        )
    records = []
    for index in range(count):
        at = 1 + index * RECORD_SIZE
        raw = data[at : at + RECORD_SIZE]
        uid = raw[2:10]
        if raw[0] == TR_TYPE_ISO14443A:
            uid = uid[:7] if uid[7] == 0 and any(uid[4:7]) else uid[:4]
        records.append(TagRecord(uid, raw[10], raw[12], raw[11], raw[1], raw[0]))
    return records


@dataclass(frozen=True, slots=True)
class SoftwareVersion:
    """The answer to ``[0x65]``: SW-REV, D-REV, HW-TYPE, SW-TYPE, TR-TYPE."""

    sw_rev: int
    d_rev: int
    hw_type: int
    sw_type: int
    tr_type: int

    def encode(self) -> bytes:
        """The answer's 7 data bytes."""
        return (
            self.sw_rev.to_bytes(2, "big")
            + bytes((self.d_rev, self.hw_type, self.sw_type))
            + self.tr_type.to_bytes(2, "big")
        )

    @classmethod
    def decode(cls, data: bytes) -> SoftwareVersion:
        """Read the answer's data."""
        if len(data) != 7:
            raise ProtocolError(f"software version answer of {len(data)} bytes, not 7")
        return cls(int.from_bytes(data[0:2], "big"), data[2], data[3], data[4],
                   int.from_bytes(data[5:7], "big"))  # fmt: skip

    def __str__(self) -> str:
        major, minor = self.sw_rev >> 8, self.sw_rev & 0xFF
        return f"ID ISC firmware {major:02d}.{minor:02d} (type 0x{self.sw_type:02x})"


@dataclass(frozen=True, slots=True)
class GeneralDiagnostic:
    """``[0x6E]`` mode 0x01: the reader's RF front end."""

    flags: int

    RF_HARDWARE: Final = 0x01
    NOISE: Final = 0x02
    OVERTEMPERATURE: Final = 0x04

    def problems(self) -> list[str]:
        """What the flags say is wrong (empty: nothing)."""
        names = {
            self.RF_HARDWARE: "RF hardware",
            self.NOISE: "noise",
            self.OVERTEMPERATURE: "overtemperature",
        }
        return [name for bit, name in names.items() if self.flags & bit]

    @classmethod
    def decode(cls, data: bytes) -> GeneralDiagnostic:
        """Read the answer's data: ``[MODE][FLAGS]``."""
        if len(data) != 2 or data[0] != DIAG_GENERAL:
            raise ProtocolError(f"general diagnostic answer {data.hex()} is not [01][FLAGS]")
        return cls(data[1])


def diagnostic_request(mode: int, address: int = BROADCAST) -> bytes:
    """``[0x6E][MODE]``."""
    return encode_request(CMD_DIAGNOSTIC, bytes((mode,)), address)


def encode_antenna_diagnostic(states: Sequence[int]) -> bytes:
    """``[0x6E]`` mode 0x04 answer data: ``[MODE][N][STATE of antenna 1 … N]``."""
    return bytes((DIAG_ANTENNAS, len(states), *states))


def decode_antenna_diagnostic(data: bytes) -> dict[int, int]:
    """Antenna number (1…N) → its state, from a mode 0x04 answer."""
    if len(data) < 2 or data[0] != DIAG_ANTENNAS or len(data) != 2 + data[1]:
        raise ProtocolError(f"antenna diagnostic answer {data.hex()} is not [04][N][states]")
    return dict(enumerate(data[2:], start=1))
