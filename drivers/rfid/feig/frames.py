"""ID ISC protocol frames: the standard and the advanced frame, their CRC, and a stream decoder.

Both frames are FEIG's (ID ISC.M02 manual H21010-1e-ID-B §3.1 pp. 16-17; ID ISC.MU02.02 manual
H90701-3e-ID-B §6.1 pp. 16-17)::

    standard, host → reader:  [LENGTH][COM-ADR][CONTROL-BYTE][DATA …][CRC16 LSB][CRC16 MSB]
    standard, reader → host:  [LENGTH][COM-ADR][CONTROL-BYTE][STATUS][DATA …][CRC16 LSB][CRC16 MSB]
    advanced:                 [STX 0x02][ALENGTH MSB][ALENGTH LSB][COM-ADR][CONTROL-BYTE] …

LENGTH (and ALENGTH) counts the whole frame, itself and the CRC included. The CRC-16 is the
manual's C example (M02 §3.2 p. 18): polynomial 0x8408 (x^16+x^12+x^5+1, bits taken least
significant first), preset 0xFFFF, over every byte before it, sent least significant byte first.

A standard LENGTH is at least 5 (a request without data), so a first byte of 0x02 always starts
an advanced frame. Within one frame the characters follow one another at most 12 ms apart (the
data timeout, M02 p. 17): a receiver that is given the time of each chunk drops a partial frame
once that much silence has passed, and reads what follows as a new frame. Pure: no I/O, the time
comes in with the bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from drivers.errors import DeviceError

STX: Final = 0x02
"""The first byte of an advanced frame."""
BROADCAST: Final = 0xFF
"""The COM-ADR every reader answers, with its own address in the answer (M02 p. 16)."""
STANDARD_MAX: Final = 255
ADVANCED_MAX: Final = 65535
DATA_TIMEOUT: Final = 0.012
"""Seconds of silence after which a partial frame is dropped (M02 §3.1 p. 17)."""
STARTING_DELAY: Final = 0.005
"""Seconds of silence before the first byte of a new frame (M02 §3.1 p. 17)."""

CRC_POLYNOM: Final = 0x8408
CRC_PRESET: Final = 0xFFFF

#: The shortest frame of each kind: a request has no STATUS byte, an answer does.
_MINIMUM: Final = {
    (False, False): 5,  # standard request
    (False, True): 6,  # standard answer
    (True, False): 7,  # advanced request
    (True, True): 8,  # advanced answer (MU02 p. 17: ALENGTH 8…65535)
}


class ProtocolError(DeviceError):
    """A frame or a payload that does not follow the ID ISC protocol."""


def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ CRC_POLYNOM if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE: Final = _crc_table()


def crc16(data: bytes) -> int:
    """The frame CRC of ``data`` (``b"123456789"`` → 0x6F91, CRC-16/MCRF4XX)."""
    crc = CRC_PRESET
    for byte in data:
        crc = (crc >> 8) ^ _TABLE[(crc ^ byte) & 0xFF]
    return crc


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame: a request (``status`` None) or an answer."""

    address: int
    command: int
    data: bytes = b""
    status: int | None = None
    advanced: bool = False

    def encode(self) -> bytes:
        """The frame's bytes."""
        head = bytes((self.address, self.command))
        if self.status is not None:
            head += bytes((self.status,))
        body = head + self.data
        if self.advanced:
            length = 3 + len(body) + 2
            if length > ADVANCED_MAX:
                raise ProtocolError(f"a frame of {length} bytes does not fit an advanced frame")
            framed = bytes((STX, length >> 8, length & 0xFF)) + body
        else:
            length = 1 + len(body) + 2
            if length > STANDARD_MAX:
                raise ProtocolError(f"a frame of {length} bytes does not fit a standard frame")
            framed = bytes((length,)) + body
        crc = crc16(framed)
        return framed + bytes((crc & 0xFF, crc >> 8))


def encode_request(
    command: int, data: bytes = b"", address: int = BROADCAST, *, advanced: bool = False
) -> bytes:
    """A host → reader frame."""
    return Frame(address, command, data, None, advanced).encode()


@dataclass(frozen=True, slots=True)
class Garbage:
    """Bytes that were no frame, and why (``crc``: a whole frame failed its CRC)."""

    size: int
    reason: str


class FrameDecoder:
    """Cuts a byte stream into frames, standard or advanced, checking each CRC.

    ``answers`` says which direction it reads (an answer has a STATUS byte). A length that
    cannot be a frame's is dropped one byte at a time; a frame whose CRC fails is dropped whole.
    When :meth:`feed` is given the time the bytes arrived, a partial frame followed by more than
    ``data_timeout`` of silence is dropped before the new bytes are read.
    """

    def __init__(self, *, answers: bool, data_timeout: float = DATA_TIMEOUT) -> None:
        self.answers = answers
        self.data_timeout = data_timeout
        self._buffer = bytearray()
        self._last: float | None = None

    @property
    def pending(self) -> int:
        """Bytes held that do not make a whole frame yet."""
        return len(self._buffer)

    def reset(self) -> None:
        """Forget a partial frame."""
        self._buffer.clear()

    def feed(self, data: bytes, now: float | None = None) -> Iterator[Frame | Garbage]:
        """Decode what ``data`` completes (``now``: when it arrived, for the data timeout)."""
        buffer = self._buffer
        if now is not None:
            if buffer and self._last is not None and now - self._last > self.data_timeout:
                yield Garbage(len(buffer), "data timeout: the rest of the frame never came")
                buffer.clear()
            self._last = now
        buffer += data
        while buffer:
            advanced = buffer[0] == STX
            minimum = _MINIMUM[(advanced, self.answers)]
            if advanced:
                if len(buffer) < 3:
                    return
                length = buffer[1] << 8 | buffer[2]
            else:
                length = buffer[0]
            if length < minimum:
                del buffer[0]
                what = "ALENGTH" if advanced else "LENGTH"
                yield Garbage(1, f"{what} {length} is below {minimum}")
                continue
            if len(buffer) < length:
                return
            raw = bytes(buffer[:length])
            del buffer[:length]
            if crc16(raw[:-2]) != raw[-2] | raw[-1] << 8:
                yield Garbage(length, "crc")
                continue
            yield _parse(raw, advanced, self.answers)


def _parse(raw: bytes, advanced: bool, answer: bool) -> Frame:
    at = 3 if advanced else 1
    address, command = raw[at], raw[at + 1]
    if answer:
        return Frame(address, command, raw[at + 3 : -2], raw[at + 2], advanced)
    return Frame(address, command, raw[at + 2 : -2], None, advanced)


def decode(raw: bytes, *, answer: bool) -> Frame:
    """Exactly one whole frame (a test's vector, a captured frame)."""
    decoder = FrameDecoder(answers=answer)
    items = list(decoder.feed(raw))
    if len(items) != 1 or not isinstance(items[0], Frame) or decoder.pending:
        raise ProtocolError(f"{raw.hex(' ')} is not one {'answer' if answer else 'request'}")
    return items[0]
