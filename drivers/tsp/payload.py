"""Reading and writing TSP/1 payload fields: fixed little-endian integers, byte strings, ``str``.

``str`` is a u8 length and UTF-8. A reader raises :class:`PayloadError` when the payload is too
short; trailing bytes it does not read are ignored, because senders may append fields in later
protocol versions.
"""

from __future__ import annotations

import struct


class PayloadError(ValueError):
    """A payload too short or malformed for the message it claims to be."""


class PayloadReader:
    """Consumes fields from the front of a payload."""

    def __init__(self, payload: bytes, what: str = "payload") -> None:
        self._data = payload
        self._offset = 0
        self._what = what

    @property
    def remaining(self) -> int:
        """Bytes not read yet."""
        return len(self._data) - self._offset

    def _take(self, size: int, field: str) -> bytes:
        end = self._offset + size
        if end > len(self._data):
            raise PayloadError(
                f"{self._what}: field {field!r} needs {size} bytes at offset {self._offset}, "
                f"payload has {len(self._data)}"
            )
        chunk = self._data[self._offset : end]
        self._offset = end
        return chunk

    def _unpack(self, fmt: str, field: str) -> int:
        value: int = struct.unpack(fmt, self._take(struct.calcsize(fmt), field))[0]
        return value

    def u8(self, field: str) -> int:
        """An unsigned byte."""
        return self._unpack("<B", field)

    def i8(self, field: str) -> int:
        """A signed byte."""
        return self._unpack("<b", field)

    def u16(self, field: str) -> int:
        """An unsigned 16-bit integer."""
        return self._unpack("<H", field)

    def u32(self, field: str) -> int:
        """An unsigned 32-bit integer."""
        return self._unpack("<I", field)

    def u64(self, field: str) -> int:
        """An unsigned 64-bit integer."""
        return self._unpack("<Q", field)

    def raw(self, size: int, field: str) -> bytes:
        """A fixed number of bytes."""
        return self._take(size, field)

    def counted(self, field: str) -> bytes:
        """A u8 count followed by that many bytes."""
        return self._take(self.u8(field), field)

    def text(self, field: str) -> str:
        """A u8 length and UTF-8 text (undecodable bytes are replaced, never raised)."""
        return self.counted(field).decode("utf-8", errors="replace")


class PayloadWriter:
    """Appends fields to a payload."""

    def __init__(self) -> None:
        self._out = bytearray()

    def u8(self, value: int) -> PayloadWriter:
        """An unsigned byte."""
        self._out += struct.pack("<B", value)
        return self

    def i8(self, value: int) -> PayloadWriter:
        """A signed byte."""
        self._out += struct.pack("<b", value)
        return self

    def u16(self, value: int) -> PayloadWriter:
        """An unsigned 16-bit integer."""
        self._out += struct.pack("<H", value)
        return self

    def u32(self, value: int) -> PayloadWriter:
        """An unsigned 32-bit integer."""
        self._out += struct.pack("<I", value)
        return self

    def u64(self, value: int) -> PayloadWriter:
        """An unsigned 64-bit integer."""
        self._out += struct.pack("<Q", value)
        return self

    def raw(self, data: bytes) -> PayloadWriter:
        """Bytes as they are."""
        self._out += data
        return self

    def counted(self, data: bytes) -> PayloadWriter:
        """A u8 count followed by the bytes (at most 255)."""
        if len(data) > 255:
            raise PayloadError(f"{len(data)} bytes do not fit a u8-counted field")
        return self.u8(len(data)).raw(data)

    def text(self, text: str) -> PayloadWriter:
        """A u8 length and UTF-8 text."""
        return self.counted(text.encode("utf-8"))

    def build(self) -> bytes:
        """The payload written so far."""
        return bytes(self._out)
