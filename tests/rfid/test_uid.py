"""Tag UID spelling shared by readers and deck manifests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.uids import UidError, is_uid, normalize_uid, uid_from_bytes, uid_to_bytes

uid_bytes = st.sampled_from([4, 7, 8, 10]).flatmap(lambda n: st.binary(min_size=n, max_size=n))


@pytest.mark.parametrize(
    "text",
    [
        "04a1b2c3d4e580",
        "04A1B2C3D4E580",
        "04:a1:b2:c3:d4:e5:80",
        "04-A1-b2-C3-d4-E5-80",
        " 04 a1 b2 c3 d4 e5 80 ",
    ],
)
def test_every_common_spelling_normalizes_to_lowercase_compact_hex(text: str) -> None:
    assert normalize_uid(text) == "04a1b2c3d4e580"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "hex bytes"),
        ("04a1b2c3d4e58", "hex bytes"),
        ("zz112233", "hex bytes"),
        ("0102", "not 2"),
    ],
)
def test_non_uids_are_refused_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(UidError, match=message):
        normalize_uid(text)
    assert not is_uid(text)


def test_iso15693_uids_read_lsb_first_are_turned_around() -> None:
    on_air = bytes.fromhex("78563412000104e0")
    assert uid_from_bytes(on_air, lsb_first=True) == "e004010012345678"


def test_uid_bytes_of_an_unknown_size_are_refused() -> None:
    with pytest.raises(UidError, match="not 5"):
        uid_from_bytes(b"\x01\x02\x03\x04\x05")


@given(uid_bytes)
def test_text_and_bytes_round_trip(data: bytes) -> None:
    text = uid_from_bytes(data)
    assert text == text.lower() == normalize_uid(text.upper())
    assert uid_to_bytes(text) == data
    assert is_uid(":".join(text[i : i + 2] for i in range(0, len(text), 2)))
