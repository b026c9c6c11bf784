"""The table and hand state the core threads through ``apply``.

``apply`` never changes the state it is given: it works on a shallow copy (:meth:`TableState.copy`,
:meth:`HandState.copy`) and replaces whole fields. A hand is a few records (chips, deal, cards,
board rulings, irregularities, showdown) that the copy shares with the state before it; a rule
that changes one asks for it with ``hand.edit_…()``, which copies it once per input. Containers
inside are immutable (tuples, frozensets) or treated as such (``Mapping``, replaced with a new
dict on every change), so an old state stays valid after the new one is made.

Every input copies the table and the hand, and the rules read their fields many times an input:
the classes are slotted (reading a slot is the quickest attribute access CPython has) and each
copies itself with a method generated from its slots (:func:`slot_copier`), several times quicker
than ``copy.copy`` or ``dataclasses.replace``, which re-runs ``__init__``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from controller.cards import Card
from controller.decks import DeckManifest
from controller.game.betting import Round
from controller.game.hands import HandValue
from controller.game.pots import PotSplit
from controller.game.rake import HouseTake
from controller.profiles import RulesProfile
from controller.rules.ids import Rule
from controller.table.streets import Street
from controller.table.values import (
    ActionRecord,
    AuditGroup,
    AuditRead,
    DeckAudit,
    DeckStatus,
    DeviceState,
    Exposure,
    Hold,
    PendingGroup,
    Phase,
    Pile,
    Place,
    Redeal,
    Ruling,
)

__all__ = [
    "BOARD",
    "BURN",
    "HELD",
    "MUCK",
    "RUNOUT",
    "SET_ASIDE",
    "ActionRecord",
    "AuditGroup",
    "AuditRead",
    "BoardRulings",
    "Cards",
    "Chips",
    "Deal",
    "DeckAudit",
    "DeckStatus",
    "DeviceState",
    "Exposure",
    "HandState",
    "Hold",
    "Irregularities",
    "Owed",
    "PendingGroup",
    "Phase",
    "Pile",
    "Place",
    "Redeal",
    "Ruling",
    "Showdown",
    "TableState",
    "new_table",
    "slot_copier",
]


def slot_copier(cls: type, slots: Iterable[str], reset: Mapping[str, Any] | None = None) -> Any:
    """A function returning a shallow copy of a ``cls`` instance: one line per slot (``reset``:
    slots the copy starts afresh, with these values), generated once, because a copy is made of
    the table and the hand on every input."""
    fresh = dict(reset or {})
    lines = [
        f"    new.{name} = fresh_{name}\n" if name in fresh else f"    new.{name} = self.{name}\n"
        for name in slots
    ]
    source = f"def copy(self):\n    new = new_instance(cls)\n{''.join(lines)}    return new\n"
    namespace: dict[str, Any] = {"new_instance": object.__new__, "cls": cls}
    namespace.update({f"fresh_{name}": value for name, value in fresh.items()})
    # named after the class, so that profiles tell the copies of different classes apart
    code = compile(source, f"<{cls.__qualname__}.copy>", "exec")
    exec(code, namespace)  # noqa: S102 (the source is made of the class's own slot names)
    copy = namespace["copy"]
    copy.__qualname__ = f"{cls.__qualname__}.copy"
    copy.__doc__ = "A shallow copy to change (containers inside are replaced, never mutated)."
    return copy


class _Record:
    """A part of the hand that inputs share until one changes it (see :meth:`HandState.edit`).

    Each record is a slotted dataclass; its ``copy`` is generated from its slots when the
    dataclass makes the slotted class (the first, unslotted class of the decorator gets none).
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        slots = cls.__dict__.get("__slots__")
        if slots:
            cls.copy = slot_copier(cls, slots)  # type: ignore[method-assign]

    def copy(self: _R) -> _R:
        """A shallow copy to change (containers inside are replaced, never mutated)."""
        raise NotImplementedError  # replaced in every slotted subclass


_R = TypeVar("_R", bound=_Record)


@dataclass(slots=True)
class Chips(_Record):
    """The betting: stacks, what each seat put in, the open round and the action so far."""

    stacks: Mapping[int, int]
    committed: Mapping[int, int]
    posts: Mapping[int, int] = field(default_factory=dict)  # blinds and antes actually posted
    # dead money: chips in the pot that are no seat's bet (an ante posted for the table); they go
    # to the main pot and set no seat's level
    dead: Mapping[int, int] = field(default_factory=dict)
    straddles: tuple[tuple[int, int], ...] = ()  # (seat, chips) of each straddle, in order
    owed_posts: tuple[tuple[int, int, int], ...] = ()  # (seat, live, dead): MISSED-BLINDS
    folded: frozenset[int] = frozenset()
    round: Round | None = None
    last_round: Round | None = None
    actions: tuple[ActionRecord, ...] = ()
    before_last_action: HandState | None = None  # for a correction of that action (DE-1548)


@dataclass(slots=True)
class Deal(_Record):
    """The shuffler's side: the deck, the groups dispensed and what became of them."""

    shuffle_id: int | None = None
    hole_groups: int = 0
    last_group: int = 0  # the highest group number dispensed (a stub reshuffle keeps numbering)
    pending: tuple[PendingGroup, ...] = ()
    returning: tuple[PendingGroup, ...] = ()  # unread cards of broken groups, back at the reshuffle
    tray: int = 0  # dispensed cards not yet read anywhere
    stub: int = 52  # cards still in the shuffler, as it last reported
    delivered: frozenset[int] = frozenset()
    dealt: Mapping[int, tuple[Card, ...]] = field(default_factory=dict)  # hole cards as delivered
    deal_done: bool = False
    deadline: datetime | None = None  # when the seats must hold their cards (SEAT-COUNT)
    owed: Mapping[int, int] = field(default_factory=dict)  # replacement cards owed to seats
    replaced: frozenset[Card] = frozenset()  # replacement cards dealt (EXP-REPL-EXPOSED)
    extras: int = 0  # extra cards after the starting hands
    recheck: str | None = None  # the deck must be counted again before dispensing (why)
    manual_board: bool = False  # the shuffler failed: the board comes from the stub by hand
    reshuffle_due: Rule | None = None  # a stub reshuffle was asked and not yet counted
    # (group, card) of each card drawn from a dispensed group by this input: the deck audit
    # (controller/rules/deck_audit.py) records each with the zone it was read at, and empties it
    drawn: tuple[tuple[int, Card], ...] = ()


@dataclass(slots=True)
class Cards(_Record):
    """Where every card read in this hand is: the one location map, and each pile in order."""

    where: Mapping[Card, Place] = field(default_factory=dict)
    piles: Mapping[Place, tuple[Card, ...]] = field(default_factory=dict)

    def at(self, place: Place) -> tuple[Card, ...]:
        """The cards of one pile, in the order they arrived."""
        return self.piles.get(place, ())

    @property
    def board(self) -> tuple[Card, ...]:
        """The board, in the order it was dealt."""
        return self.piles.get(BOARD, ())

    def seat(self, seat: int) -> tuple[Card, ...]:
        """The cards at ``seat``."""
        return self.piles.get(Place(Pile.SEAT, seat), ())

    @property
    def holes(self) -> dict[int, tuple[Card, ...]]:
        """Every seat's cards (seats that hold any)."""
        return {
            place.seat: cards
            for place, cards in self.piles.items()
            if place.pile is Pile.SEAT and place.seat is not None and cards
        }


BOARD = Place(Pile.BOARD)
SET_ASIDE = Place(Pile.SET_ASIDE)
HELD = Place(Pile.HELD)
BURN = Place(Pile.BURN)
MUCK = Place(Pile.MUCK)
RUNOUT = Place(Pile.RUNOUT)


@dataclass(slots=True)
class BoardRulings(_Record):
    """What the burn and board rulings decided about the streets still to come."""

    next_burn: Card | None = None  # an exposed or extra card that becomes the next burn
    burn_for: Mapping[Street, Card] = field(default_factory=dict)
    no_burn: frozenset[Street] = frozenset()  # streets dealt without a burn after a reshuffle
    premature: frozenset[Street] = frozenset()  # streets turned too soon (FLOP/TURN/RIVER-PREM)
    reshuffle_after: tuple[Street, Rule] | None = None  # reshuffle the stub when it closes


@dataclass(slots=True)
class Irregularities(_Record):
    """Holds, dead hands and the cards exposed or dead."""

    holds: tuple[Hold, ...] = ()
    hold_count: int = 0
    dead: Mapping[int, str] = field(default_factory=dict)  # dead hands: seat → reason
    exposures: tuple[Exposure, ...] = ()
    dead_cards: frozenset[Card] = frozenset()


@dataclass(slots=True)
class Showdown(_Record):
    """The showdown: who showed, mucked, claimed, and the award proposed."""

    tabled: Mapping[int, HandValue] = field(default_factory=dict)
    mucked: frozenset[int] = frozenset()  # live hands given up at showdown
    muck_order: tuple[int, ...] = ()  # the same, in the order they were given up
    order: tuple[int, ...] = ()
    declarations: tuple[tuple[int, bool], ...] = ()  # (seat, shown) as they happened
    proposal: tuple[PotSplit, ...] | None = None
    plays_board: frozenset[int] = frozenset()
    claims: frozenset[int] = frozenset()
    faceup: bool = False  # hands are shown before the runout (ALLIN-FACEUP)
    shown: Mapping[int, tuple[Card, ...]] = field(default_factory=dict)
    button_seen: int | None = None  # where the button really was (BUTTON-POS after the cutoff)
    take: HouseTake | None = None  # the house's take the proposal leaves out (HOUSE-RAKE)
    runs: int = 1  # runouts agreed (RUN-TWICE)
    run_from: Street | None = None  # the last street out when they were agreed
    boards: tuple[tuple[Card, ...], ...] = ()  # the whole board of each runout finished


_CHIPS, _DEAL, _CARDS, _BOARD, _IRREGULAR, _SHOWDOWN = (1 << i for i in range(6))


class HandState:
    """One hand from ``start_hand`` to ``hand.completed``: who is in it and where, its phase and
    street, and the records each part of the rules keeps.

    Every input works on a copy of the hand (:meth:`copy`). The records are shared with the hand
    before until a rule changes one: ``hand.deal`` reads it, and ``hand.edit_deal()`` gives the
    copy this input may change (the first call copies it). A record is never changed through a
    plain read; ``tests/core/test_properties.py`` checks that the state given to ``apply`` comes
    back unchanged after every input of thousands of hands.
    """

    hand_id: str
    number: int
    button: int
    order: tuple[int, ...]  # dealt-in seats, first left of the button, button last
    deal_order: tuple[int, ...]  # the order hole groups go out (heads-up per profile)
    small_blind_seat: int | None
    big_blind_seat: int | None
    start_stacks: Mapping[int, int]
    phase: Phase
    street: Street
    chips: Chips
    deal: Deal
    cards: Cards
    board_rulings: BoardRulings
    irregular: Irregularities
    showdown: Showdown
    _owned: int

    __slots__ = (
        "_owned",
        "big_blind_seat",
        "board_rulings",
        "button",
        "cards",
        "chips",
        "deal",
        "deal_order",
        "hand_id",
        "irregular",
        "number",
        "order",
        "phase",
        "showdown",
        "small_blind_seat",
        "start_stacks",
        "street",
    )

    def __init__(
        self,
        *,
        hand_id: str,
        number: int,
        button: int,
        order: tuple[int, ...],
        deal_order: tuple[int, ...],
        small_blind_seat: int | None,
        big_blind_seat: int | None,
        chips: Chips,
    ) -> None:
        self.hand_id = hand_id
        self.number = number
        self.button = button
        self.order = order
        self.deal_order = deal_order
        self.small_blind_seat = small_blind_seat
        self.big_blind_seat = big_blind_seat
        self.start_stacks = dict(chips.stacks)
        self.phase = Phase.DEALING
        self.street = Street.PREFLOP
        self.chips = chips
        self.deal = Deal()
        self.cards = Cards()
        self.board_rulings = BoardRulings()
        self.irregular = Irregularities()
        self.showdown = Showdown()
        self._owned = -1  # a new hand owns every record

    def copy(self) -> HandState:
        """A copy whose records are shared until changed (it owns none of them yet)."""
        raise NotImplementedError  # generated from the slots below the class

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HandState):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _HAND_FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HandState({self.hand_id}, {self.phase}, {self.street})"

    # ------------------------------------------------------------------ records to change

    def edit_chips(self) -> Chips:
        """The chips record this input may change."""
        if not self._owned & _CHIPS:
            self.chips = self.chips.copy()
            self._owned |= _CHIPS
        return self.chips

    def edit_deal(self) -> Deal:
        """The deal record this input may change."""
        if not self._owned & _DEAL:
            self.deal = self.deal.copy()
            self._owned |= _DEAL
        return self.deal

    def edit_cards(self) -> Cards:
        """The card map this input may change (through ``controller/table/tray.py``)."""
        if not self._owned & _CARDS:
            self.cards = self.cards.copy()
            self._owned |= _CARDS
        return self.cards

    def edit_board_rulings(self) -> BoardRulings:
        """The board rulings this input may change."""
        if not self._owned & _BOARD:
            self.board_rulings = self.board_rulings.copy()
            self._owned |= _BOARD
        return self.board_rulings

    def edit_irregular(self) -> Irregularities:
        """The irregularities this input may change."""
        if not self._owned & _IRREGULAR:
            self.irregular = self.irregular.copy()
            self._owned |= _IRREGULAR
        return self.irregular

    def edit_showdown(self) -> Showdown:
        """The showdown record this input may change."""
        if not self._owned & _SHOWDOWN:
            self.showdown = self.showdown.copy()
            self._owned |= _SHOWDOWN
        return self.showdown

    # ------------------------------------------------------------------ derived

    @property
    def live(self) -> tuple[int, ...]:
        """Seats still holding a live hand, first left of the button first."""
        folded, mucked = self.chips.folded, self.showdown.mucked
        return tuple(s for s in self.order if s not in folded and s not in mucked)

    @property
    def live_count(self) -> int:
        """How many live hands are left (folded and mucked seats are disjoint)."""
        return len(self.order) - len(self.chips.folded) - len(self.showdown.mucked)

    @property
    def total_pot(self) -> int:
        """Every chip committed to the hand so far, dead money included."""
        dead = self.chips.dead
        return sum(self.chips.committed.values()) + (sum(dead.values()) if dead else 0)


HandState.copy = slot_copier(HandState, HandState.__slots__, {"_owned": 0})  # type: ignore[method-assign]
_HAND_FIELDS = tuple(name for name in HandState.__slots__ if name != "_owned")


class Owed(StrEnum):
    """MISSED-BLINDS: what a seat owes before it plays again."""

    SMALL = "small"  # the small blind, posted dead
    BIG = "big"  # the big blind, posted live (a new player too)
    BOTH = "both"  # the small blind dead and the big blind live


@dataclass(slots=True)
class TableState:
    """The whole table: seats, button, rules, the current deck and the hand in progress."""

    table_id: str
    profile: RulesProfile
    manifest: DeckManifest
    stacks: Mapping[int, int]
    button: int
    blinds: tuple[int, int]
    ante: int = 0
    hands_started: int = 0
    deck: DeckStatus = field(default_factory=DeckStatus)
    hand: HandState | None = None
    last_hand: HandState | None = None
    settle: float = 3.0  # seconds the readers get to see delivered cards
    last_blinds: tuple[int, int] | None = None  # last hand's small blind position and big blind
    redeal: Redeal | None = None
    devices: Mapping[str, DeviceState] = field(default_factory=dict)
    other_decks: Mapping[str, tuple[str, Card]] = field(default_factory=dict)
    house: int = 0  # every chip the house has taken: rake, jackpot drops, time (HOUSE-*)
    time_paid_until: datetime | None = None  # HOUSE-TIME: the period paid for ends then
    owes: Mapping[int, Owed] = field(default_factory=dict)  # MISSED-BLINDS: seats' debts
    posting: frozenset[int] = frozenset()  # seats that posted what they owe for the next hand
    played: frozenset[int] = frozenset()  # seats dealt in at least once (the others are new)
    # SHF-INFO: the decks dealt from and not yet revealed, oldest first (the last few only)
    audit: tuple[DeckAudit, ...] = ()

    def copy(self) -> TableState:
        """A shallow copy to change."""
        raise NotImplementedError  # generated from the slots below the class


TableState.copy = slot_copier(TableState, TableState.__slots__)  # type: ignore[method-assign]


def new_table(
    table_id: str,
    profile: RulesProfile,
    manifest: DeckManifest,
    stacks: Mapping[int, int],
    button: int,
    blinds: tuple[int, int],
    ante: int = 0,
) -> TableState:
    """A table between hands, ready for its first ``start_hand``."""
    if button not in stacks:
        raise ValueError(f"the button seat {button} has no player")
    if any(seat < 1 or seat > 10 for seat in stacks):
        raise ValueError("seats are numbered 1 to 10")
    small, big = blinds
    if not 0 < small <= big:
        raise ValueError(f"blinds must be positive with the small blind first: {blinds}")
    if ante < 0:
        raise ValueError("the ante cannot be negative")
    return TableState(table_id, profile, manifest, dict(stacks), button, blinds, ante)
