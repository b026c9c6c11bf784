"""The small values the table and hand state hold: the hand's phase, a device's and a deck's
status, records of actions, groups, holds, exposures and the deck audit, and where a card lies
(controller/table/state.py holds the state made of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from controller.cards import Card
from controller.rules.ids import Rule
from controller.table.inputs import ActionKind, Purpose, Zone
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
    owed_posts: tuple[tuple[int, int, int], ...] = ()  # MISSED-BLINDS posts, made again


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


class AuditRead(NamedTuple):
    """A card read for a dispensed group, and the zone where it was first read (SHF-INFO)."""

    card: Card
    zone: Zone


class AuditGroup(NamedTuple):
    """A group as the shuffler reported it, and the cards the table read for it (SHF-INFO).

    A shuffle's groups come off the top of its order one after the other, so the group was the
    ``size`` cards of the order before the last ``remaining``: the revealed order says which.
    """

    group: int
    purpose: Purpose
    seat: int | None
    size: int
    remaining: int  # cards left in the shuffler after it
    faces: tuple[Card | None, ...] | None  # as reported (None: all withheld, the default)
    hand_id: str | None  # the hand it was dispensed in
    reads: tuple[AuditRead, ...] = ()


class DeckAudit(NamedTuple):
    """A deck dealt from and not yet revealed: its groups in the order they were dispensed."""

    shuffle_id: int
    groups: tuple[AuditGroup, ...] = ()


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


class Pile(StrEnum):
    """Where a placed card lies on the table."""

    SEAT = "seat"
    BOARD = "board"
    SET_ASIDE = "set_aside"  # a board card out of play (premature, a flop dealt again)
    HELD = "held"  # a board card read while a burn or board ruling is pending
    BURN = "burn"
    MUCK = "muck"
    RUNOUT = "runout"  # the cards of an earlier runout, still on the board (RUN-TWICE)


class Place(NamedTuple):
    """A pile, and the seat for a seat's cards."""

    pile: Pile
    seat: int | None = None
