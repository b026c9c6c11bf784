"""Device events: the shuffler's deck and groups, and the readers' tag movements.

Hole groups go out in order starting left of the button with the button last (DE-1544a-GRP);
a group is delivered when its cards are read at the seat it was dispensed for; the deal is complete
when every dealt-in seat holds its two cards (DEAL-DONE). Board cards are dealt when they are read
in the board zone, burns when read in the burn zone (BURN-ASSIGN).
"""

from __future__ import annotations

from controller.cards import Card
from controller.rules.ids import Rule
from controller.table import hand as hand_flow
from controller.table.betting import Street
from controller.table.context import Context
from controller.table.events import Severity
from controller.table.hand import BOARD_SIZE
from controller.table.inputs import (
    DeckChecked,
    DeckFault,
    DeckRevealed,
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceRebooted,
    GroupDispensed,
    Purpose,
    ShuffleCompleted,
    TagArrived,
    TagDeparted,
    Zone,
    ZoneKind,
)
from controller.table.state import DeckStatus, HandState, PendingGroup, Phase

DECK_SIZE = 52
_COUNT_FAULTS = frozenset({DeckFault.SHORT, DeckFault.EXTRA})


# --------------------------------------------------------------------------- the deck


def deck_checked(ctx: Context, ev: DeckChecked) -> None:
    """The shuffler's count and recognition of the deck (SHF-COUNT, SHF-RECOG)."""
    rules: list[Rule] = []
    if ev.faults & _COUNT_FAULTS or ev.counted != DECK_SIZE:
        rules.append(Rule.SHF_COUNT)
    if ev.faults - _COUNT_FAULTS or ev.missing or ev.duplicates:
        rules.append(Rule.SHF_RECOG)
    if rules:
        ctx.table.deck = DeckStatus(ev.shuffle_id)
        ctx.emit(
            "deck.rejected",
            {
                "shuffle_id": ev.shuffle_id,
                "counted": ev.counted,
                "faults": sorted(f.value for f in ev.faults),
                "missing": list(ev.missing),
                "duplicates": list(ev.duplicates),
            },
            tuple(rules),
            severity=Severity.HOLD,
        )
        return
    ctx.table.deck = DeckStatus(ev.shuffle_id, checked=True)


def shuffle_completed(ctx: Context, ev: ShuffleCompleted) -> None:
    """A shuffle finished: the deck is ready if its check passed."""
    deck = ctx.table.deck
    if deck.shuffle_id != ev.shuffle_id or not deck.checked:
        if deck.shuffle_id == ev.shuffle_id:
            return  # already rejected by its deck check
        ctx.table.deck = DeckStatus(ev.shuffle_id)
        ctx.emit(
            "deck.rejected",
            {"shuffle_id": ev.shuffle_id, "reason": "no deck check for this shuffle"},
            (Rule.SHF_COUNT,),
            severity=Severity.HOLD,
        )
        return
    if not ev.ok or ev.card_count != DECK_SIZE:
        ctx.table.deck = DeckStatus(ev.shuffle_id)
        ctx.emit(
            "deck.rejected",
            {"shuffle_id": ev.shuffle_id, "counted": ev.card_count, "reason": "shuffle failed"},
            (Rule.SHF_COUNT,),
            severity=Severity.HOLD,
        )
        return
    ctx.table.deck = DeckStatus(ev.shuffle_id, checked=True, ready=True)
    ctx.emit(
        "deck.verified",
        {"shuffle_id": ev.shuffle_id, "counted": ev.card_count, "commitment": ev.commitment},
        (Rule.SHF_COUNT, Rule.SHF_RECOG),
    )


def deck_revealed(ctx: Context, ev: DeckRevealed) -> None:
    """A retired deck's order is revealed; a broken commitment is an integrity alarm."""
    if not ev.verified:
        ctx.emit(
            "integrity.alarm",
            {"shuffle_id": ev.shuffle_id, "reason": "deck order does not match its commitment"},
            (Rule.SHF_INFO,),
            severity=Severity.CRITICAL,
        )
        return
    ctx.emit(
        "deck.revealed",
        {"shuffle_id": ev.shuffle_id, "cards": len(ev.order)},
        secret={"order": list(ev.order)},
    )


# --------------------------------------------------------------------------- groups


def group_dispensed(ctx: Context, ev: GroupDispensed) -> None:
    """The shuffler put a group in its tray: track it until its cards are read."""
    hand = ctx.table.hand
    if hand is None:
        _irregular(ctx, "group dispensed with no hand in progress", group=ev.group)
        return
    deck = ctx.table.deck
    if hand.shuffle_id is None:
        if not deck.ready or deck.shuffle_id != ev.shuffle_id or deck.used_by is not None:
            _irregular(
                ctx, "group dispensed from a deck that is not verified", shuffle_id=ev.shuffle_id
            )
            return
        hand.shuffle_id = ev.shuffle_id
        ctx.table.deck = DeckStatus(deck.shuffle_id, deck.checked, deck.ready, hand.hand_id)
    elif ev.shuffle_id != hand.shuffle_id:
        _irregular(ctx, "group dispensed from another deck", shuffle_id=ev.shuffle_id)
        return
    count = len(ev.cards)
    seat = ev.seat
    if ev.purpose is Purpose.HOLE:
        expected = hand.deal_order[hand.hole_groups] if hand.hole_groups < len(hand.order) else None
        if seat is None:
            seat = expected
        if seat != expected or count != 2 or hand.phase is not Phase.DEALING:
            _irregular(ctx, "hole group out of order or of the wrong size", seat=seat, count=count)
            return
        hand.hole_groups += 1
    hand.pending = (*hand.pending, PendingGroup(ev.group, ev.purpose, seat, count, ev.cards))
    hand.tray += count
    hand.stub = ev.remaining
    known = [c for c in ev.cards if c is not None]
    ctx.emit(
        "deal.group.dispensed",
        {"group": ev.group, "purpose": ev.purpose, "seat": seat, "count": count},
        (Rule.DE_1544A_GRP,),
        secret={"cards": known} if known else None,
    )


# --------------------------------------------------------------------------- tag movements


def tag_arrived(ctx: Context, ev: TagArrived) -> None:
    """A tag appeared in a zone."""
    card = ctx.table.manifest.card(ev.uid)
    if card is None:
        ctx.emit(
            "integrity.alarm",
            {"zone": str(ev.zone), "reason": "tag not in the deck in play"},
            (Rule.FOUL_FOREIGN,),
            severity=Severity.CRITICAL,
            secret={"uid": ev.uid},
        )
        return
    hand = ctx.table.hand
    if hand is None or ev.zone.kind in (ZoneKind.ENROLL, ZoneKind.SHUFFLER_IN):
        return
    where = _location(hand, card)
    if where == ev.zone:
        return  # the reader saw it again where it already is
    if where is not None:
        _moved(ctx, hand, card, where, ev)
        return
    kind = ev.zone.kind
    if kind is ZoneKind.SEAT:
        _hole_card(ctx, hand, card, ev)
    elif kind is ZoneKind.BOARD:
        _board_card(ctx, hand, card)
    elif kind is ZoneKind.BURN:
        _burn_card(ctx, hand, card)
    else:
        _irregular(ctx, "a card never dealt reached the muck", zone=str(ev.zone), card=card)


def tag_departed(ctx: Context, ev: TagDeparted) -> None:
    """A tag left a zone: lifting a card does that too, so nothing moves until it arrives."""


_MUCK = Zone(ZoneKind.MUCK)
_BOARD = Zone(ZoneKind.BOARD)
_BURN = Zone(ZoneKind.BURN)


def _location(hand: HandState, card: Card) -> Zone | None:
    """Where the core last placed ``card`` in this hand, if anywhere."""
    if card in hand.muck:
        return _MUCK
    if card in hand.board:
        return _BOARD
    if card in hand.burns:
        return _BURN
    for seat, cards in hand.holes.items():
        if card in cards:
            return Zone(ZoneKind.SEAT, seat)
    return None


def _take_from_tray(
    hand: HandState, card: Card, purposes: tuple[Purpose, ...]
) -> PendingGroup | None:
    for i, group in enumerate(hand.pending):
        if group.purpose in purposes and len(group.read) < group.size:
            updated = _with_read(group, card)
            hand.pending = (*hand.pending[:i], updated, *hand.pending[i + 1 :])
            hand.tray -= 1
            return updated
    return None


def _with_read(group: PendingGroup, card: Card) -> PendingGroup:
    return PendingGroup(
        group.group, group.purpose, group.seat, group.size, group.cards, (*group.read, card)
    )


def _hole_card(ctx: Context, hand: HandState, card: Card, ev: TagArrived) -> None:
    seat = ev.zone.seat
    group = _read_into(hand, seat, card) if hand.phase is Phase.DEALING else None
    if group is None:
        _irregular(ctx, "a card arrived at a seat with no group dealt to it", seat=seat, card=card)
        return
    assert seat is not None
    hand.holes = {**hand.holes, seat: (*hand.holes.get(seat, ()), card)}
    if len(group.read) < group.size:
        return
    hand.pending = tuple(g for g in hand.pending if g.group != group.group)
    hand.dealt = {**hand.dealt, seat: group.read}
    hand.delivered = hand.delivered | {seat}
    ctx.emit(
        "deal.group.delivered",
        {"seat": seat, "group": group.group, "count": group.size},
        (Rule.DE_1544A_GRP,),
        secret={"cards": list(group.read)},
    )
    if len(hand.delivered) == len(hand.order) and hand.hole_groups == len(hand.order):
        ctx.emit("deal.complete", {"seats": list(hand.order)}, (Rule.DEAL_DONE,))
        hand.phase = Phase.BETTING
        if hand.round is None or hand.round.to_act is None:
            hand_flow.close_round(ctx, hand)


def _read_into(hand: HandState, seat: int | None, card: Card) -> PendingGroup | None:
    """Count ``card`` as read for the hole group pending at ``seat`` (None if there is none)."""
    for i, group in enumerate(hand.pending):
        if group.seat == seat and group.purpose is Purpose.HOLE:
            updated = _with_read(group, card)
            hand.pending = (*hand.pending[:i], updated, *hand.pending[i + 1 :])
            hand.tray -= 1
            return updated
    return None


def _board_card(ctx: Context, hand: HandState, card: Card) -> None:
    if hand.phase is not Phase.BOARD:
        _irregular(ctx, "a board card arrived while no street is being dealt", card=card)
        return
    street = hand.street + 1
    _take_from_tray(hand, card, (Purpose.FLOP, Purpose.TURN, Purpose.RIVER, Purpose.BOARD_OTHER))
    hand.board = (*hand.board, card)
    target = BOARD_SIZE[Street(street)]
    if len(hand.board) < target:
        return
    dealt = hand.board[target - (3 if street == 1 else 1) :]
    hand.pending = tuple(g for g in hand.pending if len(g.read) < g.size)
    ctx.emit(
        "board.dealt",
        {"street": Street(street).label, "cards": list(dealt), "board": list(hand.board)},
    )
    hand_flow.open_street(ctx, hand)


def _burn_card(ctx: Context, hand: HandState, card: Card) -> None:
    if hand.phase is not Phase.BOARD:
        _irregular(ctx, "a burn card arrived while no street is being dealt", card=card)
        return
    _take_from_tray(hand, card, (Purpose.BURN,))
    hand.burns = (*hand.burns, card)
    hand.pending = tuple(g for g in hand.pending if len(g.read) < g.size)
    ctx.emit(
        "card.burn.assigned",
        {"street": Street(hand.street + 1).label},
        (Rule.BURN_ASSIGN,),
        secret={"card": card},
    )


def _moved(ctx: Context, hand: HandState, card: Card, where: Zone, ev: TagArrived) -> None:
    """A card already placed was read somewhere else."""
    if ev.zone.kind is ZoneKind.MUCK and where.kind is ZoneKind.SEAT:
        seat = where.seat
        assert seat is not None
        if seat in hand.folded or seat in hand.mucked or hand.phase is Phase.AWARD:
            hand.holes = {**hand.holes, seat: tuple(c for c in hand.holes[seat] if c != card)}
            hand.muck = (*hand.muck, card)
            return
    _irregular(
        ctx, "a card moved where it should not", card=card, source=str(where), zone=str(ev.zone)
    )


# --------------------------------------------------------------------------- device health


def device_fault(ctx: Context, ev: DeviceFault) -> None:
    """A device raised a fault."""
    ctx.emit(
        "device.status",
        {"device": ev.device, "fault": ev.code, "fault_id": ev.fault_id, "detail": ev.detail},
        severity=Severity.WARN,
    )


def device_fault_cleared(ctx: Context, ev: DeviceFaultCleared) -> None:
    """A device cleared a fault."""
    ctx.emit("device.status", {"device": ev.device, "cleared": ev.code, "fault_id": ev.fault_id})


def device_health(ctx: Context, ev: DeviceHealthChanged) -> None:
    """A supervisor's verdict on its device changed."""
    data: dict[str, object] = {"device": ev.device, "health": ev.health.value}
    if ev.approved is not None:
        data["approved"] = ev.approved
    if ev.detail:
        data["detail"] = ev.detail
    ctx.emit("device.status", data)


def device_rebooted(ctx: Context, ev: DeviceRebooted) -> None:
    """A device came back with a new boot id."""
    ctx.emit("device.status", {"device": ev.device, "rebooted": True, "boot_id": ev.boot_id})


def _irregular(ctx: Context, reason: str, **evidence: object) -> None:
    ctx.emit(
        "irregularity.detected",
        {"reason": reason, **{k: v for k, v in evidence.items() if k != "card"}},
        severity=Severity.WARN,
        secret={"card": evidence["card"]} if "card" in evidence else None,
    )
