"""What the MQTT client takes and gives: its errors, the Will, TLS settings, properties and
subscription options (MQTT 5.0, 2.2.2 and 3.8.3.1), a topic and a delivery. A received message
is :class:`controller.mqtt.codec.Message`: the decoder makes it, its properties decoded when read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import asyncio

#: A socket option the client sets on its connection: level, option, value.
SocketOption = tuple[int, int, int]

#: Reason codes (MQTT 5.0, 2.4) by their names in the standard, for the errors' words.
REASONS = {
    0x00: "Success",
    0x04: "Disconnect with Will Message",
    0x10: "No matching subscribers",
    0x80: "Unspecified error",
    0x81: "Malformed Packet",
    0x82: "Protocol Error",
    0x83: "Implementation specific error",
    0x84: "Unsupported Protocol Version",
    0x85: "Client Identifier not valid",
    0x86: "Bad User Name or Password",
    0x87: "Not authorized",
    0x88: "Server unavailable",
    0x89: "Server busy",
    0x8A: "Banned",
    0x8B: "Server shutting down",
    0x8C: "Bad authentication method",
    0x8D: "Keep Alive timeout",
    0x8E: "Session taken over",
    0x8F: "Topic Filter invalid",
    0x90: "Topic Name invalid",
    0x91: "Packet Identifier in use",
    0x93: "Receive Maximum exceeded",
    0x94: "Topic Alias invalid",
    0x95: "Packet too large",
    0x97: "Quota exceeded",
    0x98: "Administrative action",
    0x99: "Payload format invalid",
    0x9A: "Retain not supported",
    0x9B: "QoS not supported",
    0x9C: "Use another server",
    0x9D: "Server moved",
    0x9E: "Shared Subscriptions not supported",
    0x9F: "Connection rate exceeded",
    0xA0: "Maximum connect time",
    0xA1: "Subscription Identifiers not supported",
    0xA2: "Wildcard Subscriptions not supported",
}


class MqttError(Exception):
    """The connection to the broker failed, was lost, or an operation on it timed out."""


class MqttCodeError(MqttError):
    """The broker refused an operation or ended the connection with a reason code (2.4)."""

    def __init__(self, rc: int, message: str) -> None:
        super().__init__(f"{message}: {REASONS.get(rc, 'reason')} (0x{rc:02x})")
        self.rc = rc


class Will(NamedTuple):
    """The Last Will the broker publishes when the connection ends without DISCONNECT."""

    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = True


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """Verify the broker with ``ca_file`` (the system's CAs when None); present a client
    certificate when ``cert_file`` is given; ``insecure`` skips the host-name check only."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure: bool = False


@dataclass(frozen=True, slots=True)
class Properties:
    """The MQTT 5 properties (2.2.2.2) a tablectl process sends or reads; any other property
    received is checked and dropped. None (or empty): not present."""

    payload_format: int | None = None
    message_expiry: int | None = None
    content_type: str | None = None
    response_topic: str | None = None
    correlation_data: bytes | None = None
    subscription_ids: tuple[int, ...] = ()
    session_expiry: int | None = None
    assigned_client_id: str | None = None
    server_keep_alive: int | None = None
    reason_string: str | None = None
    receive_maximum: int | None = None
    topic_alias_maximum: int | None = None
    topic_alias: int | None = None
    maximum_qos: int | None = None
    retain_available: int | None = None
    maximum_packet_size: int | None = None
    user: tuple[tuple[str, str], ...] = field(default=())


@dataclass(frozen=True, slots=True)
class SubscribeOptions:
    """A subscription's options (3.8.3.1): its maximum QoS, No Local, Retain As Published and
    Retain Handling (0: send the retained messages at subscribe)."""

    qos: int = 0
    no_local: bool = False
    retain_as_published: bool = False
    retain_handling: int = 0


class Topic(NamedTuple):
    """A message's topic name."""

    value: str

    def matches(self, pattern: str) -> bool:
        """Whether a subscription to ``pattern`` takes it (4.7: ``+`` one level, ``#`` this
        level and every one below; a name starting with ``$`` is matched by no wildcard at its
        first level, 4.7.2)."""
        name = self.value.split("/")
        levels = pattern.split("/")
        if name[0].startswith("$") and levels[0] in ("+", "#"):
            return False
        for n, level in enumerate(levels):
            if level == "#":
                return n == len(levels) - 1
            if n >= len(name) or (level != "+" and level != name[n]):
                return False
        return len(name) == len(levels)


class Delivery:
    """A message handed to the client: done once written (QoS 0) or once the broker's PUBACK
    came (QoS 1); ``reason`` is the PUBACK's reason code (3.4.2.1)."""

    __slots__ = ("mid", "reason", "waiter")

    def __init__(self, mid: int) -> None:
        self.mid = mid
        self.reason: int | None = None if mid else 0x00
        self.waiter: asyncio.Future[None] | None = None

    def is_published(self) -> bool:
        """Whether it is done."""
        return self.reason is not None


def publish_properties(
    *,
    content_type: str | None = None,
    user: tuple[str, str] | None = None,
    correlation: bytes | None = None,
) -> Properties:
    """PUBLISH properties carrying what is given."""
    return Properties(
        content_type=content_type,
        correlation_data=correlation,
        user=(user,) if user is not None else (),
    )


def connect_properties(*, session_expiry: int, receive_maximum: int) -> Properties:
    """CONNECT properties: how long the broker keeps the session, how many QoS 1 messages it
    may send before the first is acknowledged."""
    return Properties(session_expiry=session_expiry, receive_maximum=receive_maximum)
