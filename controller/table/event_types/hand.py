"""The hand's own events: its start and end, the seats that owe or post blinds, holds and
rulings, dead hands."""

from __future__ import annotations

from dataclasses import dataclass

from controller.cards import Card
from controller.table.event_types.seats import Seat, SeatMap
from controller.table.events import EventData, flatten, secret


@dataclass(frozen=True, slots=True)
class HandStarted(EventData):
    """``hand.started``: who is dealt in, the blinds' seats and every stack (RR-BB-*), and the
    betting structure where the table does not play no-limit (RR-PL, RR-BR-5/6)."""

    TYPE = "hand.started"
    button: Seat
    seats: tuple[Seat, ...]
    small_blind: Seat | None
    big_blind: Seat | None
    blinds: tuple[int, int]
    ante: int
    stacks: SeatMap
    redeal_of: str | None = None  # the misdealt hand this one deals again
    straddles: SeatMap | None = None  # STRADDLE: each straddler's straddle
    # the betting structure (the profile's ``betting.structure``) where it is not no-limit,
    # so a reader of the events alone (the pit, a PHH export) knows how the hand was bet;
    # fixed-limit's cap (``betting.cap``) with it
    betting: str | None = None
    cap: int | None = None


@dataclass(frozen=True, slots=True)
class SeatBlindsMissed(EventData):
    """``seat.blinds.missed``: a blind passed the seat while it sat out; ``owes``: ``small``,
    ``big`` or ``both`` (MISSED-BLINDS)."""

    TYPE = "seat.blinds.missed"
    seat: Seat
    owes: str


@dataclass(frozen=True, slots=True)
class SeatPosting(EventData):
    """``seat.posting``: the seat posts what it owes in the next hand: ``live`` chips as its big
    blind, ``dead`` chips to the main pot; ``new`` for a new player (MISSED-BLINDS)."""

    TYPE = "seat.posting"
    seat: Seat
    owes: str
    live: int
    dead: int
    new: bool | None = None


@dataclass(frozen=True, slots=True)
class HandCompleted(EventData):
    """``hand.completed``: the stacks after the push and where the button goes (RR-BB-ROT)."""

    TYPE = "hand.completed"
    stacks: SeatMap
    next_button: Seat | None
    rake: int | None = None  # the house's take from the pots (HOUSE-RAKE, HOUSE-DROP-JACKPOT)


@dataclass(frozen=True, slots=True)
class HandMisdeal(EventData):
    """``hand.misdeal``: the rule, and the chips given back; the same deal comes again."""

    TYPE = "hand.misdeal"
    RULING = True
    reason: str
    rule: str
    returned: SeatMap
    button: Seat
    seats: tuple[Seat, ...]


@dataclass(frozen=True, slots=True)
class HandVoid(EventData):
    """``hand.void``: every chip goes back and the deck leaves service."""

    TYPE = "hand.void"
    RULING = True
    reason: str
    rule: str
    returned: SeatMap
    deck_out_of_service: int | None


@dataclass(frozen=True, slots=True)
class HoldEvidence(EventData):
    """What a hold shows the floor, beside its rule and reason (each only when it applies)."""

    group: int | None = None
    count: int | None = None
    expected: int | None = None
    counted: int | None = None
    shuffle_id: int | None = None
    street: str | None = None
    card: Card | None = None
    zone: str | None = None
    code: str | None = None
    groups: int | None = None
    kill: tuple[Seat, ...] | None = None
    protected_reconstructible: str | None = None
    hidden_card: Card | None = secret("card")
    expected_cards: tuple[Card, ...] | None = secret("expected")
    uid: str | None = secret()


NO_EVIDENCE = HoldEvidence()


@dataclass(frozen=True, slots=True)
class HandHold(EventData):
    """``hand.hold``: a ruling waits for the dealer or the floor (``hold`` is the id to confirm)."""

    TYPE = "hand.hold"
    RULING = True
    hold: str
    rule: str
    reason: str
    ruling: str  # what ``confirm`` does
    seat: Seat | None = None
    evidence: HoldEvidence = flatten()


@dataclass(frozen=True, slots=True)
class HandResume(EventData):
    """``hand.resume``: the last hold was decided, or the controller came back mid-hand."""

    TYPE = "hand.resume"
    RULING = True
    hold: str | None = None
    rule: str | None = None
    decision: str | None = None
    by: str | None = None  # confirm, reject, override, or what settled it
    reason: str | None = None
    phase: str | None = None


@dataclass(frozen=True, slots=True)
class FloorOverride(EventData):
    """``floor.override``: the floor's decision, and the hold it replaced (null: none)."""

    TYPE = "floor.override"
    RULING = True
    rule: str
    decision: str
    hold: str | None


@dataclass(frozen=True, slots=True)
class FloorCalled(EventData):
    """``floor.called``: the dealer calls the floor to the table (the station's "Call the
    floor"), to rule on ``hold``: the one the call raised (FLOOR-CALL) in a hand with no hold
    pending, else the pending one it is about (null between hands)."""

    TYPE = "floor.called"
    reason: str
    hold: str | None
    rule: str | None  # the hold's rule
    seat: Seat | None = None


@dataclass(frozen=True, slots=True)
class SeatHandDead(EventData):
    """``seat.hand.dead``."""

    TYPE = "seat.hand.dead"
    seat: Seat
    reason: str
