"""Typed records to JSON and back, driven by their annotations: the table state's snapshot format.

The table state is made of slotted dataclasses, named tuples, enums, a pydantic model (the rules
profile) and immutable containers. This module turns any of them into plain JSON values and back,
from the type annotations alone, so the snapshot format (``controller/shell/checkpoint.py``,
``docs/snapshots.md``) is the state's own structure written down by fixed rules:

* ``int``, ``str``, ``bool``, ``float``, ``None``: as JSON has them; a ``NewType`` of one (a
  card: ``"As"``) as its base type;
* an enum: a ``StrEnum`` by its value (``"dealing"``), an ``IntEnum`` by its name (``"FLOP"``);
* ``datetime``: ISO 8601 with its offset;
* ``tuple[X, ...]`` and ``frozenset[X]``: an array (a set's members sorted, so that the same state
  always gives the same bytes); ``tuple[A, B]``: an array of its fixed items;
* ``Mapping[K, V]``: an object when ``K`` is written as a string or a number (an ``int`` key as its
  decimal text), else an array of ``[key, value]`` pairs; the mapping's order is kept;
* a record (dataclass, named tuple, or a slotted class with annotations): an object of its fields
  by name; a field the class computes itself (``init=False``) is not written;
* a pydantic model: its ``model_dump(mode="json", by_alias=True)``.

Reading is strict: a field the class does not have is an error (the document was written by
another structure: a different format, :class:`CodecError`), and so is a missing field unless the
class gives it a default. :func:`describe` writes the same rules out as a JSON Schema, which is
what ``docs/snapshots.md`` and the format's pinned digest are made from.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cache
from typing import Any, NewType

from pydantic import BaseModel

__all__ = ["CodecError", "decoder", "describe", "encoder"]

Encode = Callable[[Any], Any]
Decode = Callable[[Any, str], Any]


class CodecError(ValueError):
    """A JSON value that is not the type it should be; the message names where."""


class _Slotted:
    """What the codec needs of a record: its fields in order, their types, which may be left out,
    and how to make one."""

    def __init__(self, cls: type) -> None:
        hints = typing.get_type_hints(cls)
        self.cls = cls
        self.defaults: dict[str, Any] = {}
        if dataclasses.is_dataclass(cls):
            fields = [f for f in dataclasses.fields(cls) if f.init]
            self.names = [f.name for f in fields]
            for f in fields:
                if f.default is not dataclasses.MISSING:
                    self.defaults[f.name] = f.default
                elif f.default_factory is not dataclasses.MISSING:
                    self.defaults[f.name] = f.default_factory
            self.make: Callable[[dict[str, Any]], Any] = lambda values: cls(**values)
        elif _is_named_tuple(cls):
            self.names = list(cls._fields)  # type: ignore[attr-defined]
            self.defaults = dict(cls._field_defaults)  # type: ignore[attr-defined]
            self.make = lambda values: cls(**values)
        else:  # a slotted class: its annotated slots, set on a bare instance
            self.names = [name for name in hints if not name.startswith("_")]
            private = {name: 0 for name in cls.__slots__ if name.startswith("_")}  # type: ignore[attr-defined]

            def make(values: dict[str, Any]) -> Any:
                record: Any = object.__new__(cls)
                for name, value in {**private, **values}.items():
                    setattr(record, name, value)
                return record

            self.make = make
        self.types = {name: hints[name] for name in self.names}


def _is_named_tuple(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def _is_record(tp: Any) -> bool:
    if not isinstance(tp, type):
        return False
    if dataclasses.is_dataclass(tp) or _is_named_tuple(tp):
        return True
    return bool(getattr(tp, "__slots__", None)) and bool(getattr(tp, "__annotations__", None))


def _key_is_text(tp: Any) -> bool:
    """Whether a mapping's key type is written as a JSON object's key."""
    tp = _base(tp)
    return tp in (str, int) or (isinstance(tp, type) and issubclass(tp, enum.Enum))


def _base(tp: Any) -> Any:
    """A NewType's base type (a card is a ``str``)."""
    while isinstance(tp, NewType):
        tp = tp.__supertype__
    return tp


def _optional(tp: Any) -> Any | None:
    """``X`` of ``X | None`` (None when ``tp`` is not that)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0]
        raise TypeError(f"only X | None unions are written: {tp}")
    return None


# --------------------------------------------------------------------------- encoding


@cache
def encoder(tp: Any) -> Encode:
    """The function that writes a value of type ``tp`` as JSON values."""
    tp = _base(tp)
    inner = _optional(tp)
    if inner is not None:
        encode_inner = encoder(inner)
        return lambda value: None if value is None else encode_inner(value)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp in (int, str, bool, float, type(None)):
        return _same
    if tp is datetime:
        return lambda value: value.isoformat()
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return lambda value: value.name
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return lambda value: value.value
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return lambda value: value.model_dump(mode="json", by_alias=True)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = encoder(args[0])
        return lambda value: [item(v) for v in value]
    if origin is tuple:
        items = [encoder(a) for a in args]
        return lambda value: [e(v) for e, v in zip(items, value, strict=True)]
    if origin is frozenset:
        item = encoder(args[0])
        return lambda value: sorted((item(v) for v in value), key=_order)
    if origin in (Mapping, dict, typing.Mapping):
        key, val = encoder(args[0]), encoder(args[1])
        if _key_is_text(args[0]):
            return lambda value: {str(key(k)): val(v) for k, v in value.items()}
        return lambda value: [[key(k), val(v)] for k, v in value.items()]
    if _is_record(tp):
        return _record_encoder(tp)
    raise TypeError(f"no JSON form for {tp!r}")


def _same(value: Any) -> Any:
    return value


def _order(value: Any) -> str:
    """A total order for a set's members whatever their JSON shape."""
    return json.dumps(value, sort_keys=True)


def _record_encoder(cls: type) -> Encode:
    # the fields' encoders are made at the first use: a record may hold its own kind
    fields: list[tuple[str, Encode]] = []

    def encode(value: Any) -> dict[str, Any]:
        if not fields:
            slotted = _Slotted(cls)
            fields.extend((name, encoder(slotted.types[name])) for name in slotted.names)
        return {name: write(getattr(value, name)) for name, write in fields}

    return encode


# --------------------------------------------------------------------------- decoding


@cache
def decoder(tp: Any) -> Decode:
    """The function that reads a value of type ``tp`` back from its JSON values; its second
    argument says where the value is, for the error."""
    given = tp
    tp = _base(tp)
    inner = _optional(tp)
    if inner is not None:
        decode_inner = decoder(inner)
        return lambda value, at: None if value is None else decode_inner(value, at)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is bool:
        return _exact(bool)
    if tp is int:
        return _exact(int)
    if tp is float:
        return _number
    if tp is str:
        return _exact(str) if given is tp else _new_type(given)
    if tp is type(None):
        return _exact(type(None))
    if tp is datetime:
        return _datetime
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return _enum_by_name(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_by_value(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return _model(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = decoder(args[0])
        return lambda value, at: tuple(
            item(v, f"{at}[{i}]") for i, v in enumerate(_array(value, at))
        )
    if origin is tuple:
        items = [decoder(a) for a in args]

        def fixed(value: Any, at: str) -> tuple[Any, ...]:
            array = _array(value, at)
            if len(array) != len(items):
                raise CodecError(f"{at}: {len(items)} items expected, not {len(array)}")
            return tuple(
                d(v, f"{at}[{i}]") for i, (d, v) in enumerate(zip(items, array, strict=True))
            )

        return fixed
    if origin is frozenset:
        item = decoder(args[0])
        return lambda value, at: frozenset(
            item(v, f"{at}[{i}]") for i, v in enumerate(_array(value, at))
        )
    if origin in (Mapping, dict, typing.Mapping):
        return _mapping(args[0], args[1])
    if _is_record(tp):
        return _record_decoder(tp)
    raise TypeError(f"no JSON form for {tp!r}")


def _exact(kind: type) -> Decode:
    def read(value: Any, at: str) -> Any:
        # bool is an int to Python, not to the format
        if type(value) is not kind:
            raise CodecError(f"{at}: a {kind.__name__} expected, not {json.dumps(value)[:40]}")
        return value

    return read


def _number(value: Any, at: str) -> float:
    if type(value) not in (int, float):
        raise CodecError(f"{at}: a number expected, not {json.dumps(value)[:40]}")
    return float(value)


def _new_type(kind: Any) -> Decode:
    text = _exact(str)
    return lambda value, at: kind(text(value, at))


def _datetime(value: Any, at: str) -> datetime:
    try:
        return datetime.fromisoformat(_exact(str)(value, at))
    except ValueError as exc:
        raise CodecError(f"{at}: {exc}") from None


def _enum_by_name(kind: type[enum.Enum]) -> Decode:
    def read(value: Any, at: str) -> Any:
        try:
            return kind[_exact(str)(value, at)]
        except KeyError:
            raise CodecError(f"{at}: no {kind.__name__} named {value!r}") from None

    return read


def _enum_by_value(kind: type[enum.Enum]) -> Decode:
    def read(value: Any, at: str) -> Any:
        try:
            return kind(value)
        except ValueError:
            raise CodecError(f"{at}: no {kind.__name__} {value!r}") from None

    return read


def _model(kind: type[BaseModel]) -> Decode:
    def read(value: Any, at: str) -> Any:
        try:
            return kind.model_validate(value)
        except ValueError as exc:
            first = str(exc).splitlines()
            raise CodecError(f"{at}: {' '.join(first[:3])}") from None

    return read


def _array(value: Any, at: str) -> list[Any]:
    if not isinstance(value, list):
        raise CodecError(f"{at}: an array expected, not {json.dumps(value)[:40]}")
    return value


def _mapping(key_type: Any, value_type: Any) -> Decode:
    key, val = decoder(key_type), decoder(value_type)
    if _key_is_text(key_type):
        numbered = _base(key_type) is int  # an int key is written as its decimal text

        def from_object(value: Any, at: str) -> dict[Any, Any]:
            if not isinstance(value, dict):
                raise CodecError(f"{at}: an object expected, not {json.dumps(value)[:40]}")
            out = {}
            for text, item in value.items():
                raw: Any = text
                if numbered:
                    try:
                        raw = int(text)
                    except ValueError:
                        raise CodecError(f"{at}: the key {text!r} is not a number") from None
                out[key(raw, f"{at}.{text}")] = val(item, f"{at}.{text}")
            return out

        return from_object

    def from_pairs(value: Any, at: str) -> dict[Any, Any]:
        out = {}
        for i, pair in enumerate(_array(value, at)):
            if not isinstance(pair, list) or len(pair) != 2:
                raise CodecError(f"{at}[{i}]: a [key, value] pair expected")
            out[key(pair[0], f"{at}[{i}][0]")] = val(pair[1], f"{at}[{i}][1]")
        return out

    return from_pairs


def _record_decoder(cls: type) -> Decode:
    slotted = _Slotted(cls)
    required = [name for name in slotted.names if name not in slotted.defaults]
    # the fields' decoders are made at the first use: a record may hold its own kind
    fields: dict[str, Decode] = {}

    def decode(value: Any, at: str) -> Any:
        if not fields:
            fields.update((name, decoder(slotted.types[name])) for name in slotted.names)
        if not isinstance(value, dict):
            raise CodecError(f"{at}: a {cls.__name__} object expected")
        unknown = value.keys() - fields.keys()
        if unknown:
            raise CodecError(f"{at}: {cls.__name__} has no field {sorted(unknown)[0]!r}")
        missing = [name for name in required if name not in value]
        if missing:
            raise CodecError(f"{at}: {cls.__name__} needs {missing[0]!r}")
        values = {name: fields[name](item, f"{at}.{name}") for name, item in value.items()}
        try:
            return slotted.make(values)
        except (TypeError, ValueError) as exc:
            raise CodecError(f"{at}: {exc}") from None

    return decode


# --------------------------------------------------------------------------- description


def describe(root: Any) -> dict[str, Any]:
    """The JSON Schema (2020-12) of what :func:`encoder` writes for ``root``: each record a
    definition of its own (``$defs``, by class name), with its fields and which are required."""
    defs: dict[str, Any] = {}
    top = _schema(root, defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **top, "$defs": defs}


def _schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    given = tp
    tp = _base(tp)
    inner = _optional(tp)
    if inner is not None:
        return {"anyOf": [_schema(inner, defs), {"type": "null"}]}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    simple = {int: "integer", str: "string", bool: "boolean", float: "number", type(None): "null"}
    if tp in simple:
        found: dict[str, Any] = {"type": simple[tp]}
        if given is not tp:
            found["description"] = given.__name__
        return found
    if tp is datetime:
        return {"type": "string", "format": "date-time"}
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return {"enum": [member.name for member in tp], "description": tp.__name__}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [member.value for member in tp], "description": tp.__name__}
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}
            defs[name] = tp.model_json_schema(by_alias=True, mode="serialization")
        return {"$ref": f"#/$defs/{name}"}
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _schema(args[0], defs)}
    if origin is tuple:
        return {
            "type": "array",
            "prefixItems": [_schema(a, defs) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin is frozenset:
        return {"type": "array", "items": _schema(args[0], defs), "uniqueItems": True}
    if origin in (Mapping, dict, typing.Mapping):
        if _key_is_text(args[0]):
            return {
                "type": "object",
                "description": f"keys: {_key_name(args[0])}",
                "additionalProperties": _schema(args[1], defs),
            }
        pair = [_schema(args[0], defs), _schema(args[1], defs)]
        return {
            "type": "array",
            "items": {"type": "array", "prefixItems": pair, "minItems": 2, "maxItems": 2},
        }
    if _is_record(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # a record that holds itself (a hand before its last action)
            slotted = _Slotted(tp)
            defs[name] = {
                "type": "object",
                "properties": {n: _schema(slotted.types[n], defs) for n in slotted.names},
                "required": [n for n in slotted.names if n not in slotted.defaults],
                "additionalProperties": False,
            }
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON form for {tp!r}")


def _key_name(tp: Any) -> str:
    base = _base(tp)
    if base is not tp:
        return str(tp.__name__)
    if isinstance(base, type) and issubclass(base, enum.IntEnum):
        return f"{base.__name__} names"
    return str(getattr(base, "__name__", base))
