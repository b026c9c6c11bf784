"""The TSP/1 frame: a 7-byte header, the payload and a CRC, little-endian.

``ver u8, type u8, flags u8, seq u8, corr u8, len u16, payload[len], crc u16`` where the CRC covers
every byte before it. On the wire a frame is COBS-encoded and followed by ``0x00``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum, IntFlag

from drivers.tsp.cobs import CobsError, cobs_decode, cobs_encode
from drivers.tsp.crc import crc16_ccitt_false

VERSION = 1
HEADER = struct.Struct("<BBBBBH")
HEADER_SIZE = HEADER.size
CRC_SIZE = 2
#: Largest payload a frame may carry.
MAX_PAYLOAD = 1024
#: Largest encoded frame the receiver accepts, delimiter excluded; longer runs are discarded.
MAX_WIRE_FRAME = 1100
DELIMITER = b"\x00"

#: Link-level message types, and the types every TSP/1 message set shares.
TYPE_ACK = 0x00
TYPE_NAK = 0x01
TYPE_IDENTIFY = 0x10
TYPE_GET_STATUS = 0x11
TYPE_PING = 0x12
TYPE_ERROR = 0x7F


class Flags(IntFlag):
    """What a frame is: exactly one of REQ, RSP, EVT, ACK, NAK; RETX marks a retransmission."""

    NONE = 0
    REQ = 0x01
    RSP = 0x02
    EVT = 0x04
    ACK = 0x08
    NAK = 0x10
    RETX = 0x20


_KINDS = (Flags.REQ, Flags.RSP, Flags.EVT, Flags.ACK, Flags.NAK)


class NakReason(IntEnum):
    """Why a receiver refused a frame whose CRC was good (the NAK payload)."""

    BAD_VERSION = 1
    BAD_LENGTH = 2
    BAD_FLAGS = 3
    BUSY = 4


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded TSP/1 frame."""

    type: int
    flags: Flags
    seq: int = 0
    corr: int = 0
    payload: bytes = b""
    version: int = VERSION

    @property
    def kind(self) -> Flags:
        """The frame's role (REQ, RSP, EVT, ACK or NAK) without the RETX bit."""
        return self.flags & ~Flags.RETX

    @property
    def retransmitted(self) -> bool:
        """True when the sender marked this copy as a retransmission."""
        return bool(self.flags & Flags.RETX)

    def encode(self) -> bytes:
        """Header, payload and CRC (before COBS)."""
        body = HEADER.pack(
            self.version, self.type, int(self.flags), self.seq, self.corr, len(self.payload)
        )
        body += self.payload
        return body + crc16_ccitt_false(body).to_bytes(2, "little")

    def to_wire(self) -> bytes:
        """The bytes on the wire: COBS of :meth:`encode` and the ``0x00`` delimiter."""
        return cobs_encode(self.encode()) + DELIMITER


@dataclass(frozen=True, slots=True)
class Rejected:
    """A frame with a good CRC and a bad header: the receiver answers it with a NAK."""

    reason: NakReason
    seq: int
    detail: str


class CorruptFrameError(ValueError):
    """Bytes that are not a frame at all (bad COBS, too short, wrong CRC): dropped silently."""

    def __init__(self, what: str, detail: str) -> None:
        super().__init__(detail)
        self.what = what


def check_flags(flags: int) -> str | None:
    """Why ``flags`` is not a valid combination, or None when it is."""
    if flags & 0xC0:
        return f"reserved flag bits set ({flags:#04x})"
    kinds = [kind for kind in _KINDS if flags & kind]
    if len(kinds) != 1:
        return f"flags {flags:#04x} must name exactly one of REQ, RSP, EVT, ACK, NAK"
    if flags & Flags.RETX and kinds[0] not in (Flags.REQ, Flags.EVT):
        return f"RETX is only valid on requests and events (flags {flags:#04x})"
    return None


def parse_frame(raw: bytes) -> Frame | Rejected:
    """Parse the decoded bytes of one frame; raise :class:`CorruptFrameError` on garbage."""
    if len(raw) < HEADER_SIZE + CRC_SIZE:
        raise CorruptFrameError("short", f"{len(raw)} bytes is shorter than a header and a CRC")
    body, crc = raw[:-CRC_SIZE], int.from_bytes(raw[-CRC_SIZE:], "little")
    expected = crc16_ccitt_false(body)
    if crc != expected:
        raise CorruptFrameError("crc", f"CRC {crc:#06x} does not match {expected:#06x}")
    version, msg_type, flags, seq, corr, length = HEADER.unpack_from(body)
    payload = body[HEADER_SIZE:]
    if version != VERSION:
        return Rejected(NakReason.BAD_VERSION, seq, f"version {version}, expected {VERSION}")
    if length != len(payload) or length > MAX_PAYLOAD:
        return Rejected(
            NakReason.BAD_LENGTH, seq, f"length field {length}, payload {len(payload)} bytes"
        )
    problem = check_flags(flags)
    if problem is not None:
        return Rejected(NakReason.BAD_FLAGS, seq, problem)
    return Frame(msg_type, Flags(flags), seq, corr, payload, version)


def decode_wire(wire: bytes) -> Frame | Rejected:
    """Decode one wire frame (delimiter removed); raise :class:`CorruptFrameError` on garbage."""
    try:
        raw = cobs_decode(wire)
    except CobsError as exc:
        raise CorruptFrameError("cobs", str(exc)) from None
    return parse_frame(raw)


def next_seq(seq: int) -> int:
    """The sequence number after ``seq``: 1…255, wrapping to 1 (0 means "none")."""
    return 1 if seq >= 255 else seq + 1
