"""The PUBLISH properties the table packs itself are the bytes paho would have packed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.shell.properties import packed

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
