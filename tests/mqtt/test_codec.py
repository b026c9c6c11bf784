"""The MQTT 5 packets (controller/mqtt/codec.py) from their bytes: the standard's own examples,
every packet a client sends decoded back, any bytes at all either decoded or refused with a
protocol error (a broker's bytes, however malformed, never raise anything else), and topic
matching against paho-mqtt's, an independent implementation."""

from __future__ import annotations

import paho.mqtt.client as paho
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.mqtt import Properties, SubscribeOptions, Topic, Will, codec
from controller.mqtt.codec import (
    Ack,
    ConnAck,
    Decoder,
    Disconnect,
    Message,
    PingResp,
    ProtocolError,
)

# The standard's table of Variable Byte Integers (1.5.5): each size's smallest and largest.
VARINTS = [
    (0, "00"),
    (127, "7f"),
    (128, "8001"),
    (16_383, "ff7f"),
    (16_384, "808001"),
    (2_097_151, "ffff7f"),
    (2_097_152, "80808001"),
    (268_435_455, "ffffff7f"),
]


@pytest.mark.parametrize(("value", "encoded"), VARINTS)
def test_a_variable_byte_integer_is_the_standards(value: int, encoded: str) -> None:
    assert codec.varint(value).hex() == encoded
    assert codec.read_varint(bytes.fromhex(encoded), 0, len(encoded) // 2) == (
        value,
        len(encoded) // 2,
    )


def test_a_variable_byte_integer_past_four_bytes_is_malformed() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        codec.varint(268_435_456)
    with pytest.raises(ProtocolError) as raised:
        codec.read_varint(bytes.fromhex("ffffffff7f"), 0, 5)
    assert raised.value.reason == codec.MALFORMED_PACKET


def test_a_connect_s_variable_header_is_the_standards_example() -> None:
    """3.1.2.12's non-normative example: protocol name, level 5, flags 0xCE (User Name,
    Password, Will QoS 1, Will, Clean Start), Keep Alive 10, then a property list of 5 bytes:
    Session Expiry Interval 10."""
    packet = codec.connect(
        client_id="",
        keepalive=10,
        clean_start=True,
        username="u",
        password="p",
        will=Will("w", b"gone", qos=1, retain=False),
        properties=Properties(session_expiry=10),
    )
    assert packet[0] == 0x10
    length, start = codec.read_varint(packet, 1, len(packet))
    assert start + length == len(packet)
    assert packet[start : start + 16] == bytes.fromhex("00044d515454 05 ce 000a 05 110000000a")
    # then the payload (3.1.3): client id, Will properties, Will topic and payload, user, password
    assert packet[start + 16 :] == bytes.fromhex("0000 00 000177 0004676f6e65 000175 000170")


def test_a_connect_without_login_or_will_sets_clean_start_only() -> None:
    packet = codec.connect(
        client_id="table-1",
        keepalive=60,
        clean_start=False,
        username=None,
        password=None,
        will=None,
        properties=None,
    )
    assert (
        packet == bytes.fromhex("1014") + b"\x00\x04MQTT\x05\x00\x00\x3c\x00" + b"\x00\x07table-1"
    )


def test_the_fixed_packets_are_the_standards() -> None:
    assert bytes.fromhex("c000") == codec.PINGREQ_BYTES  # 3.12
    assert codec.puback(0x1234) == bytes.fromhex("40021234")  # 3.4, reason 0x00 left out
    assert codec.disconnect() == bytes.fromhex("e000")  # 3.14.2.1
    assert codec.disconnect(0x81) == bytes.fromhex("e00181")
    # 3.8: flags 0010, id, no properties, filter, options (QoS 1, No Local, Retain As Published)
    options = SubscribeOptions(qos=1, no_local=True, retain_as_published=True)
    assert codec.subscribe(7, "a/+", options) == bytes.fromhex("8209 0007 00 0003 612f2b 0d")
    assert codec.unsubscribe(7, "a/#") == bytes.fromhex("a208 0007 00 0003 612f23")  # 3.10


topics = st.text(
    st.characters(exclude_characters="+#\x00", exclude_categories=["Cs"]),
    min_size=1,
    max_size=80,
)
strings = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=40)
properties = (
    st.builds(
        Properties,
        content_type=st.none() | strings,
        correlation_data=st.none() | st.binary(max_size=64),
        user=st.lists(st.tuples(strings, strings), max_size=3).map(tuple),
        message_expiry=st.none() | st.integers(0, 2**32 - 1),
    )
    | st.none()
)


@given(
    topic=topics,
    payload=st.binary(max_size=300),
    qos=st.sampled_from([0, 1]),
    retain=st.booleans(),
    mid=st.integers(1, 65535),
    sent=properties,
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
def test_a_publish_decodes_to_what_was_sent_however_its_bytes_are_cut(
    topic: str,
    payload: bytes,
    qos: int,
    retain: bool,
    mid: int,
    sent: Properties | None,
    cuts: list[int],
) -> None:
    packet = codec.publish(topic, payload, qos, retain, mid, sent) + codec.puback(9)
    decoder, got = Decoder(), []
    start = 0
    for cut in [*sorted(c for c in cuts if c < len(packet)), len(packet)]:
        got += decoder.feed(packet[start:cut])
        start = cut
    message, ack = got
    assert isinstance(message, Message)
    assert (message.topic, message.payload, message.qos, message.retain) == (
        Topic(topic),
        payload,
        qos,
        retain,
    )
    assert message.mid == (mid if qos else 0)
    expected = sent if sent is not None and sent != Properties() else None
    assert message.properties == expected
    assert ack == Ack(codec.PUBACK, 9, (0,))


@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=4))
def test_any_bytes_from_a_broker_decode_or_raise_a_protocol_error_only(
    data: bytes, cuts: list[int]
) -> None:
    decoder = Decoder()
    start = 0
    try:
        for cut in [*sorted(c for c in cuts if c < len(data)), len(data)]:
            for packet in decoder.feed(data[start:cut]):
                if isinstance(packet, Message):
                    packet.properties  # noqa: B018 (decoded when read: may be malformed)
            start = cut
    except ProtocolError as exc:
        refused: int | None = exc.reason
    else:
        refused = None
    assert refused in (None, codec.MALFORMED_PACKET, codec.PROTOCOL_ERROR)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("30ffffffff7f", "Remaining Length of over 4 bytes"),
        ("3603000161", "QoS 3"),
        ("34050001610001", "QoS 2"),
        ("3003000561", "past its packet"),
        ("30050002c32800", "not UTF-8"),
        ("3003000000", "empty topic"),
        ("50020001", "cannot get"),  # PUBREC: nothing is sent at QoS 2
        ("1000", "cannot get"),  # a CONNECT, from the broker
        ("c000", "cannot get"),  # a PINGREQ, from the broker
    ],
)
def test_a_malformed_or_forbidden_packet_is_a_protocol_error(data: str, why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        Decoder().feed(bytes.fromhex(data))


def test_a_publish_s_malformed_properties_are_an_error_when_read_not_when_received() -> None:
    packet = bytes.fromhex("3007 000161 02 7f00 78")  # property 0x7f: unknown
    (message,) = Decoder().feed(packet)
    assert isinstance(message, Message)
    assert message.payload == b"x"
    with pytest.raises(ProtocolError, match="unknown property"):
        message.properties  # noqa: B018


def test_a_property_given_twice_is_a_protocol_error() -> None:
    body = bytes.fromhex("03000161 03000162")  # Content Type, twice
    with pytest.raises(ProtocolError, match="twice"):
        codec.decode_properties(body)


def test_the_acknowledgements_a_client_gets_decode() -> None:
    decoder = Decoder()
    got = decoder.feed(
        bytes.fromhex("2003 00 00 00")  # CONNACK: no session, success, no properties
        + bytes.fromhex("2009 01 00 06 210014 130005")  # session, Receive Maximum, Keep Alive
        + bytes.fromhex("4003 0001 87")  # PUBACK 1, Not authorized
        + bytes.fromhex("9005 0002 00 0180")  # SUBACK 2: QoS 1 granted, then refused
        + bytes.fromhex("b004 0003 00 00")  # UNSUBACK 3: success
        + bytes.fromhex("d000")  # PINGRESP
        + bytes.fromhex("e009 8b 07 1f000462796521")  # DISCONNECT: shutting down, "bye!"
    )
    assert got[0] == ConnAck(False, 0, Properties())
    assert got[1] == ConnAck(True, 0, Properties(receive_maximum=20, server_keep_alive=5))
    assert got[2] == Ack(codec.PUBACK, 1, (0x87,))
    assert got[3] == Ack(codec.SUBACK, 2, (0x01, 0x80))
    assert got[4] == Ack(codec.UNSUBACK, 3, (0,))
    assert got[5] == PingResp()
    assert got[6] == Disconnect(0x8B, Properties(reason_string="bye!"))


def test_what_a_client_may_not_send_is_refused_before_it_is_sent() -> None:
    with pytest.raises(ValueError, match="not a topic name"):
        codec.publish("a/+", b"", 0, False, 0)
    with pytest.raises(ValueError, match="QoS 0 or 1"):
        codec.publish("a", b"", 2, False, 1)
    with pytest.raises(ValueError, match="U\\+0000"):
        codec.utf8("a\x00b")
    with pytest.raises(ValueError, match="65,535"):
        codec.binary(b"x" * 65_536)


# 4.7's examples, then paho-mqtt's matcher on any topic and filter
@pytest.mark.parametrize(
    ("name", "pattern", "matches"),
    [
        ("sport/tennis/player1", "sport/tennis/player1/#", True),
        ("sport/tennis/player1/ranking", "sport/tennis/player1/#", True),
        ("sport/tennis/player1/score/wimbledon", "sport/tennis/player1/#", True),
        ("sport", "sport/#", True),
        ("sport/tennis/player1/ranking", "sport/tennis/+", False),
        ("sport/tennis/player2", "sport/tennis/+", True),
        ("sport", "sport/+", False),
        ("sport/", "sport/+", True),
        ("/finance", "+/+", True),
        ("/finance", "/+", True),
        ("/finance", "+", False),
        ("$SYS/monitor/Clients", "#", False),
        ("$SYS/monitor/Clients", "+/monitor/Clients", False),
        ("$SYS/monitor/Clients", "$SYS/#", True),
        ("$SYS/monitor/Clients", "$SYS/monitor/+", True),
    ],
)
def test_a_topic_matches_as_the_standard_says(name: str, pattern: str, matches: bool) -> None:
    assert Topic(name).matches(pattern) is matches


levels = st.lists(st.sampled_from(["a", "b", "", "$x"]), min_size=1, max_size=4)
filters = st.lists(st.sampled_from(["a", "b", "", "+", "$x"]), min_size=1, max_size=4).flatmap(
    lambda parts: st.sampled_from([parts, [*parts, "#"]])
)


@given(levels, filters)
def test_a_topic_matches_as_paho_s_matcher_says(name: list[str], pattern: list[str]) -> None:
    topic, sub = "/".join(name), "/".join(pattern)
    assert Topic(topic).matches(sub) is paho.topic_matches_sub(sub, topic)
