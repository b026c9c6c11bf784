"""What the MQTT client takes and gives: its errors, the Will, TLS settings, a received message,
and the properties of a PUBLISH or a CONNECT (built with paho's public ``Properties``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

#: A socket option the client sets on its connection: level, option, value.
SocketOption = tuple[int, int, int]


class MqttError(Exception):
    """The connection to the broker failed, was lost, or an operation on it timed out."""


class MqttCodeError(MqttError):
    """The broker or paho refused an operation with a reason code."""

    def __init__(self, rc: int | ReasonCode, message: str) -> None:
        super().__init__(f"{message}: {_describe(rc)}")
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


class Topic(NamedTuple):
    """A message's topic name."""

    value: str

    def matches(self, pattern: str) -> bool:
        """Whether a subscription to ``pattern`` (``+`` and ``#`` wildcards) takes it."""
        return paho.topic_matches_sub(pattern, self.value)


@dataclass(frozen=True, slots=True)
class Message:
    """A PUBLISH received."""

    topic: Topic
    payload: bytes
    qos: int
    retain: bool
    mid: int
    properties: Properties | None


def publish_properties(
    *,
    content_type: str | None = None,
    user: tuple[str, str] | None = None,
    correlation: bytes | None = None,
) -> Properties:
    """PUBLISH properties carrying what is given."""
    properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    if content_type is not None:
        properties.ContentType = content_type
    if user is not None:
        properties.UserProperty = [user]
    if correlation is not None:
        properties.CorrelationData = correlation
    return properties


def connect_properties(*, session_expiry: int, receive_maximum: int) -> Properties:
    """CONNECT properties: how long the broker keeps the session, how many QoS 1 messages it
    may send before the first is acknowledged."""
    properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
    properties.SessionExpiryInterval = session_expiry
    properties.ReceiveMaximum = receive_maximum
    return properties


def _describe(rc: int | ReasonCode) -> str:
    if isinstance(rc, ReasonCode):
        return f"{rc} ({rc.value})"
    return f"{paho.error_string(rc)} ({rc})"
