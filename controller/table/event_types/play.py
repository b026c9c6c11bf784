"""The events of play between the start and the showdown: betting, the deck, the deal and the
board."""

from __future__ import annotations

from dataclasses import dataclass

from controller.cards import Card
from controller.table.event_types.seats import Seat, SeatMap
from controller.table.events import EventData, key, secret
from controller.table.inputs import ActionKind, Purpose


@dataclass(frozen=True, slots=True)
class BettingAction(EventData):
    """``betting.action``: a post (``blind``, ``amount``) or an action (``to``, ``put_in``)."""

    TYPE = "betting.action"
    seat: Seat
    action: ActionKind
    stack: int
    all_in: bool
    blind: str | None = None  # a post: ante, small, big, dead, missed
    amount: int | None = None  # a post: the chips posted
    to: int | None = None  # an action: the seat's bet in the round after it
    put_in: int | None = None
    pot: int | None = None
    reopens_betting: bool | None = None  # false for an all-in short of a full raise
    misdeal_cutoff_passed: bool | None = None


@dataclass(frozen=True, slots=True)
class CorrectedAction(EventData):
    """What a corrected action was."""

    action: ActionKind
    to: int


@dataclass(frozen=True, slots=True)
class BettingActionCorrected(EventData):
    """``betting.action.corrected``: the player corrected the announced action (DE-1548)."""

    TYPE = "betting.action.corrected"
    RULING = True
    seat: Seat
    was: CorrectedAction


@dataclass(frozen=True, slots=True)
class BettingRoundClosed(EventData):
    """``betting.round.closed``: the pot after it, and an uncalled bet given back."""

    TYPE = "betting.round.closed"
    street: str
    pot: int
    returned: SeatMap | None = None
    closed_by: str | None = None
    no_action: bool | None = None


@dataclass(frozen=True, slots=True)
class DeckVerified(EventData):
    """``deck.verified`` (``stub: true`` when the stub was reshuffled, without a commitment)."""

    TYPE = "deck.verified"
    shuffle_id: int
    counted: int
    commitment: str | None = None
    stub: bool | None = None


@dataclass(frozen=True, slots=True)
class DeckRejected(EventData):
    """``deck.rejected``: the deck may not deal."""

    TYPE = "deck.rejected"
    shuffle_id: int
    counted: int | None = None
    faults: tuple[str, ...] | None = None
    missing: tuple[str, ...] | None = None
    duplicates: tuple[str, ...] | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class DeckRevealed(EventData):
    """``deck.revealed``: a retired deck's order (secure view only)."""

    TYPE = "deck.revealed"
    shuffle_id: int
    cards: int
    order: tuple[Card, ...] | None = secret()


@dataclass(frozen=True, slots=True)
class StubReshuffleRequired(EventData):
    """``stub.reshuffle.required``: the cards that go back into the stub before it is reshuffled.

    ``with`` names the cards the table read (premature board cards, a flop dealt again), never a
    burn, a mucked card or a hand; ``unread`` counts the board cards dealt and never read that go
    back with them, ``unread_groups`` the groups they were counted from; ``stub`` is the count
    the reshuffled stub must have.
    """

    TYPE = "stub.reshuffle.required"
    stub: int
    back: tuple[Card, ...] = key("with", default=())
    unread: int | None = None
    unread_groups: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class DealGroupDispensed(EventData):
    """``deal.group.dispensed`` (secure view adds ``cards`` when the shuffler reports them)."""

    TYPE = "deal.group.dispensed"
    group: int
    purpose: Purpose
    seat: Seat | None
    count: int
    cards: tuple[Card, ...] | None = secret()


@dataclass(frozen=True, slots=True)
class DealGroupDelivered(EventData):
    """``deal.group.delivered``: a whole group at its seat (secure view adds ``cards``)."""

    TYPE = "deal.group.delivered"
    seat: Seat
    group: int | None
    count: int
    replacement: bool | None = None
    cards: tuple[Card, ...] | None = secret()


@dataclass(frozen=True, slots=True)
class DealComplete(EventData):
    """``deal.complete``: every seat holds its two cards."""

    TYPE = "deal.complete"
    seats: tuple[Seat, ...]


@dataclass(frozen=True, slots=True)
class CardExposed(EventData):
    """``card.exposed``: how (``exposed``, ``off_table``) and by whom."""

    TYPE = "card.exposed"
    seat: Seat | None
    card: Card | None
    how: str
    by: str | None = None


@dataclass(frozen=True, slots=True)
class CardDead(EventData):
    """``card.dead`` (the card is secret when the table has not seen it)."""

    TYPE = "card.dead"
    seat: Seat | None
    card: Card | None
    hidden_card: Card | None = secret("card")


@dataclass(frozen=True, slots=True)
class CardReplacementRequested(EventData):
    """``card.replacement.requested``: the seat is owed a card (the card it replaces, if known)."""

    TYPE = "card.replacement.requested"
    seat: Seat
    card: Card | None


@dataclass(frozen=True, slots=True)
class CardBurnAssigned(EventData):
    """``card.burn.assigned``: the street's burn, and which rule made a card the burn."""

    TYPE = "card.burn.assigned"
    street: str
    source: str | None = None
    card: Card | None = None  # public when the table has seen it
    hidden_card: Card | None = secret("card")


@dataclass(frozen=True, slots=True)
class BoardDealt(EventData):
    """``board.dealt``: the street's cards and the whole board."""

    TYPE = "board.dealt"
    street: str
    cards: tuple[Card, ...]
    board: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class BoardPremature(EventData):
    """``board.premature``: a street turned too soon."""

    TYPE = "board.premature"
    street: str
    card: Card


@dataclass(frozen=True, slots=True)
class BoardCardSetAside(EventData):
    """``board.card.set_aside``: a board card out of play (``reason`` when it is not premature)."""

    TYPE = "board.card.set_aside"
    street: str
    card: Card
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class BoardRedealRequired(EventData):
    """``board.redeal.required``: the street is dealt again.

    ``cards`` names the board cards going back and, for a broken group, ``returned`` how many of
    its cards go back in all.
    """

    TYPE = "board.redeal.required"
    street: str
    cards: tuple[Card, ...] | None = None
    returned: int | None = None
