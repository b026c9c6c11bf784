"""PN532 host-interface frames (NXP UM0701-02 §6.2): a pure, incremental codec.

Every frame on the HSU (UART) link starts with the start code ``00 FF``, optionally preceded by
any number of ``00`` preamble bytes and followed by a ``00`` postamble:

=================  ==============================================================
normal information ``00 00 FF LEN LCS TFI PD0…PDn DCS 00``  (LEN = 1…255)
extended           ``00 00 FF FF FF LENM LENL LCS TFI PD0…PDn DCS 00``  (LEN ≤ 265)
ACK                ``00 00 FF 00 FF 00``
NACK               ``00 00 FF FF 00 00``
error frame        ``00 00 FF 01 FF 7F 81 00``  (application-level syntax error)
=================  ==============================================================

``LEN`` counts the TFI and data bytes; ``LEN + LCS ≡ 0`` and ``TFI + PD0 + … + PDn + DCS ≡ 0``
(mod 256). ``TFI`` is ``D4`` from host to PN532 and ``D5`` back.

:class:`FrameDecoder` never raises: bytes that cannot be a frame come out as :class:`Garbage`
(with the reason), and the decoder resynchronises on the next start code. Its buffer never holds
more than one maximal frame, so noise cannot make it grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

START_CODE: Final = b"\x00\xff"
TFI_HOST: Final = 0xD4
"""Frame identifier of frames sent by the host controller."""
TFI_PN532: Final = 0xD5
"""Frame identifier of frames sent by the PN532."""
TFI_ERROR: Final = 0x7F
"""The byte in the TFI position of the application-level error frame."""

MAX_NORMAL_LEN: Final = 255
"""Largest LEN (TFI + data) of a normal information frame."""
MAX_EXTENDED_LEN: Final = 265
"""Largest LEN (TFI + 264 data bytes) of an extended information frame (UM0701-02 §6.2.1.2)."""
MAX_FRAME_BYTES: Final = 2 + 5 + MAX_EXTENDED_LEN + 1
"""Start code, extended header, body and DCS: the most a decoder ever has to hold."""
MAX_GARBAGE_REPORT: Final = 64
"""Garbage reports carry at most this many of the dropped bytes (and the full count)."""

ACK_BYTES: Final = bytes.fromhex("0000ff00ff00")
NACK_BYTES: Final = bytes.fromhex("0000ffff0000")
ERROR_FRAME_BYTES: Final = bytes.fromhex("0000ff01ff7f8100")


@dataclass(frozen=True, slots=True)
class Ack:
    """The receiver got a well-formed frame (or, from the host, abort the running command)."""


@dataclass(frozen=True, slots=True)
class Nack:
    """From the host: send the last response frame again."""


@dataclass(frozen=True, slots=True)
class ErrorFrame:
    """From the PN532: the last command was syntactically wrong (unknown code, bad length…)."""


@dataclass(frozen=True, slots=True)
class InformationFrame:
    """A command (TFI ``D4``) or a response (TFI ``D5``); ``data`` is PD0…PDn, PD0 the code."""

    tfi: int
    data: bytes
    extended: bool = False


@dataclass(frozen=True, slots=True)
class Garbage:
    """Bytes the decoder dropped, and why. ``data`` is truncated to MAX_GARBAGE_REPORT bytes."""

    reason: str
    size: int
    data: bytes = b""


Frame = Ack | Nack | ErrorFrame | InformationFrame
DecodedItem = Frame | Garbage


def _checksum(data: bytes | bytearray) -> int:
    """The byte that makes ``sum(data) + checksum ≡ 0 (mod 256)``."""
    return -sum(data) & 0xFF


def encode_information(tfi: int, data: bytes, *, extended: bool | None = None) -> bytes:
    """Encode an information frame; extended format when needed (or when asked for)."""
    body = bytes((tfi,)) + data
    length = len(body)
    if length > MAX_EXTENDED_LEN:
        raise ValueError(f"frame body of {length} bytes exceeds the PN532 maximum")
    if extended is None:
        extended = length > MAX_NORMAL_LEN
    if not extended and length > MAX_NORMAL_LEN:
        raise ValueError(f"frame body of {length} bytes needs the extended format")
    if extended:
        size = bytes((length >> 8, length & 0xFF))
        header = b"\x00" + START_CODE + b"\xff\xff" + size + bytes((_checksum(size),))
    else:
        header = b"\x00" + START_CODE + bytes((length, _checksum(bytes((length,)))))
    return header + body + bytes((_checksum(body), 0x00))


def encode(frame: Frame) -> bytes:
    """The wire bytes of a frame, with one preamble and one postamble byte."""
    match frame:
        case Ack():
            return ACK_BYTES
        case Nack():
            return NACK_BYTES
        case ErrorFrame():
            return ERROR_FRAME_BYTES
        case InformationFrame(tfi=tfi, data=data, extended=extended):
            return encode_information(tfi, data, extended=extended)


class FrameDecoder:
    """Turn a byte stream, in chunks of any size, into frames and garbage reports."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """How many bytes are held, waiting for the rest of a frame."""
        return len(self._buffer)

    def reset(self) -> None:
        """Forget a partial frame (the host flushed its input, or the line went quiet)."""
        self._buffer.clear()

    def feed(self, data: bytes | bytearray | memoryview) -> list[DecodedItem]:
        """Add received bytes; return the frames (and garbage) they complete, in order."""
        self._buffer += data
        out: list[DecodedItem] = []
        while self._step(out):
            pass
        return out

    def _drop(self, count: int, reason: str, out: list[DecodedItem]) -> None:
        dropped = bytes(self._buffer[:count])
        del self._buffer[:count]
        # Preamble and postamble zeros between frames are normal, not garbage.
        if dropped.strip(b"\x00"):
            out.append(Garbage(reason, len(dropped), dropped[:MAX_GARBAGE_REPORT]))

    def _step(self, out: list[DecodedItem]) -> bool:
        """Decode or drop one thing at the head of the buffer; False when more bytes are needed."""
        buf = self._buffer
        start = buf.find(START_CODE)
        if start < 0:
            # Keep a trailing 00: it may be the first half of a start code still on its way.
            keep = 1 if buf.endswith(b"\x00") else 0
            self._drop(len(buf) - keep, "no start code", out)
            return False
        if start > 0:
            self._drop(start, "bytes before start code", out)
        if len(buf) < 4:
            return False
        length, lcs = buf[2], buf[3]
        if (length, lcs) == (0x00, 0xFF):
            del buf[:4]
            out.append(Ack())
            return True
        if (length, lcs) == (0xFF, 0x00):
            del buf[:4]
            out.append(Nack())
            return True
        if (length, lcs) == (0xFF, 0xFF):
            return self._extended(out)
        if (length + lcs) & 0xFF:
            self._drop(2, "length checksum mismatch", out)
            return True
        if length == 0:  # LCS 00 checks out, but an information frame holds its TFI at least
            self._drop(2, "normal length 0 out of range", out)
            return True
        return self._body(4, length, extended=False, out=out)

    def _extended(self, out: list[DecodedItem]) -> bool:
        buf = self._buffer
        if len(buf) < 7:
            return False
        if (buf[4] + buf[5] + buf[6]) & 0xFF:
            self._drop(2, "extended length checksum mismatch", out)
            return True
        length = buf[4] << 8 | buf[5]
        if not 1 <= length <= MAX_EXTENDED_LEN:
            self._drop(2, f"extended length {length} out of range", out)
            return True
        return self._body(7, length, extended=True, out=out)

    def _body(self, offset: int, length: int, *, extended: bool, out: list[DecodedItem]) -> bool:
        buf = self._buffer
        end = offset + length
        if len(buf) < end + 1:
            return False
        body = bytes(buf[offset:end])
        if _checksum(body) != buf[end]:
            # Drop only the start code: a real frame may begin inside what looked like a body.
            self._drop(2, "data checksum mismatch", out)
            return True
        del buf[: end + 1]
        tfi, data = body[0], body[1:]
        if tfi == TFI_ERROR and not data and not extended:
            out.append(ErrorFrame())
        else:
            out.append(InformationFrame(tfi, data, extended))
        return True
