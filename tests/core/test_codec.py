"""Journaled inputs and events round-trip exactly."""

from __future__ import annotations

import dataclasses
import functools
import json
import typing
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.envelope import envelope
from controller.table.codec import (
    CodecError,
    event_from_json,
    event_to_json,
    input_from_json,
    input_to_json,
    input_types,
)
from controller.table.inputs import Zone
from tests.helpers import run_file

aware = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
zones = st.sampled_from(["seat:1", "seat:10", "board", "burn", "muck", "enroll"]).map(Zone.parse)
st.register_type_strategy(Zone, zones)


@functools.cache
def strategy_for(name: str) -> st.SearchStrategy[Any]:
    """Any instance of the input class ``name``, with aware UTC timestamps (built once a class,
    not again at every draw: a sixth of the round trips' time)."""
    cls = input_types()[name]
    hints = typing.get_type_hints(cls)
    fields = {
        f.name: aware if f.name == "ts" else st.from_type(hints[f.name])
        for f in dataclasses.fields(cls)
    }
    return st.builds(cls, **fields)


def test_every_input_class_is_known() -> None:
    names = set(input_types())
    assert {"GroupDispensed", "TagArrived", "StartHand", "Action", "FloorOverride"} <= names
    assert "DeviceInput" not in names
    assert "DealerInput" not in names


@pytest.mark.parametrize("name", sorted(input_types()))
@settings(suppress_health_check=[HealthCheck.too_slow])  # nested inputs, on a busy machine
@given(data=st.data())
def test_journaled_input_round_trips_exactly(name: str, data: st.DataObject) -> None:
    cls = input_types()[name]
    item = data.draw(strategy_for(name))
    text = input_to_json(item)
    back = input_from_json(text)
    assert back == item
    assert type(back) is cls
    assert input_to_json(back) == text  # the text is a function of the value


def test_garbage_is_a_codec_error() -> None:
    for text in ("", "[]", '{"v": 2}', '{"v": 1, "type": "Nope"}', '{"v":1,"type":"Action"}'):
        with pytest.raises(CodecError):
            input_from_json(text)
    with pytest.raises(CodecError, match="Action"):
        input_from_json('{"v":1,"type":"Action","fields":{"ts":"2026-01-01T00:00:00Z"}}')


@pytest.mark.parametrize("scenario", ["T18-odd-chip-two-way.toml", "normal-hand-4-seats.toml"])
def test_journaled_events_publish_the_same_envelopes(scenario: str) -> None:
    run = run_file(scenario)
    for seq, event in enumerate(run.events, start=1):
        back = event_from_json(event_to_json(event))
        for secure in (False, True):
            original = envelope(event, table_id="T", epoch="e", seq=seq, secure=secure)
            again = envelope(back, table_id="T", epoch="e", seq=seq, secure=secure)
            assert _json(again) == _json(original)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
