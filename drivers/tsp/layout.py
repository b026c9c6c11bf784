"""TSP/1 messages whose payload is their fields in order: the field types say the layout.

A :class:`FlatMessage` is a frozen dataclass whose fields are annotated with their wire types
(``shuffle_id: U32``, ``uid: Counted``); ``encode()`` writes the fields in declaration order and
``decode()`` reads them back, so a message's layout is written once, as data. A list (a fault
list, a snapshot's antennas) is a field too: :func:`list_of` writes a u8 count and the items. A
message with a variant part writes its own codec.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from enum import IntEnum, IntFlag
from typing import Annotated, Any, ClassVar, NamedTuple, Self, TypeVar

from drivers.tsp.payload import PayloadReader, PayloadWriter

N = TypeVar("N", bound=IntEnum)


class Wire(NamedTuple):
    """How one field travels: how it is written and how it is read back."""

    write: Callable[[PayloadWriter, Any], object]
    read: Callable[[PayloadReader, str], Any]


def _fixed(size: int) -> Wire:
    return Wire(PayloadWriter.raw, lambda r, field: r.raw(size, field))


u8 = Wire(PayloadWriter.u8, PayloadReader.u8)
i8 = Wire(PayloadWriter.i8, PayloadReader.i8)
u16 = Wire(PayloadWriter.u16, PayloadReader.u16)
u32 = Wire(PayloadWriter.u32, PayloadReader.u32)
u64 = Wire(PayloadWriter.u64, PayloadReader.u64)
counted = Wire(PayloadWriter.counted, PayloadReader.counted)

U8 = Annotated[int, u8]
I8 = Annotated[int, i8]
U16 = Annotated[int, u16]
U32 = Annotated[int, u32]
U64 = Annotated[int, u64]
#: A u8 that says yes (1) or no (0).
Bool = Annotated[bool, Wire(lambda w, v: w.u8(int(v)), lambda r, field: bool(r.u8(field)))]
#: A count meter: a u32 that wraps round rather than overflow the field.
Meter = Annotated[int, Wire(lambda w, v: w.u32(v & 0xFFFFFFFF), PayloadReader.u32)]
#: A u8 count and that many bytes.
Counted = Annotated[bytes, counted]
#: A u8 length and UTF-8 text.
Text = Annotated[str, Wire(PayloadWriter.text, PayloadReader.text)]
#: A nonce or a salt: 16 bytes as they are.
Bytes16 = Annotated[bytes, _fixed(16)]
#: A SHA-256 digest or an HMAC-SHA256: 32 bytes as they are.
Bytes32 = Annotated[bytes, _fixed(32)]


def known(enum: type[N], value: int) -> N | int:
    """The enum's member for ``value``, or the number itself (a newer device's value)."""
    return enum(value) if value in enum._value2member_map_ else value


def enum_of(enum: type[IntEnum], wire: Wire) -> Wire:
    """An enum field: read as its member, or as the number when this host does not know it."""
    return Wire(wire.write, lambda r, field: known(enum, wire.read(r, field)))


def flags_of(flag: type[IntFlag], wire: Wire) -> Wire:
    """A bit field read as its flag type."""
    return Wire(wire.write, lambda r, field: flag(wire.read(r, field)))


def list_of(item: Wire | type[FlatMessage], count: str = "n") -> Wire:
    """A u8 count (named ``count`` in a short payload's error) and that many items, read as a
    tuple; an item is a field's wire or a whole :class:`FlatMessage`."""
    if isinstance(item, Wire):
        wire = item
    else:
        wire = Wire(lambda w, v: v.write(w), lambda r, field: item.read(r))

    def write(w: PayloadWriter, items: tuple[Any, ...]) -> None:
        w.u8(len(items))
        for value in items:
            wire.write(w, value)

    def read(r: PayloadReader, field: str) -> tuple[Any, ...]:
        return tuple(wire.read(r, field) for _ in range(r.u8(count)))

    return Wire(write, read)


class FlatMessage:
    """A message whose payload is its fields in declaration order (a frozen dataclass)."""

    __slots__ = ()

    #: The message's name in a short payload's error; an event's default is its type's name.
    WHAT: ClassVar[str] = ""

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter()
        self.write(w)
        return w.build()

    def write(self, w: PayloadWriter) -> None:
        """Append the message's fields to ``w`` (a list of them shares a payload)."""
        for name, wire in _layout(type(self))[1]:
            wire.write(w, getattr(self, name))

    @classmethod
    def read(cls, r: PayloadReader) -> Self:
        """Read the message's fields from ``r`` (a list of them shares a payload)."""
        return cls(*[wire.read(r, name) for name, wire in _layout(cls)[1]])

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes; raise PayloadError when it is too short."""
        what, fields = _layout(cls)
        r = PayloadReader(payload, what)
        return cls(*[wire.read(r, name) for name, wire in fields])


_Layout = tuple[str, tuple[tuple[str, Wire], ...]]
_LAYOUTS: dict[type[FlatMessage], _Layout] = {}


def _layout(cls: type[FlatMessage]) -> _Layout:
    """The name a short payload's error gives the message, and its fields with their wires."""
    layout = _LAYOUTS.get(cls)
    if layout is None:
        # worked out on first use: until the class's module is loaded its annotations are strings
        layout = _LAYOUTS[cls] = _work_out(cls)
    return layout


def _work_out(cls: type[FlatMessage]) -> _Layout:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = tuple(
        (field.name, next(m for m in hints[field.name].__metadata__ if isinstance(m, Wire)))
        for field in dataclasses.fields(cls)  # type: ignore[arg-type]
    )
    msg_type = getattr(cls, "TYPE", None)
    what = cls.WHAT or (msg_type.name if isinstance(msg_type, IntEnum) else cls.__name__)
    return what, fields
