"""One frozen record per event type: the ``data`` the pit can rely on (docs/events.md).

Each class is named after its type (``hand.started`` is :class:`HandStarted`); how fields become
JSON (always written, written when set, secret) is in ``controller/table/events.py``. The JSON
Schemas and the AsyncAPI document are generated from these classes
(``python -m controller.shell.schemas``), so what the daemon publishes and what its contract says
cannot part.

Values are as JSON writes them: seats are ints, cards their text (``"As"``), a seat map has
string keys (:func:`seat_map`), streets their label (``"flop"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller.cards import Card
from controller.table.events import EventData, flatten, key, secret
from controller.table.inputs import ActionKind, Purpose

Seat = int
SeatMap = Mapping[str, int]


def seat_map(values: Mapping[int, int]) -> dict[str, int]:
    """A seat → chips map as events carry it (JSON object keys are strings)."""
    return {str(seat): amount for seat, amount in sorted(values.items())}


# --------------------------------------------------------------------------- the hand


@dataclass(frozen=True, slots=True)
class HandStarted(EventData):
    """``hand.started``: who is dealt in, the blinds' seats and every stack (RR-BB-*)."""

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
class SeatHandDead(EventData):
    """``seat.hand.dead``."""

    TYPE = "seat.hand.dead"
    seat: Seat
    reason: str


# --------------------------------------------------------------------------- betting


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


# --------------------------------------------------------------------------- the deck


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


# --------------------------------------------------------------------------- the deal


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


# --------------------------------------------------------------------------- the board


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


# --------------------------------------------------------------------------- showdown and award


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


# --------------------------------------------------------------------------- irregularities


@dataclass(frozen=True, slots=True)
class RequestRecord(EventData):
    """What the journal keeps of a refused request: never the request itself."""

    size: int
    sha256: str
    head: str  # its first 200 characters


@dataclass(frozen=True, slots=True)
class IrregularityDetected(EventData):
    """``irregularity.detected``: a reason, the rule, and the evidence that applies."""

    TYPE = "irregularity.detected"
    reason: str
    rule: str | None = None
    seat: Seat | None = None
    group: int | None = None
    shuffle_id: int | None = None
    zone: str | None = None
    source: str | None = None  # where a moved card was
    card: Card | None = None  # public when the table has seen it
    put: int | None = None  # an under-call: the chips put in
    call_to: int | None = None  # … and what the call was
    cutoff_passed: bool | None = None
    actions: int | None = None
    severity: str | None = None
    hidden_card: Card | None = secret("card")


@dataclass(frozen=True, slots=True)
class EventRange(EventData):
    """Event ids ``{epoch}:{from_seq}`` to ``{epoch}:{to_seq}`` (``from_seq`` None: unknown)."""

    epoch: str
    from_seq: int | None
    to_seq: int


@dataclass(frozen=True, slots=True)
class IntegrityAlarm(EventData):
    """``integrity.alarm``: a foul deck, a broken commitment, an unapproved device, a fault,
    or a journal that is not what the table wrote (docs/operations.md, "The journal's integrity").

    A revealed deck's order against the groups dealt from it (SHF-INFO, ``deck_audit.py``) names
    the ``group``, its ``purpose`` and ``seat``, the hand it was dealt in (``dealt_in``) and,
    secret, the ``cards`` read for it (or reported) and the cards the order dealt (``expected``).
    """

    TYPE = "integrity.alarm"
    reason: str
    rule: str | None = None
    zone: str | None = None
    action_stands: bool | None = None
    device: str | None = None
    shuffle_id: int | None = None
    command: str | None = None  # an internal error: the request being handled
    error: str | None = None
    request: RequestRecord | None = None
    journal: str | None = None  # what the journal check found: chain, replay or rollback
    problems: tuple[str, ...] | None = None  # the chain's breaks (the first few)
    inputs: tuple[int, ...] | None = None  # inputs whose replay differs (the first few)
    lost: EventRange | None = None  # events the broker holds that this journal does not
    group: int | None = None  # the deck audit: the group whose cards the order contradicts
    purpose: Purpose | None = None
    seat: Seat | None = None
    dealt_in: str | None = None  # the hand the group was dispensed in
    uid: str | None = secret()
    card: Card | None = secret()
    cards: tuple[Card, ...] | None = secret()  # the cards read for the group (or reported)
    expected: tuple[Card, ...] | None = secret()  # the cards the revealed order dealt it


@dataclass(frozen=True, slots=True)
class DeviceStatus(EventData):
    """``device.status``: health, a fault, a clear or a reboot of one device."""

    TYPE = "device.status"
    device: str
    health: str | None = None
    kind: str | None = None
    approved: bool | None = None
    detail: str | None = None
    fault: str | None = None
    fault_id: int | None = None
    cleared: str | None = None
    rebooted: bool | None = None
    boot_id: int | None = None


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class CommandRejected(EventData):
    """``command.rejected``: nothing changed.

    A request the gate refused (docs/security.md) adds a bounded ``request`` record and, when it
    proved who sent it, the signing ``key``.
    """

    TYPE = "command.rejected"
    command: str
    reason: str
    request: RequestRecord | None = None
    key: str | None = None


@dataclass(frozen=True, slots=True)
class RequestsShed(EventData):
    """``requests.shed``: requests answered at once and not run (a flood, a full queue)."""

    TYPE = "requests.shed"
    counts: Mapping[str, int]  # how many, by reason
    seconds: float  # over how long


# --------------------------------------------------------------------------- the journal


@dataclass(frozen=True, slots=True)
class JournalAccepted(EventData):
    """``journal.accepted``: maintenance accepted the journal as it is after an integrity alarm;
    the next events are a new epoch."""

    TYPE = "journal.accepted"
    alarm: str  # the alarm's reason
    reason: str  # maintenance's own words
    through: int  # breaks of the chain up to this position are accepted
    input_through: int  # replay differences at inputs up to this one are accepted
    epoch: str  # the epoch that starts


@dataclass(frozen=True, slots=True)
class JournalEpochStarted(EventData):
    """``journal.epoch.started``: event ids go on under a new epoch, from seq 1."""

    TYPE = "journal.epoch.started"
    epoch: str
    previous: str
    reason: str  # "rollback" or "accepted"
    moved: EventRange | None = None  # journaled before it began and still unpublished


@dataclass(frozen=True, slots=True)
class JournalDisk(EventData):
    """``journal.disk``: the journal's disk ran low, has room again, or was full until now; or
    retention cannot keep the journal's budget (``waiting_bytes`` wait for the pit/archive).

    ``recovered`` is journaled by the first write after a full disk: the table took no input
    from ``full_since`` for ``seconds``, and answered ``refused`` requests with the reason.
    """

    TYPE = "journal.disk"
    condition: str  # "low", "ok", "recovered", or "retention" (over budget, nothing prunable)
    free_bytes: int
    low_disk_bytes: int  # the watermark
    journal_bytes: int
    full_since: str | None = None
    seconds: float | None = None
    refused: int | None = None
    waiting_bytes: int | None = None  # retention: segments waiting for the pit or the archive


#: Every event type's data class, by type.
EVENT_TYPES: dict[str, type[EventData]] = {
    cls.TYPE: cls
    for cls in (
        HandStarted,
        HandCompleted,
        HouseTimeCollected,
        SeatBlindsMissed,
        SeatPosting,
        HandMisdeal,
        HandVoid,
        HandHold,
        HandResume,
        FloorOverride,
        SeatHandDead,
        BettingAction,
        BettingActionCorrected,
        BettingRoundClosed,
        DeckVerified,
        DeckRejected,
        DeckRevealed,
        StubReshuffleRequired,
        DealGroupDispensed,
        DealGroupDelivered,
        DealComplete,
        CardExposed,
        CardDead,
        CardReplacementRequested,
        CardBurnAssigned,
        BoardDealt,
        BoardPremature,
        BoardCardSetAside,
        BoardRedealRequired,
        ShowdownOrder,
        ShowdownHandTabled,
        ShowdownHandMucked,
        ShowdownHandShown,
        ShowdownPlaysBoard,
        PotAwardProposed,
        PotAwarded,
        PotRakeTaken,
        HandRunoutsAgreed,
        BoardRunoutStarted,
        IrregularityDetected,
        IntegrityAlarm,
        JournalAccepted,
        JournalEpochStarted,
        DeviceStatus,
        CommandRejected,
        RequestsShed,
        JournalDisk,
    )
}
