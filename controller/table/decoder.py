"""The inverse of the event codec: an envelope's ``type``, ``data`` and ``secret`` become the
typed record of ``controller/table/event_types/`` that wrote them.

Every reader of events (the pit's projections and its PHH, the live view, the journal's export)
reads records, never dicts: ``isinstance(record, HandHold)`` and ``record.rule``, not
``e["type"] == "hand.hold"`` and ``data.get("rule")``. What a field becomes in JSON is said once,
in ``controller/table/events.py``; this module reads it back by the same field specs:

* a field is read under its JSON key, public fields from ``data`` and secret ones from
  ``secret`` (or, for a surveillance view whose ``data`` has the secret fields merged in, from
  ``data`` too: ``merged=True``);
* each value is checked against the field's annotation and given its Python shape back: lists
  become tuples, a nested object its record, an enum's text its member; a seat map keeps its
  string keys, as the records declare it;
* keys the record does not know are ignored: a newer table may send more than this reader knows.

A value of the wrong kind (a hostile or broken publisher, an older table) is named as a
problem. In an optional field (one with a default, or one that may be null) it is left out, as
if the field were absent, and the rest of the record stands. In a required field, or when a
required field is missing, the envelope is not a record of its type: it decodes to
:class:`~controller.table.events.Recorded`, which no reader mistakes for the real thing, so a
malformed event is stored and shown raw and never stops a reader. An unknown type decodes to
:class:`~controller.table.events.Recorded` too.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING
from typing import Any, Union

from controller.table import event_types
from controller.table.events import EventData, Recorded, TableEvent, specs

#: A value as JSON gave it back → its Python shape (raises :class:`DecodeError` when it cannot).
Convert = Callable[[Any], Any]


class DecodeError(ValueError):
    """An event's data that does not fit its type's record."""


#: Every event type and its record.
RECORDS: Mapping[str, type[EventData]] = event_types.EVENT_TYPES

#: The event types that record a ruling or a decision someone made at the table.
RULING_TYPES: frozenset[str] = frozenset(t for t, cls in RECORDS.items() if cls.RULING)


def decode(
    envelope: Mapping[str, Any],
    *,
    merged: bool | None = None,
    problems: list[str] | None = None,
) -> EventData:
    """The record of an event envelope (as published or as journaled).

    ``merged``: whether ``data`` has the secret fields in it (the surveillance view); by default
    the envelope's own ``secure`` flag says so. ``problems``: where to say which fields did not
    fit (see :func:`decode_data`).
    """
    kind = envelope.get("type")
    data = envelope.get("data")
    secret = envelope.get("secret")
    if not isinstance(kind, str) or not isinstance(data, Mapping):
        if problems is not None:
            problems.append("type (not a string)" if isinstance(data, Mapping) else "data")
        return Recorded(str(kind), data if isinstance(data, Mapping) else {}, None)
    if merged is None:
        merged = envelope.get("secure") is True
    hidden = secret if isinstance(secret, Mapping) else None
    return decode_data(kind, data, hidden, merged=merged, problems=problems)


def record_of(event: TableEvent) -> EventData:
    """The typed record of an event the core emitted or the journal gave back."""
    if not isinstance(event.payload, Recorded):
        return event.payload
    return decode_data(event.type, event.data, event.secret)


def decode_data(
    kind: str,
    data: Mapping[str, Any],
    secret: Mapping[str, Any] | None = None,
    *,
    merged: bool = False,
    problems: list[str] | None = None,
) -> EventData:
    """The record of type ``kind`` with this ``data`` (and ``secret``).

    A field whose value does not fit is named in ``problems`` (``"seat (not an integer)"``): an
    optional one is left out (read as absent), a required one makes the whole event not a
    record of its type, and it comes back as :class:`Recorded`, as an unknown type does.
    """
    cls = RECORDS.get(kind)
    if cls is not None:
        found: list[str] = []
        record = _read(cls, data, secret or {}, merged, found)
        if problems is not None:
            problems.extend(found)
        if record is not None:
            return record
    return Recorded(kind, dict(data), dict(secret) if secret is not None else None)


def read_record(cls: type[EventData], data: Mapping[str, Any]) -> EventData:
    """``cls`` from a JSON object its codec wrote (a nested record: a pot, a request); raise
    :class:`DecodeError` naming each field that does not fit."""
    found: list[str] = []
    record = _read(cls, data, {}, False, found)
    if record is None or found:
        raise DecodeError("; ".join(found))
    return record


def _read(
    cls: type[EventData],
    data: Mapping[str, Any],
    secret: Mapping[str, Any],
    merged: bool,
    problems: list[str],
) -> EventData | None:
    """``cls`` from its fields, each problem named in ``problems``; None when a required field
    is missing or does not fit."""
    hidden = data if merged else secret
    values: dict[str, Any] = {}
    whole = True
    for spec, convert, shared, required, no_default in _plan(cls):
        if spec.flatten:
            # a flattened record's fields are the envelope's own: none of them written is the
            # record with none set (a hold with no evidence has HoldEvidence(), not None)
            inner = _read(_flattened(cls, spec.name), data, secret, merged, problems)
            if inner is not None:
                values[spec.name] = inner
            continue
        source = hidden if spec.secret else data
        if spec.key in source:
            try:
                values[spec.name] = convert(source[spec.key])
                continue
            except DecodeError as exc:
                # In a merged view a key two fields share (a card public in one ruling, secret
                # in another) holds the value of only one of them: the other reads as absent.
                if not (merged and shared and not required):
                    problems.append(f"{spec.key} ({exc})")
        elif required:
            problems.append(f"{spec.key} (missing)")
        if required:
            whole = False
        elif no_default:  # a field that may be null but is always written: absent is null
            values[spec.name] = None
    return cls(**values) if whole else None


_Step = tuple[Any, Convert, bool, bool, bool]
_PLANS: dict[type[EventData], tuple[_Step, ...]] = {}


def _plan(cls: type[EventData]) -> tuple[_Step, ...]:
    """Each field's spec, its converter, whether its key is shared, whether it is required (no
    default, and null is not one of its values) and whether it has no default."""
    found = _PLANS.get(cls)
    if found is not None:
        return found
    hints = typing.get_type_hints(cls)
    fields = specs(cls)
    fields_by_name = {f.name: f for f in dataclasses.fields(cls)}
    keys = [s.key for s in fields if not s.flatten]
    steps = []
    for spec in fields:
        field = fields_by_name[spec.name]
        no_default = field.default is MISSING and field.default_factory is MISSING
        nullable = type(None) in _members(hints[spec.name])
        convert = _no_conversion if spec.flatten else converter(hints[spec.name])
        shared = keys.count(spec.key) > 1
        steps.append((spec, convert, shared, no_default and not nullable, no_default))
    _PLANS[cls] = tuple(steps)
    return _PLANS[cls]


def _flattened(cls: type[EventData], name: str) -> type[EventData]:
    hint = typing.get_type_hints(cls)[name]
    inner = [a for a in _members(hint) if a is not type(None)]
    if len(inner) != 1 or not issubclass(inner[0], EventData):
        raise TypeError(f"{cls.__name__}.{name}: a flattened field holds one record, not {hint!r}")
    nested: type[EventData] = inner[0]
    return nested


def _members(hint: Any) -> tuple[Any, ...]:
    if typing.get_origin(hint) in (Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


def converter(hint: Any) -> Convert:
    """How a JSON value becomes a value of the annotation ``hint`` (checked)."""
    members = _members(hint)
    if type(None) in members:
        present = [m for m in members if m is not type(None)]
        if len(present) != 1:
            raise TypeError(f"no decoder for the annotation {hint!r}")
        inner = converter(present[0])

        def optional(value: Any) -> Any:
            return None if value is None else inner(value)

        return optional
    supertype = getattr(hint, "__supertype__", None)  # a NewType: Card is a str
    if supertype is not None:
        return converter(supertype)
    if hint is bool:
        return _scalar(bool, "a boolean")
    if hint is int:
        return _integer
    if hint is float:
        return _number
    if hint is str:
        return _scalar(str, "a string")
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _member(hint)
    if isinstance(hint, type) and issubclass(hint, EventData):
        return _nested(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _sequence(converter(args[0]))
        return _fixed([converter(a) for a in args])
    if origin in (Mapping, dict):
        return _mapping(converter(args[0]), converter(args[1]))
    raise TypeError(f"no decoder for the annotation {hint!r}")


def _no_conversion(value: Any) -> Any:
    return value


def _scalar(kind: type, what: str) -> Convert:
    def check(value: Any) -> Any:
        if type(value) is not kind:
            raise DecodeError(f"not {what}")
        return value

    return check


def _integer(value: Any) -> int:
    if type(value) is not int:  # a bool is not a count of chips
        raise DecodeError("not an integer")
    return value


def _number(value: Any) -> float:
    if type(value) not in (int, float):
        raise DecodeError("not a number")
    return float(value)


def _member(kind: type[enum.Enum]) -> Convert:
    def check(value: Any) -> Any:
        try:
            return kind(value)
        except ValueError:
            raise DecodeError(f"not a {kind.__name__}") from None

    return check


def _nested(cls: type[EventData]) -> Convert:
    def check(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise DecodeError(f"not an object ({cls.__name__})")
        return read_record(cls, value)

    return check


def _sequence(item: Convert) -> Convert:
    def check(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            raise DecodeError("not a list")
        return tuple(item(v) for v in value)

    return check


def _fixed(items: list[Convert]) -> Convert:
    def check(value: Any) -> Any:
        if not isinstance(value, list | tuple) or len(value) != len(items):
            raise DecodeError(f"not a list of {len(items)}")
        return tuple(convert(v) for convert, v in zip(items, value, strict=True))

    return check


def _mapping(key: Convert, item: Convert) -> Convert:
    def check(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise DecodeError("not an object")
        return {key(k): item(v) for k, v in value.items()}

    return check
