"""Models of what goes over MQTT, for the generated JSON Schemas and the AsyncAPI document.

The envelope, the ``data`` of each event type (as the core emits it; extra fields are allowed so
a newer core does not break a consumer validating with an older schema), the request of each
dealer command (its fields plus ``transaction``), the response, the birth/death status, the
state snapshot and the device status. Tests validate real events against these models, so the
schemas say what the daemon actually publishes.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from controller.table.inputs import COMMANDS

Seat = int
SeatMap = dict[str, int]


class _Data(BaseModel):
    model_config = ConfigDict(extra="allow")


class HandStarted(_Data):
    """``hand.started``."""

    button: Seat
    seats: list[Seat]
    small_blind: Seat | None = None
    big_blind: Seat | None = None
    blinds: list[int]
    ante: int
    stacks: SeatMap


class BettingAction(_Data):
    """``betting.action``: a post (``blind``, ``amount``) or an action (``to``, ``put_in``)."""

    seat: Seat
    action: Literal["post", "check", "call", "bet", "raise", "fold", "allin"]
    blind: Literal["ante", "small", "big", "dead", "missed"] | str | None = None
    amount: int | None = None
    to: int | None = None
    put_in: int | None = None
    stack: int
    all_in: bool
    pot: int | None = None
    reopens_betting: bool | None = None


class RoundClosed(_Data):
    """``betting.round.closed``."""

    street: str
    pot: int
    returned: SeatMap | None = None
    closed_by: str | None = None
    no_action: bool | None = None


class DeckVerified(_Data):
    """``deck.verified`` (``stub: true`` when the stub was reshuffled, without a commitment)."""

    shuffle_id: int
    counted: int
    commitment: str | None = None
    stub: bool | None = None


class DeckRejected(_Data):
    """``deck.rejected``."""

    shuffle_id: int
    counted: int | None = None
    faults: list[str] | None = None
    missing: list[str] | None = None
    duplicates: list[str] | None = None
    reason: str | None = None


class DeckRevealed(_Data):
    """``deck.revealed`` (secure view adds ``order``)."""

    shuffle_id: int
    cards: int
    order: list[str] | None = None


class GroupDispensed(_Data):
    """``deal.group.dispensed`` (secure view adds ``cards`` when the shuffler reports them)."""

    group: int
    purpose: str
    seat: Seat | None
    count: int
    cards: list[str] | None = None


class GroupDelivered(_Data):
    """``deal.group.delivered`` (secure view adds ``cards``)."""

    seat: Seat
    group: int
    count: int
    cards: list[str] | None = None


class DealComplete(_Data):
    """``deal.complete``."""

    seats: list[Seat]


class BurnAssigned(_Data):
    """``card.burn.assigned`` (secure view adds ``card``)."""

    street: str
    card: str | None = None


class BoardDealt(_Data):
    """``board.dealt``."""

    street: str
    cards: list[str]
    board: list[str]


class ShowdownOrder(_Data):
    """``showdown.order``."""

    order: list[Seat]


class HandTabled(_Data):
    """``showdown.hand.tabled`` (the ranking once the hand can be read in full)."""

    seat: Seat
    cards: list[str]
    category: str | None = None
    best: list[str] | None = None
    strength: int | None = None


class HandMucked(_Data):
    """``showdown.hand.mucked`` (secure view adds ``cards``)."""

    seat: Seat
    cards: list[str] | None = None


class Pot(BaseModel):
    """One pot of an award."""

    model_config = ConfigDict(extra="allow")

    amount: int
    eligible: list[Seat]
    winners: SeatMap
    odd_chips: SeatMap


class Award(_Data):
    """``pot.award.proposed`` and ``pot.awarded``: last side pot first, main pot last.

    ``kill`` (proposed): the losing hands to be killed before the push.
    """

    pots: list[Pot]
    payouts: SeatMap
    kill: list[Seat] | None = None


class HandCompleted(_Data):
    """``hand.completed``."""

    stacks: SeatMap
    next_button: Seat | None = None


class Alarm(_Data):
    """``integrity.alarm`` and ``irregularity.detected``: a reason and the evidence."""

    reason: str


class DeviceStatus(_Data):
    """``device.status``: health, a fault, a clear or a reboot of one device."""

    device: str


class HandHold(_Data):
    """``hand.hold``: a ruling waits for the dealer (``hold`` is the id to confirm)."""

    rule: str
    reason: str
    hold: str | None = None
    ruling: str | None = None


class HandResume(_Data):
    """``hand.resume``: the hold was confirmed, rejected or overridden."""

    hold: str | None = None
    rule: str | None = None
    decision: str | None = None


class HandEnded(_Data):
    """``hand.misdeal`` and ``hand.void``: the rule, and the chips given back."""

    reason: str
    rule: str
    returned: SeatMap


class SeatCard(_Data):
    """``card.exposed``, ``card.dead``, ``card.replacement.requested`` (``card`` may be secret)."""

    seat: Seat | None = None
    card: str | None = None


class BoardCard(_Data):
    """``board.card.set_aside``, ``board.premature``, ``board.redeal.required``."""

    street: str
    card: str | None = None


class SeatDead(_Data):
    """``seat.hand.dead``."""

    seat: Seat
    reason: str


class StubReshuffle(_Data):
    """``stub.reshuffle.required``."""

    stub: Any = None


class FloorOverrideData(_Data):
    """``floor.override``: the floor's decision, journaled with the rule ID."""

    rule: str
    decision: str


class HandShown(_Data):
    """``showdown.hand.shown``: a called hand shown on request."""

    seat: Seat
    cards: list[str]


class PlaysBoard(_Data):
    """``showdown.plays_board``."""

    seat: Seat


class ActionCorrected(_Data):
    """``betting.action.corrected``: the player corrected the announced action."""

    seat: Seat


class CommandRejected(_Data):
    """``command.rejected``: nothing changed."""

    command: str
    reason: str


#: event type → model of its ``data`` (both views; secure fields are optional).
EVENT_DATA: dict[str, type[BaseModel]] = {
    "hand.started": HandStarted,
    "betting.action": BettingAction,
    "betting.round.closed": RoundClosed,
    "deck.verified": DeckVerified,
    "deck.rejected": DeckRejected,
    "deck.revealed": DeckRevealed,
    "deal.group.dispensed": GroupDispensed,
    "deal.group.delivered": GroupDelivered,
    "deal.complete": DealComplete,
    "card.burn.assigned": BurnAssigned,
    "board.dealt": BoardDealt,
    "showdown.order": ShowdownOrder,
    "showdown.hand.tabled": HandTabled,
    "showdown.hand.mucked": HandMucked,
    "pot.award.proposed": Award,
    "pot.awarded": Award,
    "hand.completed": HandCompleted,
    "integrity.alarm": Alarm,
    "irregularity.detected": Alarm,
    "device.status": DeviceStatus,
    "command.rejected": CommandRejected,
    "hand.hold": HandHold,
    "hand.resume": HandResume,
    "hand.misdeal": HandEnded,
    "hand.void": HandEnded,
    "card.exposed": SeatCard,
    "card.dead": SeatCard,
    "card.replacement.requested": SeatCard,
    "board.card.set_aside": BoardCard,
    "board.premature": BoardCard,
    "board.redeal.required": BoardCard,
    "seat.hand.dead": SeatDead,
    "stub.reshuffle.required": StubReshuffle,
    "floor.override": FloorOverrideData,
    "showdown.hand.shown": HandShown,
    "showdown.plays_board": PlaysBoard,
    "betting.action.corrected": ActionCorrected,
}


class Envelope(BaseModel):
    """Every event on ``{prefix}/{table}/events`` and ``…/secure/events`` (design.md §3.3)."""

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


class Status(BaseModel):
    """The retained birth and Last Will on ``{prefix}/{table}/status``."""

    state: Literal["online", "offline"]
    bdseq: int = Field(description="per connection; the Will carries the same bdseq as its birth")
    ts: str
    version: str
    simulated: bool


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
    button: Seat
    blinds: list[int]
    ante: int
    hands_started: int
    deck: dict[str, Any]
    seats: dict[str, dict[str, Any]]
    hand: dict[str, Any] | None
    last_hand: str | None


def request_model(verb: str) -> type[BaseModel]:
    """The request of one dealer command: its fields (no ``ts``) and ``transaction``."""
    cls = COMMANDS[verb]
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {
        "transaction": (str, Field(min_length=1, max_length=128, description="unique per request")),
    }
    for field in dataclasses.fields(cls):
        if field.name == "ts":
            continue
        default = field.default if field.default is not dataclasses.MISSING else ...
        fields[field.name] = (hints[field.name], default)
    name = "".join(part.capitalize() for part in verb.split("_")) + "Request"
    model: type[BaseModel] = create_model(
        name, __config__=ConfigDict(extra="forbid"), __doc__=cls.__doc__, **fields
    )
    return model
