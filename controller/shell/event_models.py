"""The ``data`` of each event type, as the core emits it (both views: secret fields optional).

Extra fields are allowed, so a newer core does not break a consumer that validates with an older
schema; the fields listed are the ones the pit can rely on (docs/events.md). A test validates the
events of every scenario file and of random hands against these models and fails on an event type
that has none.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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
    """``board.card.set_aside``, ``board.premature``, ``board.redeal.required``.

    ``board.redeal.required`` names the board cards going back (``cards``) and, for a broken
    group, how many of its cards go back in all (``returned``); a card set aside because the stub
    had not been reshuffled yet says so (``reason``).
    """

    street: str
    card: str | None = None
    cards: list[str] | None = None
    returned: int | None = None
    reason: str | None = None


class SeatDead(_Data):
    """``seat.hand.dead``."""

    seat: Seat
    reason: str


class StubReshuffle(_Data):
    """``stub.reshuffle.required``: the cards that go back into the stub before it is reshuffled.

    ``with`` names the cards the table read (premature board cards, a flop dealt again), never a
    burn, a mucked card or a hand; ``unread`` counts the board cards dealt and never read that go
    back with them, ``unread_groups`` the groups they were counted from; ``stub`` is the count
    the reshuffled stub must have.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    with_: list[str] = Field(alias="with")
    stub: int
    unread: int | None = None
    unread_groups: list[int] | None = None


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


class RequestRecord(_Data):
    """What the journal keeps of a request refused at the gate: never the request itself."""

    size: int
    sha256: str
    head: str = Field(description="its first 200 characters")


class CommandRejected(_Data):
    """``command.rejected``: nothing changed.

    A request the gate refused (docs/security.md) adds a bounded ``request`` record and, when it
    proved who sent it, the signing ``key``.
    """

    command: str
    reason: str
    request: RequestRecord | None = None
    key: str | None = None


class RequestsShed(_Data):
    """``requests.shed``: requests answered at once and not run (a flood, a full queue)."""

    counts: dict[str, int] = Field(description="how many, by reason")
    seconds: float = Field(description="over how long")


#: event type → model of its ``data`` (both views; secure fields are optional).
EVENT_DATA: dict[str, type[BaseModel]] = {
    "requests.shed": RequestsShed,
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
