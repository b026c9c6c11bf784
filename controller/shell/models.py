"""Models of what goes over MQTT, for the generated JSON Schemas and the AsyncAPI document.

The envelope, the request of each dealer command (its fields plus ``transaction``), the
response, the birth/death status, the state snapshot and the device status, and the ``data`` of
each event type, made from the core's own records (``controller/table/event_types/``), so the
schemas say what the daemon actually publishes. Extra fields are allowed in ``data``: a newer
core does not break a consumer that validates with an older schema.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from controller.shell.maintenance import REQUESTS
from controller.shell.replay import VERB as REPLAY
from controller.shell.replay import ReplayRequest
from controller.table.event_types import EVENT_TYPES
from controller.table.events import EventData, specs

__all__ = [
    "EVENT_DATA",
    "Alarm",
    "DeviceTopic",
    "Envelope",
    "Head",
    "Response",
    "StateSnapshot",
    "Status",
    "request_model",
]


class Envelope(BaseModel):
    """Every event on ``{prefix}/{table}/events`` and ``…/secure/events`` (docs/events.md)."""

    model_config = ConfigDict(extra="forbid")

    schema_: Literal["tablectl.event/1"] = Field(alias="schema")
    table_id: str
    epoch: str
    seq: int = Field(ge=1, description="per table, gap-free, strictly increasing in an epoch")
    event_id: str = Field(description="{table_id}:{epoch}:{seq}; de-duplicate on it")
    historical: bool = Field(description="published late, after a broker outage")
    ts: str = Field(description="RFC 3339 UTC, from the input that caused the event")
    hand_id: str | None
    type: str
    rules: list[str]
    severity: Literal["info", "warn", "hold", "critical"]
    needs_confirm: bool
    data: dict[str, Any]
    secure: bool | None = Field(default=None, description="secure stream: secret fields merged")
    by: Attribution | None = Field(
        default=None, description="who gave the command that caused the event (docs/security.md)"
    )
    chain: ChainStamp | None = Field(
        default=None, description="hand.completed: the journal's hash chain at this event"
    )


class ChainStamp(BaseModel):
    """``chain``: the position and hash of the event's row in the table's journal chain."""

    model_config = ConfigDict(extra="forbid")

    pos: int
    hash: str


class Attribution(BaseModel):
    """``by``: the person who gave a command, and the role they gave it in."""

    model_config = ConfigDict(extra="forbid")

    person: str
    role: str


class Auth(BaseModel):
    """``auth`` of a signed request (docs/security.md): Ed25519 over its canonical JSON."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="the key id in the table's keyring")
    ts: str = Field(description="RFC 3339; within clock_skew of the table's clock")
    nonce: str = Field(min_length=1, description="never used twice with the same key")
    sig: str = Field(description="the signature, base64")
    on_behalf_of: str | None = Field(default=None, description="the person a console signs for")


class Build(BaseModel):
    """Which build the table runs (controller/build_identity.py)."""

    version: str
    record_sha256: str | None = Field(
        description="SHA-256 of the installed wheel's RECORD: the same for the same files, byte "
        "for byte (null: not installed from a wheel)"
    )
    editable: bool = Field(description="a development checkout: its files are not a wheel's")
    modified: int | None = Field(
        default=None,
        description="installed files not as shipped (changed, missing or added; "
        "`tablectl version --verify` names them), counted at the daemon's start; null: a "
        "development checkout",
    )


class Status(BaseModel):
    """The retained birth and Last Will on ``{prefix}/{table}/status``."""

    state: Literal["online", "offline"]
    bdseq: int = Field(
        description="per connection, counted in its journal; the Will carries the same bdseq as "
        "its birth"
    )
    journal: str | None = Field(
        default=None,
        description="the journal bdseq counts in: its first epoch, the same for the journal's "
        "life (a new journal, on a new PC say, counts from 1 again); absent from an earlier "
        "tablectl's",
    )
    epoch: str | None = Field(
        default=None,
        description="the epoch the table's events are in as the message is made (the Will: as "
        "its connection was made); absent from an earlier tablectl's",
    )
    ts: str
    version: str
    build: Build | None = Field(
        default=None, description="the build identity; `tablectl version --verify` checks it"
    )
    simulated: bool
    require_signed: bool = Field(description="false: the table takes unsigned requests")
    degraded: bool = Field(
        default=False,
        description="up, but taking no input: its journal's disk is full, or an integrity "
        "alarm holds it until maintenance decides (see alarms)",
    )
    alarms: list[Alarm] = Field(
        default_factory=list, description="what is wrong; republished when it changes"
    )


class Alarm(BaseModel):
    """One raised alarm on the status topic (docs/mqtt.md)."""

    model_config = ConfigDict(extra="allow")

    alarm: str = Field(
        description="journal.full (degraded), journal.low_disk, journal.retention (over the "
        "journal's budget, segments waiting for the pit/archive), or journal.integrity (the "
        "journal is in doubt: its hash chain, its replay or a rollback; degraded while held)"
    )
    detail: str = Field(description="what was found, in one line")
    since: str | None = None
    kind: str | None = Field(
        default=None, description="journal.integrity: chain, replay or rollback"
    )
    held: bool | None = Field(
        default=None,
        description="journal.integrity: the table takes no input but maintenance's "
        "journal_accept until maintenance decides",
    )


class Head(BaseModel):
    """The retained head on ``{prefix}/{table}/head``: the last event published and its place
    in the journal's hash chain, published before the events up to it (docs/mqtt.md)."""

    journal: str = Field(description="the journal's own name (its first epoch)")
    epoch: str
    seq: int
    event_id: str
    pos: int = Field(description="the event's position in the journal's hash chain")
    hash: str = Field(description="the chain hash of the event's row")
    ts: str


class Response(BaseModel):
    """The answer on ``{prefix}/{table}/response/{command}``."""

    transaction: str | None
    status: Literal["ok", "error"]
    command: str
    data: dict[str, Any] = Field(description="events: [{seq, type}], last_seq")
    error: str | None


class DeviceTopic(BaseModel):
    """The retained health and identity on ``{prefix}/{table}/devices/{device}``."""

    model_config = ConfigDict(extra="allow")

    device: str
    health: Literal["online", "stale", "reconnecting", "failed", "rejected"] | None
    approved: bool | None
    detail: str
    ts: str
    identity: dict[str, Any] | None = None


class StateSnapshot(BaseModel):
    """The retained public snapshot on ``{prefix}/{table}/state``."""

    model_config = ConfigDict(extra="allow")

    schema_: Literal["tablectl.state/1"] = Field(alias="schema")
    table_id: str
    epoch: str
    seq: int = Field(description="the last event this snapshot reflects")
    button: int
    blinds: list[int]
    ante: int
    hands_started: int
    deck: dict[str, Any]
    seats: dict[str, dict[str, Any]]
    hand: dict[str, Any] | None
    last_hand: str | None


def request_model(verb: str) -> type[BaseModel]:
    """The request of one command: its fields (no ``ts``), ``transaction`` and ``auth``."""
    fields: dict[str, Any] = {
        "transaction": (str, Field(min_length=1, max_length=128, description="unique per request")),
    }
    fields["auth"] = (
        Auth | None,
        Field(default=None, description="the signature (required unless the table says not)"),
    )
    if verb == REPLAY:  # answered by the shell (controller/shell/replay.py), not the core
        for name, info in ReplayRequest.model_fields.items():
            fields[name] = (info.annotation, info)
        replay: type[BaseModel] = create_model(
            "ReplayRequest",
            __config__=ConfigDict(extra="forbid"),
            __doc__=ReplayRequest.__doc__,
            **fields,
        )
        return replay
    cls = REQUESTS[verb]
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.name in ("ts", "authority"):  # set by the table, never by the sender
            continue
        default = field.default if field.default is not dataclasses.MISSING else ...
        fields[field.name] = (hints[field.name], default)
    name = "".join(part.capitalize() for part in verb.split("_")) + "Request"
    model: type[BaseModel] = create_model(
        name, __config__=ConfigDict(extra="forbid"), __doc__=cls.__doc__, **fields
    )
    return model


def data_model(cls: type[EventData]) -> type[BaseModel]:
    """The ``data`` of one event type, both views: secret and optional fields may be absent."""
    hints = typing.get_type_hints(cls)
    by_key: dict[str, tuple[str, Any, bool]] = {}  # JSON key -> (name, annotation, required)

    def add(record: type[EventData]) -> None:
        record_hints = typing.get_type_hints(record)
        for spec in specs(record):
            if spec.flatten:
                add(record_hints[spec.name])
                continue
            annotation = record_hints[spec.name]
            required = not spec.optional and not spec.secret
            if spec.key in by_key:  # the same key in both views: either may carry it
                name, other, _ = by_key[spec.key]
                by_key[spec.key] = (name, annotation | other, False)
            else:
                by_key[spec.key] = (spec.name, annotation, required)

    add(cls)
    del hints
    fields: dict[str, Any] = {}
    for json_key, (name, annotation, required) in by_key.items():
        if required:
            fields[name] = (annotation, Field(alias=json_key))
        else:
            fields[name] = (annotation | None, Field(default=None, alias=json_key))
    model: type[BaseModel] = create_model(
        cls.__name__,
        __config__=ConfigDict(extra="allow", populate_by_name=True),
        __doc__=cls.__doc__,
        **fields,
    )
    return model


#: event type → model of its ``data``.
EVENT_DATA: dict[str, type[BaseModel]] = {
    event_type: data_model(cls) for event_type, cls in sorted(EVENT_TYPES.items())
}
