"""The PUBLISH properties the table packs itself are the bytes paho would have packed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.shell.properties import ReceivedProperties, packed, read_properties_once

text = st.text(max_size=300)


def _paho(
    content_type: str | None, user: tuple[str, str] | None, correlation: bytes | None
) -> bytes:
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    if content_type is not None:
        props.ContentType = content_type
    if correlation is not None:
        props.CorrelationData = correlation
    if user is not None:
        props.UserProperty = [user]
    out: bytes = props.pack()  # type: ignore[no-untyped-call]
    return out


@given(
    st.none() | text,
    st.none() | st.tuples(text, text),
    st.none() | st.binary(max_size=300),
)
def test_packed_properties_are_the_bytes_paho_packs(
    content_type: str | None, user: tuple[str, str] | None, correlation: bytes | None
) -> None:
    mine = packed(content_type=content_type, user=user, correlation=correlation).pack()
    assert mine == _paho(content_type, user, correlation)


def test_packed_properties_read_back_with_paho() -> None:
    mine = packed(content_type="application/json", user=("event_id", "T1:e:7")).pack()
    back = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    back.unpack(mine)  # type: ignore[no-untyped-call]
    assert getattr(back, "ContentType") == "application/json"  # noqa: B009 (paho is untyped)
    assert getattr(back, "UserProperty") == [("event_id", "T1:e:7")]  # noqa: B009


def test_a_field_longer_than_mqtt_allows_is_refused() -> None:
    with pytest.raises(ValueError, match="65535"):
        packed(correlation=b"x" * 70000)


@given(
    st.none() | text,
    st.none() | st.tuples(text, text),
    st.none() | st.binary(max_size=300),
    st.binary(max_size=50),
)
def test_received_properties_read_what_paho_reads(
    content_type: str | None,
    user: tuple[str, str] | None,
    correlation: bytes | None,
    after: bytes,
) -> None:
    sent = _paho(content_type, user, correlation)
    theirs = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    try:
        their_length = theirs.unpack(sent + after)[1]  # type: ignore[no-untyped-call]
    except Exception as refused:  # e.g. a NUL in a string: MQTT forbids it
        with pytest.raises(type(refused)):
            ReceivedProperties(PacketTypes.PUBLISH).unpack(sent + after)
        return
    mine, my_length = ReceivedProperties(PacketTypes.PUBLISH).unpack(sent + after)
    assert my_length == their_length == len(sent)
    assert mine.json() == theirs.json()  # type: ignore[no-untyped-call]


def test_paho_decodes_a_publish_with_received_properties() -> None:
    from paho.mqtt import _packet
    from paho.mqtt.enums import MQTTProtocolVersion

    before = _packet.Properties  # type: ignore[attr-defined]
    try:
        read_properties_once()
        props = packed(content_type="application/json", user=("event_id", "T1:e:7")).pack()
        body = len(b"t/1").to_bytes(2, "big") + b"t/1" + (7).to_bytes(2, "big") + props + b"{}"
        decoded = _packet.decode_publish(0x32, body, MQTTProtocolVersion.MQTTv5)
        assert isinstance(decoded.properties, ReceivedProperties)
        assert (decoded.topic, decoded.mid, decoded.payload) == (b"t/1", 7, b"{}")
        user = getattr(decoded.properties, "UserProperty")  # noqa: B009 (paho is untyped)
        assert user == [("event_id", "T1:e:7")]
    finally:
        _packet.Properties = before  # type: ignore[attr-defined]
