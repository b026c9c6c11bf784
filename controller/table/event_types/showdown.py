"""The showdown and the award: the order of showing, hands tabled, mucked or shown, pots awarded,
runs, rake and time collected."""

from __future__ import annotations

from dataclasses import dataclass

from controller.cards import Card
from controller.table.event_types.seats import Seat, SeatMap
from controller.table.events import EventData, secret


@dataclass(frozen=True, slots=True)
class ShowdownOrder(EventData):
    """``showdown.order``: who shows first (``faceup`` when every hand is shown at once)."""

    TYPE = "showdown.order"
    order: tuple[Seat, ...]
    faceup: bool | None = None


@dataclass(frozen=True, slots=True)
class ShowdownHandTabled(EventData):
    """``showdown.hand.tabled`` (the ranking once the hand can be read in full)."""

    TYPE = "showdown.hand.tabled"
    seat: Seat
    cards: tuple[Card, ...]
    category: str | None = None
    best: tuple[Card, ...] | None = None
    strength: int | None = None


@dataclass(frozen=True, slots=True)
class ShowdownHandMucked(EventData):
    """``showdown.hand.mucked`` (secure view adds ``cards``)."""

    TYPE = "showdown.hand.mucked"
    seat: Seat
    cards: tuple[Card, ...] | None = secret()


@dataclass(frozen=True, slots=True)
class ShowdownHandShown(EventData):
    """``showdown.hand.shown``: a called hand shown on request (RR-SD-5)."""

    TYPE = "showdown.hand.shown"
    seat: Seat
    cards: tuple[Card, ...]
    live: bool
    asked_by: Seat


@dataclass(frozen=True, slots=True)
class ShowdownPlaysBoard(EventData):
    """``showdown.plays_board``."""

    TYPE = "showdown.plays_board"
    seat: Seat


@dataclass(frozen=True, slots=True)
class PotShare(EventData):
    """One pot of an award: its chips, who could win it, who did, and the odd chips."""

    amount: int
    eligible: tuple[Seat, ...]
    winners: SeatMap
    odd_chips: SeatMap
    rake: int | None = None  # dropped from this pot before the split: the pot was amount + rake
    boards: tuple[SeatMap, ...] | None = None  # RUN-TWICE: the winners on each runout


@dataclass(frozen=True, slots=True)
class PotAwardProposed(EventData):
    """``pot.award.proposed``: last side pot first, main pot last; ``kill``: hands to kill first."""

    TYPE = "pot.award.proposed"
    pots: tuple[PotShare, ...]
    payouts: SeatMap
    kill: tuple[Seat, ...]
    rake: int | None = None  # what the dealer drops before the push


@dataclass(frozen=True, slots=True)
class PotAwarded(EventData):
    """``pot.awarded``: the push, as proposed."""

    TYPE = "pot.awarded"
    RULING = True
    pots: tuple[PotShare, ...]
    payouts: SeatMap
    rake: int | None = None  # dropped before the push (``pot.rake.taken``)


@dataclass(frozen=True, slots=True)
class HandRunoutsAgreed(EventData):
    """``hand.runouts.agreed`` (RUN-TWICE): every player is all in and the rest of the board
    (after ``street``, whose ``board`` is out) is run ``runs`` times."""

    TYPE = "hand.runouts.agreed"
    runs: int
    street: str
    board: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class BoardRunoutStarted(EventData):
    """``board.runout.started`` (RUN-TWICE): runout ``run`` begins from the common cards;
    ``previous`` is the whole board of the runout before it."""

    TYPE = "board.runout.started"
    run: int
    board: tuple[Card, ...]
    previous: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class PotRakeTaken(EventData):
    """``pot.rake.taken``: the dealer drops the house's take before the push (HOUSE-RAKE,
    HOUSE-DROP-JACKPOT). ``pots``: the rake from each pot, main pot first; ``waived``: why
    nothing was taken."""

    TYPE = "pot.rake.taken"
    rake: int
    jackpot: int
    pots: tuple[int, ...]
    total: int
    waived: str | None = None


@dataclass(frozen=True, slots=True)
class HouseTimeCollected(EventData):
    """``house.time.collected`` (HOUSE-TIME): each seat's time for the period that starts now,
    until ``paid_until``; ``unpaid``: seats too short to pay it and keep a chip."""

    TYPE = "house.time.collected"
    seats: SeatMap
    total: int
    paid_until: str
    unpaid: tuple[Seat, ...] | None = None
