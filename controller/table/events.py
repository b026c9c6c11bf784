"""The events the core emits, and how their typed data becomes the envelope's ``data``.

An event is what the core decided, with the rule IDs that decided it. Its data is one frozen
dataclass per event type (``controller/table/event_types/``); the shell adds the rest of the
envelope (``schema``, ``table_id``, ``epoch``, ``seq``, ``event_id``, ``historical``) when it
journals and publishes it (docs/events.md).

How a data class becomes JSON, field by field:

* a field without a default is always written, ``null`` included;
* a field whose default is ``None`` is written only when it has a value;
* a field made with :func:`secret` goes in ``secret``, which only the secure surveillance stream
  carries (SEC-1): card identities that are not public yet (hole cards, burns, mucked hands,
  undealt order) never go in ``data``;
* :func:`key` names a field whose JSON key is not a Python name (``with``), or that shares its
  key with a field of the other view (a card public in one ruling and secret in another);
* :func:`flatten` writes a nested record's fields beside the others (a hold's evidence).

The conversion happens when the shell asks for ``data`` or ``secret``, not when the core emits:
the core only builds the record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import MISSING
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, NamedTuple


class Severity(StrEnum):
    """How urgent an event is for the pit."""

    INFO = "info"
    WARN = "warn"
    HOLD = "hold"
    CRITICAL = "critical"


def secret(key_: str | None = None) -> Any:
    """A field only the secure stream carries (written under ``key_`` when given)."""
    return dataclasses.field(default=None, metadata={"secret": True, "key": key_})


def key(name: str, *, default: Any = dataclasses.MISSING) -> Any:
    """A field written under ``name`` (a Python keyword, or a key shared with the other view)."""
    return dataclasses.field(default=default, metadata={"key": name})


def flatten() -> Any:
    """A nested record whose fields are written beside the others."""
    return dataclasses.field(default=None, metadata={"flatten": True})


class _Spec(NamedTuple):
    name: str
    key: str
    secret: bool
    optional: bool  # written only when not None
    flatten: bool


@dataclasses.dataclass(frozen=True, slots=True)
class EventData:
    """The data of one event type: subclasses set ``TYPE`` and declare the fields."""

    TYPE: ClassVar[str] = ""
    #: Whether the event records a ruling or a decision someone made at the table (a hold and its
    #: resolution, a misdeal, a void, an override, an award, a corrected action): the pit's
    #: rulings and ``tablectl journal export --rulings`` list these.
    RULING: ClassVar[bool] = False

    def __init_subclass__(cls) -> None:
        # no super() call: the slotted dataclass is a new class, which zero-argument super()
        # inside it does not know (and object's __init_subclass__ does nothing)
        if "__slots__" in cls.__dict__ and "__dataclass_fields__" in cls.__dict__:
            quicker_init(cls)

    @property
    def type(self) -> str:
        """The event type, ``hand.started`` say."""
        return self.TYPE

    def public(self) -> dict[str, Any]:
        """The ``data`` every subscriber sees."""
        return _write(self, secret=False)

    def hidden(self) -> dict[str, Any] | None:
        """The surveillance-only part (None when the event has none)."""
        found = _write(self, secret=True)
        return found if found else None

    def has_hidden(self) -> bool:
        """True when the event carries identities for surveillance only."""
        return any(
            (getattr(self, s.name) is not None) if s.secret else s.flatten and _nested(self, s)
            for s in specs(type(self))
        )


def quicker_init(cls: type[EventData]) -> None:
    """Give a slotted, frozen event record an ``__init__`` that sets each slot through its own
    descriptor: about half the cost of the dataclass one (``object.__setattr__`` per field),
    and every input builds one record or more. Same signature, same defaults; a record with a
    ``default_factory``, a keyword-only or a non-init field, or a ``__post_init__``, keeps the
    dataclass ``__init__``."""
    fields = dataclasses.fields(cls)
    plain = all(f.init and not f.kw_only and f.default_factory is MISSING for f in fields)
    if not plain or hasattr(cls, "__post_init__"):
        return
    namespace: dict[str, Any] = {}
    params, body = ["self"], []
    for f in fields:
        namespace[f"set_{f.name}"] = getattr(cls, f.name).__set__  # the slot's member descriptor
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            namespace[f"default_{f.name}"] = f.default
            params.append(f"{f.name}=default_{f.name}")
        body.append(f"    set_{f.name}(self, {f.name})\n")
    source = f"def __init__({', '.join(params)}):\n" + ("".join(body) or "    pass\n")
    # named after the class, so that profiles tell the records of different types apart
    code = compile(source, f"<{cls.__qualname__}.__init__>", "exec")
    exec(code, namespace)  # noqa: S102 (the source is made of the record's own field names)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[method-assign]


def _nested(record: EventData, spec: _Spec) -> bool:
    inner = getattr(record, spec.name)
    return isinstance(inner, EventData) and inner.has_hidden()


_SPECS: dict[type, tuple[_Spec, ...]] = {}


def specs(cls: type[EventData]) -> tuple[_Spec, ...]:
    """How each field of ``cls`` is written."""
    found = _SPECS.get(cls)
    if found is not None:
        return found
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        out.append(
            _Spec(
                f.name,
                meta.get("key") or f.name,
                bool(meta.get("secret")),
                f.default is None,
                bool(meta.get("flatten")),
            )
        )
    _SPECS[cls] = tuple(out)
    return _SPECS[cls]


def _write(record: EventData, *, secret: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in specs(type(record)):
        value = getattr(record, spec.name)
        if spec.flatten:
            if value is not None:
                out.update(_write(value, secret=secret))
            continue
        if spec.secret is not secret or (value is None and spec.optional):
            continue
        out[spec.key] = plain(value)
    return out


def plain(value: Any) -> Any:
    """A field's value as JSON writes it: tuples as lists, records as objects."""
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, EventData):
        return value.public()
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class Recorded(EventData):
    """An event read back from the journal: its type and data as they were written."""

    recorded_type: str = ""
    data: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    secret_data: Mapping[str, Any] | None = None

    @property
    def type(self) -> str:
        """The type the journal recorded."""
        return self.recorded_type

    def public(self) -> dict[str, Any]:
        """The data as recorded."""
        return dict(self.data)

    def hidden(self) -> dict[str, Any] | None:
        """The secret part as recorded."""
        return dict(self.secret_data) if self.secret_data is not None else None

    def has_hidden(self) -> bool:
        """True when the journal recorded a secret part."""
        return self.secret_data is not None


class TableEvent(NamedTuple):
    """One event: its data, when, in which hand, the rule IDs that decided it, and who caused it."""

    payload: EventData
    ts: datetime
    hand_id: str | None
    rules: tuple[str, ...] = ()
    severity: Severity = Severity.INFO
    needs_confirm: bool = False
    by: Mapping[str, str] | None = None  # who gave the command that caused it (docs/security.md)

    @property
    def type(self) -> str:
        """The event type."""
        return self.payload.type

    @property
    def data(self) -> dict[str, Any]:
        """The public data."""
        return self.payload.public()

    @property
    def secret(self) -> dict[str, Any] | None:
        """The surveillance-only data, if any."""
        return self.payload.hidden()

    @property
    def secure(self) -> bool:
        """True when the event carries identities for surveillance only."""
        return self.payload.has_hidden()

    def public_view(self) -> dict[str, Any]:
        """The event as the public stream carries it: no secret fields."""
        view = {
            "ts": _rfc3339(self.ts),
            "hand_id": self.hand_id,
            "type": self.type,
            "rules": list(self.rules),
            "severity": self.severity.value,
            "needs_confirm": self.needs_confirm,
            "data": self.data,
        }
        if self.by is not None:
            view["by"] = dict(self.by)
        return view

    def secure_view(self) -> dict[str, Any]:
        """The event as the surveillance stream carries it: data and secret fields merged."""
        view = self.public_view()
        hidden = self.secret
        if hidden is not None:
            view["data"] = {**view["data"], **hidden}
            view["secure"] = True
        return view


def _rfc3339(ts: datetime) -> str:
    text = ts.isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
