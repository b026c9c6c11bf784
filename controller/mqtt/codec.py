"""MQTT 5.0 packets, sans I/O: bytes in, packets out; packets in, bytes out.

Written from the OASIS standard ("MQTT Version 5.0", OASIS Standard, 7 March 2019,
https://docs.oasis-open.org/mqtt/mqtt/v5.0/os/mqtt-v5.0-os.html); the section of each part is
named where it is built. It knows nothing of sockets, clocks or the event loop (the client in
``client.py`` owns those), so every packet can be tested from its bytes alone.

Only what a client sends and receives is here: a client never decodes a CONNECT, a SUBSCRIBE
or an UNSUBSCRIBE, and tablectl neither sends nor subscribes at QoS 2, so PUBREC, PUBREL and
PUBCOMP are a protocol error to receive. Decoding is written for the pit's rate: a PUBLISH is
cut out of the buffer with a few slices, its properties kept as bytes until somebody reads them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple

from controller.mqtt.records import MqttError, Properties, SubscribeOptions, Topic, Will

# Control packet types (2.1.2)
CONNECT, CONNACK, PUBLISH, PUBACK = 1, 2, 3, 4
PUBREC, PUBREL, PUBCOMP = 5, 6, 7
SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK = 8, 9, 10, 11
PINGREQ, PINGRESP, DISCONNECT, AUTH = 12, 13, 14, 15

#: The largest Remaining Length a Variable Byte Integer of four bytes holds (1.5.5).
MAX_REMAINING = 268_435_455

# Reason codes (2.4) the client itself sends
NORMAL = 0x00
MALFORMED_PACKET = 0x81
PROTOCOL_ERROR = 0x82

#: The two fixed bytes of a PINGREQ (3.12) and of a DISCONNECT with reason 0x00 (3.14.2.1).
PINGREQ_BYTES = b"\xc0\x00"

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")


class ProtocolError(MqttError):
    """The broker sent what MQTT 5 does not allow (``reason``: the reason code to close with)."""

    def __init__(self, reason: int, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# ---------------------------------------------------------------------- primitives (1.5)


def varint(value: int) -> bytes:
    """A Variable Byte Integer (1.5.5): seven bits a byte, least significant first."""
    if not 0 <= value <= MAX_REMAINING:
        raise ValueError(f"{value} does not fit a Variable Byte Integer")
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(buf: bytes | bytearray, pos: int, end: int) -> tuple[int, int]:
    """The Variable Byte Integer at ``pos``, and where it ends; malformed past four bytes."""
    value, shift = 0, 0
    while True:
        if pos >= end:
            raise ProtocolError(MALFORMED_PACKET, "a Variable Byte Integer runs past its packet")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 21:
            raise ProtocolError(MALFORMED_PACKET, "a Variable Byte Integer of over four bytes")


def utf8(text: str) -> bytes:
    """A UTF-8 Encoded String (1.5.4): its length in two bytes, then its bytes."""
    data = text.encode()
    if len(data) > 0xFFFF:
        raise ValueError("a string of over 65,535 bytes")
    if "\x00" in text:
        raise ValueError("a string holding U+0000")  # 1.5.4: must not be included
    return _U16.pack(len(data)) + data


def binary(data: bytes) -> bytes:
    """Binary Data (1.5.6): its length in two bytes, then the bytes."""
    if len(data) > 0xFFFF:
        raise ValueError("binary data of over 65,535 bytes")
    return _U16.pack(len(data)) + data


def _read_u16(buf: bytes | bytearray, pos: int, end: int) -> int:
    if pos + 2 > end:
        raise ProtocolError(MALFORMED_PACKET, "a two-byte integer runs past its packet")
    return (buf[pos] << 8) | buf[pos + 1]


def _read_binary(buf: bytes | bytearray, pos: int, end: int) -> tuple[bytes, int]:
    length = _read_u16(buf, pos, end)
    start, stop = pos + 2, pos + 2 + length
    if stop > end:
        raise ProtocolError(MALFORMED_PACKET, "a string runs past its packet")
    return bytes(buf[start:stop]), stop


def _read_utf8(buf: bytes | bytearray, pos: int, end: int) -> tuple[str, int]:
    data, pos = _read_binary(buf, pos, end)
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise ProtocolError(MALFORMED_PACKET, "a string that is not UTF-8") from None
    if "\x00" in text:
        raise ProtocolError(MALFORMED_PACKET, "a string holding U+0000")
    return text, pos


# ---------------------------------------------------------------------- properties (2.2.2)

_BYTE, _U16_KIND, _U32_KIND, _VARINT, _STRING, _BINARY, _PAIR = range(7)

#: Property identifier → (its kind, the Properties field it fills or None: read and dropped).
_PROPERTIES: dict[int, tuple[int, str | None]] = {
    0x01: (_BYTE, "payload_format"),
    0x02: (_U32_KIND, "message_expiry"),
    0x03: (_STRING, "content_type"),
    0x08: (_STRING, "response_topic"),
    0x09: (_BINARY, "correlation_data"),
    0x0B: (_VARINT, "subscription_ids"),
    0x11: (_U32_KIND, "session_expiry"),
    0x12: (_STRING, "assigned_client_id"),
    0x13: (_U16_KIND, "server_keep_alive"),
    0x15: (_STRING, None),  # Authentication Method
    0x16: (_BINARY, None),  # Authentication Data
    0x17: (_BYTE, None),  # Request Problem Information
    0x18: (_U32_KIND, None),  # Will Delay Interval
    0x19: (_BYTE, None),  # Request Response Information
    0x1A: (_STRING, None),  # Response Information
    0x1C: (_STRING, None),  # Server Reference
    0x1F: (_STRING, "reason_string"),
    0x21: (_U16_KIND, "receive_maximum"),
    0x22: (_U16_KIND, "topic_alias_maximum"),
    0x23: (_U16_KIND, "topic_alias"),
    0x24: (_BYTE, "maximum_qos"),
    0x25: (_BYTE, "retain_available"),
    0x26: (_PAIR, "user"),
    0x27: (_U32_KIND, "maximum_packet_size"),
    0x28: (_BYTE, None),  # Wildcard Subscription Available
    0x29: (_BYTE, None),  # Subscription Identifier Available
    0x2A: (_BYTE, None),  # Shared Subscription Available
}

#: The properties a tablectl client sends, in identifier order: (field, identifier, encoder).
_SENT: tuple[tuple[str, int, Callable[[Any], bytes]], ...] = (
    ("payload_format", 0x01, lambda v: bytes((v,))),
    ("message_expiry", 0x02, _U32.pack),
    ("content_type", 0x03, utf8),
    ("response_topic", 0x08, utf8),
    ("correlation_data", 0x09, binary),
    ("session_expiry", 0x11, _U32.pack),
    ("receive_maximum", 0x21, _U16.pack),
    ("maximum_packet_size", 0x27, _U32.pack),
)


def encode_properties(properties: Properties | None) -> bytes:
    """A property list (2.2.2): its length as a Variable Byte Integer, then each property."""
    if properties is None:
        return b"\x00"
    body = bytearray()
    for field, identifier, encode in _SENT:
        value = getattr(properties, field)
        if value is not None:
            body.append(identifier)
            body += encode(value)
    for key, value in properties.user:
        body.append(0x26)
        body += utf8(key) + utf8(value)
    return varint(len(body)) + body


def decode_properties(raw: bytes | bytearray, pos: int = 0, end: int | None = None) -> Properties:
    """The properties of a property list's body (its length already read)."""
    end = len(raw) if end is None else end
    found: dict[str, Any] = {}
    users: list[tuple[str, str]] = []
    subscriptions: list[int] = []
    while pos < end:
        identifier, pos = read_varint(raw, pos, end)
        known = _PROPERTIES.get(identifier)
        if known is None:
            raise ProtocolError(MALFORMED_PACKET, f"an unknown property 0x{identifier:02x}")
        kind, field = known
        value: Any
        if kind == _BYTE:
            if pos >= end:
                raise ProtocolError(MALFORMED_PACKET, "a property runs past its packet")
            value, pos = raw[pos], pos + 1
        elif kind == _U16_KIND:
            value, pos = _read_u16(raw, pos, end), pos + 2
        elif kind == _U32_KIND:
            if pos + 4 > end:
                raise ProtocolError(MALFORMED_PACKET, "a property runs past its packet")
            value, pos = _U32.unpack_from(raw, pos)[0], pos + 4
        elif kind == _VARINT:
            value, pos = read_varint(raw, pos, end)
        elif kind == _STRING:
            value, pos = _read_utf8(raw, pos, end)
        elif kind == _BINARY:
            value, pos = _read_binary(raw, pos, end)
        else:
            key, pos = _read_utf8(raw, pos, end)
            text, pos = _read_utf8(raw, pos, end)
            value = (key, text)
        if field == "user":
            users.append(value)
        elif field == "subscription_ids":
            subscriptions.append(value)
        elif field is not None:
            if field in found:  # 2.2.2.2: a property other than these two appears once
                raise ProtocolError(PROTOCOL_ERROR, f"property 0x{identifier:02x} given twice")
            found[field] = value
    return Properties(**found, user=tuple(users), subscription_ids=tuple(subscriptions))


# ---------------------------------------------------------------------- sending


def _packet(first: int, *parts: bytes) -> bytes:
    body = b"".join(parts)
    return bytes((first,)) + varint(len(body)) + body


def connect(
    *,
    client_id: str,
    keepalive: int,
    clean_start: bool,
    username: str | None,
    password: str | None,
    will: Will | None,
    properties: Properties | None,
) -> bytes:
    """CONNECT (3.1): protocol name "MQTT", level 5, flags, Keep Alive, properties; then the
    Client Identifier, the Will, the User Name and the Password, in that order (3.1.3)."""
    if not 0 <= keepalive <= 0xFFFF:
        raise ValueError("keepalive must be 0-65535 seconds")
    flags = 0x02 if clean_start else 0
    payload = [utf8(client_id)]
    if will is not None:
        if will.qos not in (0, 1, 2):
            raise ValueError("a Will's QoS is 0, 1 or 2")
        flags |= 0x04 | (will.qos << 3) | (0x20 if will.retain else 0)
        payload += [b"\x00", utf8(will.topic), binary(will.payload)]
    if username is not None:
        flags |= 0x80
        payload.append(utf8(username))
    if password is not None:
        flags |= 0x40
        payload.append(binary(password.encode()))
    header = b"\x00\x04MQTT\x05" + bytes((flags,)) + _U16.pack(keepalive)
    return _packet(CONNECT << 4, header, encode_properties(properties), *payload)


def publish(
    topic: str,
    payload: bytes,
    qos: int,
    retain: bool,
    mid: int,
    properties: Properties | None = None,
    *,
    dup: bool = False,
) -> bytes:
    """PUBLISH (3.3): the flags in the fixed header, the Topic Name, the Packet Identifier
    (QoS > 0 only), the properties, the payload."""
    if qos not in (0, 1):
        raise ValueError("tablectl publishes at QoS 0 or 1")
    if not topic or "+" in topic or "#" in topic:
        raise ValueError(f"{topic!r} is not a topic name (4.7.3: no wildcards, not empty)")
    first = (PUBLISH << 4) | (0x08 if dup else 0) | (qos << 1) | (1 if retain else 0)
    ident = _U16.pack(mid) if qos else b""
    return _packet(first, utf8(topic), ident, encode_properties(properties), payload)


def puback(mid: int) -> bytes:
    """PUBACK (3.4) with reason 0x00 and no properties: both may be left out (3.4.2.1)."""
    return b"\x40\x02" + _U16.pack(mid)


def subscribe(mid: int, topic: str, options: SubscribeOptions) -> bytes:
    """SUBSCRIBE (3.8): fixed-header flags 0010, the Packet Identifier, no properties, one
    Topic Filter and its Subscription Options byte (3.8.3.1)."""
    if not topic:
        raise ValueError("an empty topic filter")
    if options.qos not in (0, 1):
        raise ValueError("tablectl subscribes at QoS 0 or 1")
    byte = (
        options.qos
        | (0x04 if options.no_local else 0)
        | (0x08 if options.retain_as_published else 0)
        | (options.retain_handling << 4)
    )
    return _packet((SUBSCRIBE << 4) | 0x02, _U16.pack(mid), b"\x00", utf8(topic), bytes((byte,)))


def unsubscribe(mid: int, topic: str) -> bytes:
    """UNSUBSCRIBE (3.10): fixed-header flags 0010, the Packet Identifier, no properties, the
    Topic Filter."""
    return _packet((UNSUBSCRIBE << 4) | 0x02, _U16.pack(mid), b"\x00", utf8(topic))


def disconnect(reason: int = NORMAL) -> bytes:
    """DISCONNECT (3.14); reason 0x00 with no properties is sent as the two bytes alone."""
    if reason == NORMAL:
        return b"\xe0\x00"
    return b"\xe0\x01" + bytes((reason,))


# ---------------------------------------------------------------------- receiving


class Message:
    """A PUBLISH received. Its properties are decoded when first read: most readers never do."""

    __slots__ = ("_properties", "mid", "payload", "qos", "retain", "topic")

    def __init__(
        self,
        topic: Topic,
        payload: bytes,
        qos: int,
        retain: bool,
        mid: int,
        properties: Properties | bytes | None = None,
    ) -> None:
        self.topic, self.payload, self.qos, self.retain, self.mid = topic, payload, qos, retain, mid
        self._properties = properties

    @property
    def properties(self) -> Properties | None:
        """Its properties (None: it had none); malformed ones are an :class:`MqttError`."""
        found = self._properties
        if isinstance(found, bytes):
            found = self._properties = decode_properties(found)
        return found

    def __repr__(self) -> str:
        return f"Message({self.topic.value!r}, {len(self.payload)} bytes, qos={self.qos})"


class ConnAck(NamedTuple):
    """CONNACK (3.2)."""

    session_present: bool
    reason: int
    properties: Properties


class Ack(NamedTuple):
    """PUBACK (3.4), SUBACK (3.9) or UNSUBACK (3.11): ``kind`` and its Packet Identifier; one
    reason code (PUBACK) or one a topic filter (SUBACK, UNSUBACK)."""

    kind: int
    mid: int
    reasons: tuple[int, ...]


class PingResp(NamedTuple):
    """PINGRESP (3.13)."""


class Disconnect(NamedTuple):
    """DISCONNECT (3.14) from the broker: why, in its words when it gave them."""

    reason: int
    properties: Properties


Packet = Message | ConnAck | Ack | PingResp | Disconnect

#: The fixed-header flags each packet type must carry (2.1.3; PUBLISH's are its own).
_FLAGS = {CONNACK: 0, PUBACK: 0, SUBACK: 0, UNSUBACK: 0, PINGRESP: 0, DISCONNECT: 0}


class Decoder:
    """Bytes as they come off the connection in, whole packets out (:meth:`feed`).

    A packet cut across reads waits in the buffer for the rest. A packet MQTT 5 does not allow
    raises :class:`ProtocolError`; the client then closes the connection (4.13), and the
    decoder is not used again.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes | bytearray | memoryview) -> list[Packet]:
        """The packets completed by ``data``, in order."""
        buf = self._buffer
        buf += data
        packets: list[Packet] = []
        pos, size = 0, len(buf)
        try:
            while size - pos >= 2:
                first = buf[pos]
                # the Remaining Length, inline: this runs once a message
                length, i, shift = 0, pos + 1, 0
                while True:
                    if i >= size:
                        return packets  # its length is not all here yet
                    byte = buf[i]
                    i += 1
                    length |= (byte & 0x7F) << shift
                    if byte < 0x80:
                        break
                    shift += 7
                    if shift > 21:
                        raise ProtocolError(MALFORMED_PACKET, "a Remaining Length of over 4 bytes")
                end = i + length
                if end > size:
                    return packets  # the rest is still to come
                if first >> 4 == PUBLISH:
                    packets.append(_publish(buf, first, i, end))
                else:
                    packets.append(_other(buf, first, i, end))
                pos = end
            return packets
        finally:
            del buf[:pos]


def _publish(buf: bytearray, first: int, pos: int, end: int) -> Message:
    """PUBLISH (3.3): the message, its properties kept as bytes until read."""
    qos = (first >> 1) & 0x03
    if qos == 3:
        raise ProtocolError(MALFORMED_PACKET, "a PUBLISH of QoS 3 (3.3.1.2)")
    if qos == 2:
        raise ProtocolError(PROTOCOL_ERROR, "a PUBLISH of QoS 2, above every subscription's")
    if pos + 2 > end:
        raise ProtocolError(MALFORMED_PACKET, "a PUBLISH without a topic")
    stop = pos + 2 + ((buf[pos] << 8) | buf[pos + 1])
    if stop > end:
        raise ProtocolError(MALFORMED_PACKET, "a PUBLISH's topic runs past its packet")
    try:
        topic = buf[pos + 2 : stop].decode()
    except UnicodeDecodeError:
        raise ProtocolError(MALFORMED_PACKET, "a topic that is not UTF-8") from None
    if not topic:  # a Topic Alias would be the only way, and this client allows none (3.3.2.3.4)
        raise ProtocolError(PROTOCOL_ERROR, "a PUBLISH with an empty topic and no alias allowed")
    mid = 0
    if qos:
        if stop + 2 > end:
            raise ProtocolError(MALFORMED_PACKET, "a PUBLISH without its Packet Identifier")
        mid = (buf[stop] << 8) | buf[stop + 1]
        stop += 2
    if stop < end and buf[stop] < 0x80:  # the usual property length: one byte
        length, stop = buf[stop], stop + 1
    else:
        length, stop = read_varint(buf, stop, end)
    payload_at = stop + length
    if payload_at > end:
        raise ProtocolError(MALFORMED_PACKET, "a PUBLISH's properties run past its packet")
    raw = bytes(buf[stop:payload_at]) if length else None
    return Message(Topic(topic), bytes(buf[payload_at:end]), qos, bool(first & 0x01), mid, raw)


def _other(buf: bytearray, first: int, pos: int, end: int) -> Packet:
    kind, flags = first >> 4, first & 0x0F
    if _FLAGS.get(kind) != flags:
        raise ProtocolError(MALFORMED_PACKET, f"a packet of type {kind} a client cannot get")
    if kind == PUBACK:
        mid = _read_u16(buf, pos, end)
        reason = buf[pos + 2] if pos + 2 < end else NORMAL  # 3.4.2.1: may be left out
        return Ack(PUBACK, mid, (reason,))
    if kind in (SUBACK, UNSUBACK):
        mid = _read_u16(buf, pos, end)
        length, pos = read_varint(buf, pos + 2, end)
        return Ack(kind, mid, tuple(buf[pos + length : end]))
    if kind == CONNACK:
        if pos + 2 > end:
            raise ProtocolError(MALFORMED_PACKET, "a CONNACK of under two bytes")
        acknowledge, reason = buf[pos], buf[pos + 1]
        properties = Properties()
        if pos + 2 < end:
            length, at = read_varint(buf, pos + 2, end)
            properties = decode_properties(buf, at, at + length)
        return ConnAck(bool(acknowledge & 0x01), reason, properties)
    if kind == PINGRESP:
        return PingResp()
    # DISCONNECT: reason 0x00 when left out (3.14.2.1)
    reason = buf[pos] if pos < end else NORMAL
    properties = Properties()
    if pos + 1 < end:
        length, at = read_varint(buf, pos + 1, end)
        properties = decode_properties(buf, at, at + length)
    return Disconnect(reason, properties)
