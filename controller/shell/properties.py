"""MQTT v5 PUBLISH properties, packed once when they are made.

paho's :class:`~paho.mqtt.properties.Properties` packs itself on every send by searching its
table of property names, and validates every attribute set through ``__setattr__``: about a
third of the CPU the daemon spends publishing an event (benchmarks/pipeline.py). Every message the
table publishes carries at most a content type, one user property and correlation data, so
:func:`packed` writes those few bytes itself (MQTT 5.0 §2.2.2: a variable byte integer length,
then each property as its identifier and its value; §1.5.4/§1.5.7 for strings and string pairs)
and hands paho an object whose ``pack`` returns them.

Receiving costs the same way: paho builds a whole property table for every PUBLISH it decodes,
and validates each property it reads through ``__setattr__`` (a quarter of the CPU a pit process
spends on a message, benchmarks/pit_ingest.py). :func:`read_properties_once` makes paho decode
received properties with :class:`ReceivedProperties`, which shares one table and sets what it
reads directly; what the caller sees (the attributes, ``UserProperty`` as a list of pairs) is the
same. The pit's ingest and the daemon's broker link (every PUBACK carries a property table too)
both use it.
"""

from __future__ import annotations

from typing import Any

from paho.mqtt import _packet
from paho.mqtt.exception import MQTTException
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties, VariableByteIntegers

_CONTENT_TYPE = 0x03
_CORRELATION_DATA = 0x09
_USER_PROPERTY = 0x26


class PackedProperties(Properties):
    """Properties whose bytes were computed when they were made."""

    def __init__(self, packed: bytes) -> None:
        # paho's own initialiser builds the whole property table: not needed to send
        object.__setattr__(self, "packetType", PacketTypes.PUBLISH)
        object.__setattr__(self, "_packed", packed)

    def pack(self) -> bytes:
        """The property bytes, with their length in front."""
        packed: bytes = object.__getattribute__(self, "_packed")
        return packed


def packed(
    *,
    content_type: str | None = None,
    user: tuple[str, str] | None = None,
    correlation: bytes | None = None,
) -> PackedProperties:
    """PUBLISH properties carrying what is given, ready to send."""
    body = bytearray()
    if content_type is not None:
        body += bytes([_CONTENT_TYPE]) + _string(content_type.encode())
    if correlation is not None:
        body += bytes([_CORRELATION_DATA]) + _string(correlation)
    if user is not None:
        body += bytes([_USER_PROPERTY]) + _string(user[0].encode()) + _string(user[1].encode())
    return PackedProperties(_varint(len(body)) + bytes(body))


def _string(data: bytes) -> bytes:
    if len(data) > 0xFFFF:
        raise ValueError(f"an MQTT string or binary field holds at most 65535 bytes: {len(data)}")
    return len(data).to_bytes(2, "big") + data


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        value, digit = divmod(value, 128)
        out.append(digit | (0x80 if value else 0))
        if not value:
            return bytes(out)


#: paho's tables, built once, only read
_TABLE = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
#: Property identifier → its attribute name (paho's name without spaces).
_ATTRIBUTE = {ident: name.replace(" ", "") for name, ident in _TABLE.names.items()}
_MANY = frozenset({11, 38})  # subscription identifiers and user properties: lists


class ReceivedProperties(Properties):
    """Properties of a received packet: paho's tables shared, what is read set directly."""

    def __init__(self, packetType: int) -> None:  # noqa: N803 (paho's name)
        object.__setattr__(self, "packetType", packetType)
        object.__setattr__(self, "types", _TABLE.types)
        object.__setattr__(self, "names", _TABLE.names)
        object.__setattr__(self, "properties", _TABLE.properties)

    def unpack(self, buffer: Any) -> tuple[Properties, int]:
        """Read the properties at the start of ``buffer``; themselves and their length."""
        decode = VariableByteIntegers.decode
        length, length_bytes = decode(buffer)  # type: ignore[no-untyped-call]
        buffer = buffer[length_bytes:]
        left = length
        while left > 0:
            ident, ident_bytes = decode(buffer)  # type: ignore[no-untyped-call]
            buffer = buffer[ident_bytes:]
            left -= ident_bytes
            if ident not in _ATTRIBUTE:
                raise MQTTException(f"unknown property identifier {ident}")
            kind = self.properties[ident][0]
            read = self.readProperty
            value, value_bytes = read(buffer, kind, left)  # type: ignore[no-untyped-call]
            buffer = buffer[value_bytes:]
            left -= value_bytes
            name = _ATTRIBUTE[ident]
            if ident in _MANY:
                value = [*self.__dict__.get(name, ()), value]
            elif name in self.__dict__:
                raise MQTTException(f"Property '{name}' must not exist more than once")
            object.__setattr__(self, name, value)
        return self, length + length_bytes


def read_properties_once() -> None:
    """Make paho decode received packets' properties with :class:`ReceivedProperties` (for
    this process; paho's module keeps its ``Properties`` name for the packets it decodes)."""
    _packet.Properties = ReceivedProperties  # type: ignore[attr-defined]
