"""The event decoder is the inverse of the event codec (controller/table/decoder.py).

Every record the core can emit, written to an envelope's ``data`` and ``secret`` and through
JSON, reads back to a record that writes the same envelope; data that does not fit its type, and
types nobody knows, read back as :class:`Recorded`, never as a half-filled record.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cards import STANDARD_DECK, Card
from controller.table import event_types as et
from controller.table.decoder import (
    RECORDS,
    RULING_TYPES,
    decode,
    decode_data,
)
from controller.table.events import EventData, Recorded
from controller.table.inputs import ActionKind


def _strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Values of any annotation the event records use."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        present = [a for a in typing.get_args(hint) if a is not type(None)]
        return st.none() | _strategy(present[0])
    if getattr(hint, "__supertype__", None) is str:  # Card
        return st.sampled_from(STANDARD_DECK)
    if hint is bool:
        return st.booleans()
    if hint is int:
        return st.integers(-(2**40), 2**40)
    if hint is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if hint is str:
        return st.text(max_size=12)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    if isinstance(hint, type) and issubclass(hint, EventData):
        return records(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return st.lists(_strategy(args[0]), max_size=4).map(tuple)
    if origin is tuple:
        return st.tuples(*(_strategy(a) for a in args))
    if origin in (Mapping, dict):
        keys = st.integers(1, 10).map(str)
        return st.dictionaries(keys, _strategy(args[1]), max_size=4)
    raise AssertionError(f"no strategy for {hint!r}")


def records(cls: type[EventData]) -> st.SearchStrategy[EventData]:
    hints = typing.get_type_hints(cls)
    fields = {
        name: _strategy(hint) for name, hint in hints.items() if name not in {"TYPE", "RULING"}
    }
    return st.fixed_dictionaries(fields).map(lambda values: cls(**values))


def _through_json(record: EventData) -> tuple[dict[str, Any], dict[str, Any] | None]:
    data = json.loads(json.dumps(record.public()))
    hidden = record.hidden()
    return data, (json.loads(json.dumps(hidden)) if hidden is not None else None)


# 47 types: a few dozen records each tries every field present and absent, and keeps the
# suite's budget for the rules.
@pytest.mark.parametrize("kind", sorted(RECORDS))
@settings(max_examples=30)
@given(data=st.data())
def test_every_event_record_reads_back_to_one_that_writes_the_same_envelope(
    kind: str, data: st.DataObject
) -> None:
    record = data.draw(records(RECORDS[kind]))
    public, hidden = _through_json(record)
    decoded = decode_data(kind, public, hidden)
    assert type(decoded) is RECORDS[kind]
    assert (decoded.public(), decoded.hidden()) == (record.public(), record.hidden())
    # the public stream alone: the same record without its secret fields
    alone = decode({"type": kind, "data": public})
    assert type(alone) is RECORDS[kind]
    assert (alone.public(), alone.hidden()) == (record.public(), None)


def test_the_records_are_the_types_events_md_documents() -> None:
    assert len(RECORDS) == 48
    assert RECORDS["hand.hold"] is et.HandHold
    assert all(kind == cls.TYPE for kind, cls in RECORDS.items())


def test_the_rulings_are_said_once_on_the_records() -> None:
    assert {
        "hand.resume",
        "floor.override",
        "hand.misdeal",
        "hand.void",
        "hand.hold",
        "pot.awarded",
        "betting.action.corrected",
    } == RULING_TYPES


def test_a_hold_in_the_surveillance_view_keeps_both_cards_of_a_shared_key_apart() -> None:
    hold = et.HandHold(
        "h1",
        "SEAT-COUNT",
        "seat 3 holds 3 cards",
        "dead hand",
        3,
        et.HoldEvidence(
            expected=2,
            card=Card("Kd"),
            hidden_card=Card("As"),
            expected_cards=(Card("As"), Card("Kd")),
        ),
    )
    merged = {**hold.public(), **(hold.hidden() or {})}
    decoded = decode({"type": "hand.hold", "data": merged, "secure": True})
    assert isinstance(decoded, et.HandHold)
    # merged, "card" and "expected" hold the secret values: the public ones read as absent
    assert decoded.evidence.hidden_card == "As"
    assert decoded.evidence.expected_cards == ("As", "Kd")
    assert decoded.evidence.expected is None
    assert (decoded.rule, decoded.seat) == ("SEAT-COUNT", 3)


def test_unknown_keys_are_ignored_a_newer_table_may_send_more() -> None:
    decoded = decode_data("hand.resume", {"hold": "h1", "decision": "confirm", "mood": "good"})
    assert isinstance(decoded, et.HandResume)
    assert decoded.hold == "h1"


HOLD = {"hold": "h", "rule": "R", "reason": "r", "ruling": "x"}


@pytest.mark.parametrize(
    ("kind", "data", "problem"),
    [
        ("hand.hold", {"rule": "SEAT-COUNT", "reason": "r", "ruling": "x"}, "hold (missing)"),
        ("hand.hold", {**HOLD, "hold": 7}, "hold (not a string)"),
        ("betting.action", {"seat": 1, "action": "juggle"}, "action (not a ActionKind)"),
        ("pot.awarded", {"pots": [{"amount": "10"}], "payouts": {}}, "pots (amount"),
        (
            "hand.started",
            {"button": 1, "seats": [1, 2], "blinds": [1, 2], "ante": 0, "stacks": {"1": "a"}},
            "stacks (not an integer)",
        ),
        (
            "hand.started",
            {"button": True, "seats": [1], "blinds": [1, 2], "ante": 0, "stacks": {}},
            "button (not an integer)",
        ),
    ],
)
def test_a_required_field_that_does_not_fit_makes_the_event_recorded_not_a_half_record(
    kind: str, data: dict[str, Any], problem: str
) -> None:
    problems: list[str] = []
    decoded = decode_data(kind, data, problems=problems)
    assert type(decoded) is Recorded
    assert (decoded.type, decoded.public()) == (kind, data)
    assert any(p.startswith(problem) for p in problems), problems


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({**HOLD, "seat": True}, "seat (not an integer)"),
        ({**HOLD, "seat": "3"}, "seat (not an integer)"),
        ({**HOLD, "kill": 3}, "kill (not a list)"),
        ({**HOLD, "kill": [1, "2"]}, "kill (not an integer)"),
    ],
)
def test_an_optional_field_that_does_not_fit_is_left_out_and_named(
    data: dict[str, Any], problem: str
) -> None:
    problems: list[str] = []
    decoded = decode_data("hand.hold", data, problems=problems)
    assert isinstance(decoded, et.HandHold)
    assert (decoded.hold, decoded.seat, decoded.evidence.kill) == ("h", None, None)
    assert problems == [problem]


@pytest.mark.parametrize(
    "envelope",
    [
        {"type": "table.teleported", "data": {"x": 1}},
        {"type": None, "data": {}},
        {"type": "hand.hold", "data": "not an object"},
        {"data": {}},
    ],
)
def test_an_unknown_type_or_a_broken_envelope_reads_as_recorded(envelope: dict[str, Any]) -> None:
    assert type(decode(envelope)) is Recorded


def test_enums_come_back_as_their_members() -> None:
    decoded = decode_data(
        "betting.action",
        et.BettingAction(2, ActionKind.RAISE, 960, False, to=40, put_in=30, pot=100).public(),
    )
    assert isinstance(decoded, et.BettingAction)
    assert decoded.action is ActionKind.RAISE
