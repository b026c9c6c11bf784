"""JSON from outside: finite numbers only (RFC 8259 §6), everything else as json.loads."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller import strict_json

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@given(VALUES)
def test_whatever_json_can_hold_reads_back_the_same(value: object) -> None:
    assert strict_json.loads(json.dumps(value)) == value


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "[Infinity]",
        '{"a": -Infinity}',
        "1e999999",
        '{"amount": -1.5e400}',
        "[1, 2, 9" + "9" * 400 + ".0]",
    ],
)
def test_numbers_json_cannot_hold_are_refused(text: str) -> None:
    json.loads(text)  # Python's own parser takes it
    with pytest.raises(ValueError, match=r"not a JSON number|not finite"):
        strict_json.loads(text)
