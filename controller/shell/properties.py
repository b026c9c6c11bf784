"""MQTT v5 PUBLISH properties, packed once when they are made.

paho's :class:`~paho.mqtt.properties.Properties` packs itself on every send by searching its
table of property names, and validates every attribute set through ``__setattr__``: about a
third of the CPU the daemon spends publishing an event (benchmarks/pipeline.py). Every message the
table publishes carries at most a content type, one user property and correlation data, so
:func:`packed` writes those few bytes itself (MQTT 5.0 §2.2.2: a variable byte integer length,
then each property as its identifier and its value; §1.5.4/§1.5.7 for strings and string pairs)
and hands paho an object whose ``pack`` returns them.
"""

from __future__ import annotations

from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

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
