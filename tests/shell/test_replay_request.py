"""The replay request's fields and the ranges an answer says are missing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.authority import Role
from controller.shell.gate import Principal, RefusedError, Request
from controller.shell.replay import MAX_EVENTS, _missing, parse


def request(fields: dict[str, object], roles: frozenset[Role] = frozenset({Role.PIT})) -> Request:
    body = {"transaction": "t1", **fields}
    return Request("replay", body, "t1", Principal("pit", "the pit", roles))


def test_fields_are_strict_and_bounded() -> None:
    good = {"pit": "pit-1", "epoch": "e", "from_seq": 3, "to_seq": 5}
    assert parse(request(good)).stream == "public"
    for bad, problem in (
        ({**good, "from_seq": "3"}, "from_seq"),
        ({**good, "to_seq": 2}, "before from_seq"),
        ({**good, "to_seq": 3 + MAX_EVENTS}, f"at most {MAX_EVENTS}"),
        ({**good, "pit": "a/b"}, "pit"),
        ({**good, "extra": 1}, "extra"),
    ):
        with pytest.raises(RefusedError, match=problem):
            parse(request(bad))
    with pytest.raises(RefusedError, match="surveillance"):
        parse(request({**good, "stream": "secure"}))
    both = frozenset({Role.PIT, Role.SURVEILLANCE})
    assert parse(request({**good, "stream": "secure"}, both)).stream == "secure"


@given(
    first=st.integers(min_value=1, max_value=50),
    span=st.integers(min_value=0, max_value=50),
    data=st.data(),
)
def test_missing_ranges_are_exactly_the_seqs_not_found(
    first: int, span: int, data: st.DataObject
) -> None:
    last = first + span
    found = sorted(data.draw(st.sets(st.integers(min_value=first, max_value=last))))
    ranges = _missing(first, last, found)
    covered = {seq for a, b in ranges for seq in range(a, b + 1)}
    assert covered == set(range(first, last + 1)) - set(found)
    assert all(a <= b for a, b in ranges)
