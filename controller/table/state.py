"""The table and hand state the core threads through ``apply``.

States are plain dataclasses that ``apply`` never mutates: it works on a shallow copy
(:meth:`HandState.copy`) and replaces whole fields. Containers inside are immutable (tuples,
frozensets) or treated as such (``Mapping``, replaced with a new dict on every change), so an old
state stays valid after the new one is made. The copy duplicates the instance ``__dict__``, which
is why these two classes are not slotted: ``dataclasses.replace`` would do the same but re-runs
``__init__`` and costs twenty times more on this hot path (every input copies both states).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from controller.cards import Card
from controller.decks import DeckManifest
from controller.game.betting import Round
from controller.game.hands import HandValue
from controller.game.pots import PotSplit
from controller.profiles import RulesProfile
from controller.rules.ids import Rule
from controller.table.inputs import ActionKind, Purpose
from controller.table.streets import Street


class Phase(StrEnum):
    """Where a hand is."""

    DEALING = "dealing"  # hole groups going out
    BETTING = "betting"  # a betting round is open
    BOARD = "board"  # waiting for the burn and the next street
    SHOWDOWN = "showdown"  # live hands being tabled or mucked
    AWARD = "award"  # the award is proposed; waiting for the dealer's push


@dataclass(frozen=True, slots=True)
class DeviceState:
    """What the table knows of one device."""

    kind: str = ""
    health: str = "online"
    approved: bool | None = None
    faults: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Redeal:
    """After a misdeal the next hand is the same deal again: same button, same players."""

    of: str
    button: int
    seats: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DeckStatus:
    """The shuffler's current deck as far as the table knows."""

    shuffle_id: int | None = None
    checked: bool = False  # a deck check passed for this shuffle
    ready: bool = False  # the shuffle completed and the deck was verified
    used_by: str | None = None  # hand that dealt from it


class ActionRecord(NamedTuple):
    """One betting action as it went into the hand history."""

    street: Street
    seat: int
    kind: ActionKind
    to: int
    put_in: int
    all_in: bool


class PendingGroup(NamedTuple):
    """A dispensed group whose cards have not all been read where they went."""

    group: int
    purpose: Purpose
    seat: int | None
    size: int
    cards: tuple[Card | None, ...]
    read: tuple[Card, ...] = ()


class Ruling(StrEnum):
    """What confirming a hold does (each is one function, registered in the engine)."""

    CONTINUE = "continue"  # the hand goes on as it is
    MISDEAL = "misdeal"
    VOID = "void"
    DEAD_HAND = "dead_hand"
    CARD_DEAD = "card_dead"
    MANUAL_BOARD = "manual_board"
    REDEAL_BOARD = "redeal_board"
    BURN_CORRECT = "burn_correct"
    BURN_EXTRA_CORRECT = "burn_extra_correct"
    CLAIM_UPHELD = "claim_upheld"
    AWARD_AS_PROPOSED = "award_as_proposed"


class Hold(NamedTuple):
    """A ruling waiting for the dealer or the floor: what the rule would do, and why."""

    id: str
    rule: Rule
    ruling: Ruling  # what ``confirm`` does
    reason: str
    seat: int | None = None
    card: Card | None = None
    group: int | None = None  # BOARD-GROUP: the shuffler group the ruling is about
    street: Street | None = None  # BOARD-GROUP: the street that group was for


class Exposure(NamedTuple):
    """A hole card seen face up, boxed or dealt off the table during the deal."""

    kind: str  # exposed, off_table, boxed
    seat: int | None
    card: Card | None
    remedy_due: bool = False  # EXP-OTHER: replace it once the groups are delivered


@dataclass
class HandState:
    """One hand from ``start_hand`` to ``hand.completed``."""

    hand_id: str
    number: int
    button: int
    order: tuple[int, ...]  # dealt-in seats, first left of the button, button last
    deal_order: tuple[int, ...]  # the order hole groups go out (heads-up per profile)
    small_blind_seat: int | None
    big_blind_seat: int | None
    start_stacks: Mapping[int, int]
    stacks: Mapping[int, int]
    committed: Mapping[int, int]
    phase: Phase = Phase.DEALING
    street: Street = Street.PREFLOP
    folded: frozenset[int] = frozenset()
    round: Round | None = None
    last_round: Round | None = None
    shuffle_id: int | None = None
    hole_groups: int = 0
    last_group: int = 0  # the highest group number dispensed (a stub reshuffle keeps numbering)
    pending: tuple[PendingGroup, ...] = ()
    holes: Mapping[int, tuple[Card, ...]] = field(default_factory=dict)
    delivered: frozenset[int] = frozenset()
    board: tuple[Card, ...] = ()
    burns: tuple[Card, ...] = ()
    muck: tuple[Card, ...] = ()
    tray: int = 0  # dispensed cards not yet read anywhere
    stub: int = 52  # cards still in the shuffler, as it last reported
    dealt: Mapping[int, tuple[Card, ...]] = field(default_factory=dict)  # hole cards as delivered
    actions: tuple[ActionRecord, ...] = ()
    posts: Mapping[int, int] = field(default_factory=dict)  # blinds and antes actually posted
    tabled: Mapping[int, HandValue] = field(default_factory=dict)
    mucked: frozenset[int] = frozenset()  # live hands given up at showdown
    muck_order: tuple[int, ...] = ()  # the same, in the order they were given up
    showdown_order: tuple[int, ...] = ()
    declarations: tuple[tuple[int, bool], ...] = ()  # showdown: (seat, shown) as they happened
    proposal: tuple[PotSplit, ...] | None = None
    # irregularities and rulings
    holds: tuple[Hold, ...] = ()
    hold_count: int = 0
    dead: Mapping[int, str] = field(default_factory=dict)  # dead hands: seat → reason
    exposures: tuple[Exposure, ...] = ()
    dead_cards: frozenset[Card] = frozenset()
    owed: Mapping[int, int] = field(default_factory=dict)  # replacement cards owed to seats
    next_burn: Card | None = None  # an exposed or extra card that becomes the next burn
    burn_for: Mapping[Street, Card] = field(default_factory=dict)
    no_burn: frozenset[Street] = frozenset()  # streets dealt without a burn after a reshuffle
    set_aside: tuple[Card, ...] = ()  # premature board cards out of play
    premature: frozenset[Street] = frozenset()  # streets turned too soon (FLOP/TURN/RIVER-PREM)
    held_board: tuple[Card, ...] = ()  # board cards read while a burn or board ruling is pending
    reshuffle_after: tuple[Street, Rule] | None = None  # reshuffle the stub when it closes
    reshuffle_due: Rule | None = None  # a stub reshuffle was asked and not yet counted
    returning: tuple[PendingGroup, ...] = ()  # unread cards of broken groups, back at the reshuffle
    extras: int = 0  # extra cards after the starting hands
    deal_done: bool = False
    replaced: frozenset[Card] = frozenset()  # replacement cards dealt (EXP-REPL-EXPOSED)
    plays_board: frozenset[int] = frozenset()
    claims: frozenset[int] = frozenset()
    deadline: datetime | None = None  # when the seats must hold their cards (SEAT-COUNT)
    recheck: str | None = None  # the deck must be counted again before dispensing (why)
    manual_board: bool = False  # the shuffler failed: the board comes from the stub by hand
    faceup: bool = False  # hands are shown before the runout (ALLIN-FACEUP)
    shown: Mapping[int, tuple[Card, ...]] = field(default_factory=dict)
    before_last_action: HandState | None = None  # for a correction of that action (DE-1548)
    button_seen: int | None = None  # where the button really was (BUTTON-POS after the cutoff)

    def copy(self) -> HandState:
        """A shallow copy to change (containers are replaced, never mutated)."""
        new = object.__new__(HandState)
        new.__dict__.update(self.__dict__)
        return new

    @property
    def live(self) -> tuple[int, ...]:
        """Seats still holding a live hand, first left of the button first."""
        return tuple(s for s in self.order if s not in self.folded and s not in self.mucked)

    @property
    def live_count(self) -> int:
        """How many live hands are left (folded and mucked seats are disjoint)."""
        return len(self.order) - len(self.folded) - len(self.mucked)

    @property
    def total_pot(self) -> int:
        """Every chip committed to the hand so far."""
        return sum(self.committed.values())


@dataclass
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
    deck: DeckStatus = DeckStatus()
    hand: HandState | None = None
    last_hand: HandState | None = None
    settle: float = 3.0  # seconds the readers get to see delivered cards
    last_blinds: tuple[int, int] | None = None  # last hand's small blind position and big blind
    redeal: Redeal | None = None
    devices: Mapping[str, DeviceState] = field(default_factory=dict)
    other_decks: Mapping[str, tuple[str, Card]] = field(default_factory=dict)

    def copy(self) -> TableState:
        """A shallow copy to change."""
        new = object.__new__(TableState)
        new.__dict__.update(self.__dict__)
        return new


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
