"""Journal forms of the core's inputs and events: tagged, versioned JSON.

Inputs are the frozen dataclasses of :mod:`controller.table.inputs`. The codec knows them by
class name and fields only, so an input type added to that module needs no change here: its
journal form is ``{"v": 1, "type": "GroupDispensed", "fields": {...}}`` and pydantic validates the
fields back into the dataclass. Sets are written sorted so the text of an input is a function of
its value; timestamps come back as aware UTC datetimes, so a decoded input equals the original.

Events are stored with their public and secret parts apart, which is all the publisher needs to
build either stream's envelope later (:func:`event_from_json`).

The shell's journal, the ``jsonl`` driver and the ``virtual`` driver all read and write this
form, so it is pure and lives with the inputs and events it encodes (docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from functools import cache
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from controller.table import inputs as inputs_module
from controller.table.events import Recorded, Severity, TableEvent
from controller.table.inputs import DealerInput, DeviceInput, Input

INPUT_FORMAT = 1


class CodecError(ValueError):
    """A journal row that cannot be turned back into an input or an event."""


@cache
def input_types() -> dict[str, type[Input]]:
    """Every concrete input dataclass of the core, by class name."""
    found: dict[str, type[Input]] = {}
    for name in dir(inputs_module):
        obj = getattr(inputs_module, name)
        if (
            isinstance(obj, type)
            and dataclasses.is_dataclass(obj)
            and issubclass(obj, DeviceInput | DealerInput)
            and obj not in (DeviceInput, DealerInput)
        ):
            found[name] = obj
    return found


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def _adapter(cls: type[Any]) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def _sorted_sets(value: Any, dumped: Any) -> Any:
    if isinstance(value, frozenset | set):
        return sorted(dumped, key=lambda item: json.dumps(item, sort_keys=True))
    return dumped


def input_to_dict(item: Input) -> dict[str, Any]:
    """The tagged, JSON-ready form of an input."""
    cls = type(item)
    if input_types().get(cls.__name__) is not cls:
        raise CodecError(f"{cls.__name__} is not an input of the core")
    dumped = _adapter(cls).dump_python(item, mode="json")
    fields = {
        f.name: _sorted_sets(getattr(item, f.name), dumped[f.name])
        for f in dataclasses.fields(item)
        # a keyword-only field (who gave a command, a device event's origin) only when set
        if not (f.kw_only and getattr(item, f.name) == f.default)
    }
    return {"v": INPUT_FORMAT, "type": cls.__name__, "fields": fields}


def input_to_json(item: Input) -> str:
    """The journal text of an input."""
    return json.dumps(input_to_dict(item), separators=(",", ":"), ensure_ascii=False)


def input_from_dict(data: Any) -> Input:
    """The input a tagged dict describes; CodecError names what is wrong."""
    if not isinstance(data, dict) or data.get("v") != INPUT_FORMAT:
        raise CodecError(f"not a version {INPUT_FORMAT} journaled input: {data!r:.120}")
    name = data.get("type")
    cls = input_types().get(name) if isinstance(name, str) else None
    if cls is None:
        raise CodecError(f"unknown input type {name!r}")
    try:
        item = _adapter(cls).validate_python(data.get("fields"))
    except ValidationError as exc:
        raise CodecError(f"{name}: {_problems(exc)}") from None
    return _utc(item)


def input_from_json(text: str) -> Input:
    """The input of a journal text."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:  # not text (a damaged row reads back NULL), not JSON
        raise CodecError(f"journaled input is not JSON: {exc}") from None
    return input_from_dict(data)


def _utc(item: Input) -> Input:
    """Timestamps with the standard UTC tzinfo, as the shell and the drivers make them."""
    changes = {
        f.name: value.astimezone(UTC)
        for f in dataclasses.fields(item)
        if isinstance(value := getattr(item, f.name), datetime) and value.tzinfo is not None
    }
    if not changes:
        return item
    replaced: Input = dataclasses.replace(cast(Any, item), **changes)
    return replaced


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(fields)'}: {err['msg']}"
        for err in exc.errors()
    )


# --------------------------------------------------------------------------- events


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return rfc3339(value)
    if isinstance(value, frozenset | set):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def rfc3339(ts: datetime) -> str:
    """RFC 3339 UTC with milliseconds, as the envelope writes times."""
    return ts.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_to_json(event: TableEvent) -> str:
    """The journal text of an event: its public part and its secret part, apart."""
    body = {
        "type": event.type,
        "ts": event.ts.astimezone(UTC).isoformat(),
        "hand_id": event.hand_id,
        "rules": list(event.rules),
        "severity": event.severity.value,
        "needs_confirm": event.needs_confirm,
        "data": event.data,
        "secret": event.secret,
    }
    if event.by is not None:
        body["by"] = dict(event.by)
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=_jsonable)


def event_from_json(text: str) -> TableEvent:
    """The event of a journal text (data as JSON gives it back: seat keys are strings)."""
    try:
        body = json.loads(text)
        recorded = Recorded(str(body["type"]), dict(body["data"]), body["secret"])
        return TableEvent(
            recorded,
            datetime.fromisoformat(body["ts"]),
            body["hand_id"],
            tuple(body["rules"]),
            Severity(body["severity"]),
            bool(body["needs_confirm"]),
            body.get("by"),
        )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise CodecError(f"journaled event is not valid: {exc}") from None
