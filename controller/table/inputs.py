"""The inputs of the pure core: device events and dealer commands.

Every input carries the time it happened (``ts``); the core never reads a clock. Device events are
in transport-independent form: a driver turns the bytes of its device into these, whatever the
wire protocol. Dealer commands are the verbs of the dealer console (docs/mqtt.md).

All inputs are frozen, slotted dataclasses: cheap to build on the hot path, and pydantic validates
JSON into them directly (the request gate, ``controller/shell/gate.py``, and the journal form,
``controller/table/codec.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Literal, NamedTuple

from controller.authority import Authority
from controller.cards import Card


class ZoneKind(StrEnum):
    """Where an antenna looks."""

    SEAT = "seat"
    BOARD = "board"
    BURN = "burn"
    MUCK = "muck"
    ENROLL = "enroll"
    SHUFFLER_IN = "shuffler_in"


class Zone(NamedTuple):
    """An antenna zone: ``seat:3``, ``board``, ``burn``, ``muck``."""

    kind: ZoneKind
    seat: int | None = None

    def __str__(self) -> str:
        return f"seat:{self.seat}" if self.kind is ZoneKind.SEAT else self.kind.value

    @classmethod
    def parse(cls, text: str) -> Zone:
        """Parse ``"seat:3"``, ``"board"``, ``"burn"``, ``"muck"``…; raise ValueError otherwise."""
        kind, _, index = text.strip().partition(":")
        try:
            zone_kind = ZoneKind(kind)
        except ValueError:
            names = ", ".join(k.value for k in ZoneKind)
            raise ValueError(f"unknown zone {text!r} (expected seat:N or one of {names})") from None
        if zone_kind is ZoneKind.SEAT:
            if not index.isdigit() or not 1 <= int(index) <= 10:
                raise ValueError(f"bad seat zone {text!r} (expected seat:1 … seat:10)")
            return cls(zone_kind, int(index))
        if index:
            raise ValueError(f"zone {kind!r} takes no index: {text!r}")
        return cls(zone_kind)


class Purpose(StrEnum):
    """Why the shuffler dispensed a group."""

    HOLE = "hole"
    BURN = "burn"
    FLOP = "flop"
    TURN = "turn"
    RIVER = "river"
    BOARD_OTHER = "board_other"
    EXTRA = "extra"


class DeckFault(StrEnum):
    """What a shuffler's deck check found wrong (TSP/1 DECK_CHECK verdict bits)."""

    SHORT = "short"
    EXTRA = "extra"
    DUPLICATE = "duplicate"
    FOREIGN_BACK = "foreign_back"
    UNREADABLE = "unreadable"
    WRONG_PROFILE = "wrong_profile"


class Health(StrEnum):
    """A device supervisor's view of its device."""

    ONLINE = "online"
    STALE = "stale"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    REJECTED = "rejected"


# --------------------------------------------------------------------------- device events


@dataclass(frozen=True, slots=True)
class Origin:
    """A device event's own identity: the device's boot id and its event sequence number.

    A device that numbers its events (TSP/1: one outstanding at a time, resent until
    acknowledged) sends the same ``(boot_id, seq)`` again only for the event the host had not
    acknowledged; ``part`` tells apart several inputs a driver makes of one device event.
    """

    boot_id: int
    seq: int
    part: int = 0


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """Base of every device event: when, and which configured device.

    ``origin`` is the event's identity on the device, when the device gives one: the shell
    recognises a redelivered event by it (never by its bytes, which hold the time it arrived).
    """

    ts: datetime
    device: str
    origin: Origin | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class DeckChecked(DeviceInput):
    """The shuffler counted and (if it can) recognised the deck it is shuffling."""

    shuffle_id: int
    faults: frozenset[DeckFault]
    counted: int
    missing: tuple[Card, ...] = ()
    duplicates: tuple[Card, ...] = ()


@dataclass(frozen=True, slots=True)
class ShuffleCompleted(DeviceInput):
    """A shuffle finished; ``ok`` is false when it was aborted or the deck check failed."""

    shuffle_id: int
    ok: bool
    card_count: int
    commitment: str = ""


@dataclass(frozen=True, slots=True)
class GroupDispensed(DeviceInput):
    """The shuffler put a group of cards in its delivery tray.

    ``cards`` has one entry per card; ``None`` where the identity is withheld by policy.
    """

    shuffle_id: int
    group: int
    purpose: Purpose
    seat: int | None
    cards: tuple[Card | None, ...]
    remaining: int


@dataclass(frozen=True, slots=True)
class DeckRevealed(DeviceInput):
    """After a deck is retired the shuffler reveals its order; ``verified`` is the hash check."""

    shuffle_id: int
    order: tuple[Card, ...]
    verified: bool


@dataclass(frozen=True, slots=True)
class TagArrived(DeviceInput):
    """A reader started seeing a tag at a zone."""

    zone: Zone
    uid: str


@dataclass(frozen=True, slots=True)
class TagDeparted(DeviceInput):
    """A reader stopped seeing a tag at a zone (lifting a card does this too)."""

    zone: Zone
    uid: str


@dataclass(frozen=True, slots=True)
class DeviceFault(DeviceInput):
    """A device raised a fault (``code`` is the fault name, e.g. ``JAM_INPUT``, ``LID_OPEN``)."""

    code: str
    fault_id: int = 0
    severity: Literal["info", "warn", "error", "critical"] = "error"
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DeviceFaultCleared(DeviceInput):
    """A device cleared a fault."""

    code: str
    fault_id: int = 0


@dataclass(frozen=True, slots=True)
class DeviceHealthChanged(DeviceInput):
    """The supervisor's health verdict changed (stale, reconnecting, rejected…).

    ``kind`` says what the device is (``shuffler`` or ``reader``) when the supervisor knows it.
    """

    health: Health
    approved: bool | None = None
    detail: str = ""
    kind: str = ""


@dataclass(frozen=True, slots=True)
class DeviceRebooted(DeviceInput):
    """The device came back with a new boot id: it lost power or reset."""

    boot_id: int


# --------------------------------------------------------------------------- shell inputs


@dataclass(frozen=True, slots=True)
class Tick(DeviceInput):
    """Time passed: the shell sends one when a deadline of the state falls due (``device`` is
    ``"clock"``). Nothing else tells the core that a reader stayed silent."""


@dataclass(frozen=True, slots=True)
class ControllerRestarted(DeviceInput):
    """The controller came back and replayed its journal (CTRL-POWER); ``device`` is
    ``"controller"``."""


# --------------------------------------------------------------------------- dealer commands


class ActionKind(StrEnum):
    """A betting action as the dealer enters it."""

    POST = "post"
    CHECK = "check"
    CALL = "call"
    BET = "bet"
    RAISE = "raise"
    FOLD = "fold"
    ALLIN = "allin"


@dataclass(frozen=True, slots=True)
class DealerInput:
    """Base of every dealer command.

    ``authority`` is who gave it (docs/security.md): set by the shell from the request's
    signature, journaled with the command, and carried as ``by`` by every event it causes. The
    core refuses what depends on it (a dealer confirming a hold that is the floor's, a misdeal
    after the cutoff by anyone but the floor); a command without one (scenario files, a table
    that takes unsigned requests) is not restricted by role.
    """

    ts: datetime
    authority: Authority | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class StartHand(DealerInput):
    """Begin a hand; by default the button moves one live seat clockwise.

    ``straddles``: the seats that straddle, in order (STRADDLE): the first under the gun (or,
    Mississippi, on the button), each next one re-straddling from the seat after the last; each
    posts twice the blind or straddle before it.
    """

    button: int | None = None
    seats: tuple[int, ...] | None = None
    straddles: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class Post(DealerInput):
    """Between hands: the seat posts the blinds it owes to play the next hand (MISSED-BLINDS)."""

    seat: int


@dataclass(frozen=True, slots=True)
class RunItTwice(DealerInput):
    """Every player is all in and they agree to run the rest of the board twice (RUN-TWICE)."""


@dataclass(frozen=True, slots=True)
class Action(DealerInput):
    """A betting action; ``amount`` is the seat's total in the round after it ("to")."""

    seat: int
    action: ActionKind
    amount: int | None = None
    oversized_chip: bool = False


@dataclass(frozen=True, slots=True)
class RoundClosed(DealerInput):
    """For tables that do not enter actions: the betting round is over."""


@dataclass(frozen=True, slots=True)
class Exposed(DealerInput):
    """A card was seen face up (by card, or the seat whose card it was).

    ``by = "player"`` when a player showed it (SHOWN-BY-PLAYER) rather than a dealer error.
    """

    card: Card | None = None
    seat: int | None = None
    by: Literal["dealer", "player"] = "dealer"


@dataclass(frozen=True, slots=True)
class Boxed(DealerInput):
    """A card was found face up in the deck."""

    card: Card | None = None
    seat: int | None = None


@dataclass(frozen=True, slots=True)
class OffTable(DealerInput):
    """A card was dealt off the table."""

    card: Card | None = None
    seat: int | None = None


@dataclass(frozen=True, slots=True)
class Misdeal(DealerInput):
    """The dealer calls a misdeal."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class Confirm(DealerInput):
    """Confirm the pending hold (or the named one)."""

    hold: str | None = None


@dataclass(frozen=True, slots=True)
class Reject(DealerInput):
    """Reject the pending hold (or the named one): the ruling does not apply."""

    hold: str | None = None


@dataclass(frozen=True, slots=True)
class TableHand(DealerInput):
    """At showdown the seat's hand is turned face up on the table.

    ``cards`` is the dealer's own reading, for when the readers could not read the hand.
    """

    seat: int
    cards: tuple[Card, ...] | None = None


@dataclass(frozen=True, slots=True)
class Muck(DealerInput):
    """At showdown the seat discards without showing."""

    seat: int


@dataclass(frozen=True, slots=True)
class PlaysBoard(DealerInput):
    """The seat declares it plays the board (before discarding, RR-HE-6)."""

    seat: int


@dataclass(frozen=True, slots=True)
class Concede(DealerInput):
    """The seat concedes the pot (by word, or by leaving the table)."""

    seat: int
    left_table: bool = False


@dataclass(frozen=True, slots=True)
class Award(DealerInput):
    """The dealer pushes the proposed award (§ 1552)."""


@dataclass(frozen=True, slots=True)
class Claim(DealerInput):
    """A player claims the pot before their cards are mucked (§ 1552)."""

    seat: int


@dataclass(frozen=True, slots=True)
class FloorOverride(DealerInput):
    """The floor decides a ruling differently; journaled with the rule ID."""

    rule: str
    decision: str


@dataclass(frozen=True, slots=True)
class Correction(DealerInput):
    """The player corrects the action the dealer announced, before anyone else acts (DE-1548)."""

    seat: int
    action: ActionKind
    amount: int | None = None


@dataclass(frozen=True, slots=True)
class RequestToSee(DealerInput):
    """A player dealt in asks to see a called hand (RR-SD-5)."""

    seat: int
    target: int


@dataclass(frozen=True, slots=True)
class ButtonReport(DealerInput):
    """The button was found at ``seat`` (BUTTON-POS): a sensor or the dealer reports it."""

    seat: int


@dataclass(frozen=True, slots=True)
class StubDisorder(DealerInput):
    """The stub was dropped or disordered (STUB-DISORDER)."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class RaiseHold(DealerInput):
    """Surveillance (or the floor) holds the hand for the floor to rule on ``rule``."""

    rule: str
    reason: str = ""
    seat: int | None = None


@dataclass(frozen=True, slots=True)
class CallFloor(DealerInput):
    """The dealer calls the floor to the table (FLOOR-CALL; journaled as ``floor.called``).

    About the pending ``hold`` (default: the first pending one), a ``seat``, in the dealer's own
    words (``reason``). In a hand with no hold pending the call holds the hand until the floor
    rules; between hands it holds nothing.
    """

    reason: str = ""
    hold: str | None = None
    seat: int | None = None


#: Command verbs as they appear on MQTT request topics and in scenario files.
COMMANDS: dict[str, type[DealerInput]] = {
    "start_hand": StartHand,
    "post": Post,
    "run_it_twice": RunItTwice,
    "action": Action,
    "round_closed": RoundClosed,
    "exposed": Exposed,
    "boxed": Boxed,
    "off_table": OffTable,
    "misdeal": Misdeal,
    "confirm": Confirm,
    "reject": Reject,
    "table": TableHand,
    "muck": Muck,
    "plays_board": PlaysBoard,
    "concede": Concede,
    "award": Award,
    "claim": Claim,
    "floor_override": FloorOverride,
    "correction": Correction,
    "request_to_see": RequestToSee,
    "button": ButtonReport,
    "stub_disorder": StubDisorder,
    "hold": RaiseHold,
    "call_floor": CallFloor,
}

COMMAND_NAMES: dict[type[DealerInput], str] = {cls: name for name, cls in COMMANDS.items()}

Input = DeviceInput | DealerInput
