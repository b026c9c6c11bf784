"""Device events: the shuffler's deck and groups, the readers' tag movements, and the clock.

This module routes each event to the rules that judge it (``controller/rules/``); it keeps the
deck's status and the hand's groups and card places up to date on the way.
"""

from __future__ import annotations

from controller.cards import Card
from controller.rules import (
    board,
    burns,
    dead_hands,
    deal_checks,
    deck_audit,
    devices,
    integrity,
)
from controller.rules.holds import raise_hold, resolve
from controller.rules.ids import Rule
from controller.table.context import Context
from controller.table.event_types import (
    DealGroupDispensed,
    DeckRejected,
    DeckVerified,
    HoldEvidence,
    IntegrityAlarm,
    IrregularityDetected,
)
from controller.table.event_types import DeckRevealed as DeckRevealedData
from controller.table.events import Severity
from controller.table.inputs import (
    DeckChecked,
    DeckFault,
    DeckRevealed,
    GroupDispensed,
    Purpose,
    ShuffleCompleted,
    TagArrived,
    TagDeparted,
    Tick,
    Zone,
    ZoneKind,
)
from controller.table.state import DeckStatus, HandState, PendingGroup, Phase, Ruling
from controller.table.tray import (
    draw,
    drop_finished,
    location,
    place,
    seat_place,
    set_aside,
    to_burns,
    to_muck,
)

DECK_SIZE = 52
_COUNT_FAULTS = frozenset({DeckFault.SHORT, DeckFault.EXTRA})


# --------------------------------------------------------------------------- the deck


def deck_checked(ctx: Context, ev: DeckChecked) -> None:
    """The shuffler's count and recognition of a deck (SHF-COUNT, SHF-RECOG)."""
    hand = ctx.table.hand
    if (
        hand is not None
        and hand.deal.shuffle_id is not None
        and ev.shuffle_id != hand.deal.shuffle_id
    ):
        _stub_checked(ctx, hand, ev)
        return
    rules: list[Rule] = []
    if ev.faults & _COUNT_FAULTS or ev.counted != DECK_SIZE:
        rules.append(Rule.SHF_COUNT)
    if ev.faults - _COUNT_FAULTS or ev.missing or ev.duplicates:
        rules.append(Rule.SHF_RECOG)
    if rules:
        ctx.table.deck = DeckStatus(ev.shuffle_id)
        rejected = DeckRejected(
            ev.shuffle_id,
            ev.counted,
            tuple(sorted(ev.faults)),
            tuple(ev.missing),
            tuple(ev.duplicates),
        )
        ctx.emit(
            rejected,
            tuple(rules),
            severity=Severity.HOLD,
        )
        return
    ctx.table.deck = DeckStatus(ev.shuffle_id, checked=True)


def _stub_checked(ctx: Context, hand: HandState, ev: DeckChecked) -> None:
    """A count of the stub in the middle of a hand: after a reshuffle or a recount."""
    expected = hand.deal.stub
    if ev.counted == expected and not ev.faults and not ev.duplicates:
        hand.edit_deal().shuffle_id = ev.shuffle_id
        hand.edit_deal().recheck = None
        hand.edit_deal().reshuffle_due = None
        ctx.emit(DeckVerified(ev.shuffle_id, ev.counted, stub=True), (Rule.SHF_COUNT,))
        return
    raise_hold(
        ctx,
        hand,
        Rule.SHF_COUNT,
        Ruling.CONTINUE,
        f"the stub counts {ev.counted} cards, {expected} expected",
        evidence=HoldEvidence(counted=ev.counted, expected=expected),
    )


def shuffle_completed(ctx: Context, ev: ShuffleCompleted) -> None:
    """A shuffle finished: the deck is ready if its check passed and the shuffler is approved."""
    hand = ctx.table.hand
    if hand is not None and hand.deal.shuffle_id == ev.shuffle_id:
        return  # the mid-hand stub shuffle, judged by its count
    deck = ctx.table.deck
    blocked = devices.blocked(ctx)
    if blocked:
        ctx.table.deck = DeckStatus(ev.shuffle_id)
        ctx.emit(
            DeckRejected(ev.shuffle_id, reason=blocked),
            (Rule.DE_1544A_APPR,),
            severity=Severity.CRITICAL,
        )
        return
    if deck.shuffle_id != ev.shuffle_id or not deck.checked:
        if deck.shuffle_id == ev.shuffle_id:
            return  # already rejected by its deck check
        ctx.table.deck = DeckStatus(ev.shuffle_id)
        ctx.emit(
            DeckRejected(ev.shuffle_id, reason="no deck check for this shuffle"),
            (Rule.SHF_COUNT,),
            severity=Severity.HOLD,
        )
        return
    if not ev.ok or ev.card_count != DECK_SIZE:
        ctx.table.deck = DeckStatus(ev.shuffle_id)
        ctx.emit(
            DeckRejected(ev.shuffle_id, ev.card_count, reason="shuffle failed"),
            (Rule.SHF_COUNT,),
            severity=Severity.HOLD,
        )
        return
    ctx.table.deck = DeckStatus(ev.shuffle_id, checked=True, ready=True)
    ctx.emit(
        DeckVerified(ev.shuffle_id, ev.card_count, ev.commitment), (Rule.SHF_COUNT, Rule.SHF_RECOG)
    )
    if hand is not None and hand.irregular.holds:
        for hold in hand.irregular.holds:
            if hold.rule is Rule.GLI29_ERR_JAM:
                resolve(ctx, hand, hold, Ruling.CONTINUE, "deck")
                break


def deck_revealed(ctx: Context, ev: DeckRevealed) -> None:
    """A retired deck's order is revealed; a broken commitment is an integrity alarm (SHF-INFO),
    and so is an order that disagrees with the groups the table saw dealt from it (the audit)."""
    if not ev.verified:
        deck_audit.forget(ctx, ev.shuffle_id)  # an order that is not the deck's proves nothing
        ctx.emit(
            IntegrityAlarm("deck order does not match its commitment", shuffle_id=ev.shuffle_id),
            (Rule.SHF_INFO,),
            severity=Severity.CRITICAL,
        )
        return
    ctx.emit(DeckRevealedData(ev.shuffle_id, len(ev.order), tuple(ev.order)))
    deck_audit.deck_revealed(ctx, ev)


# --------------------------------------------------------------------------- groups


def group_dispensed(ctx: Context, ev: GroupDispensed) -> None:
    """The shuffler put a group in its tray: check it and track it until its cards are read."""
    deck_audit.group_dispensed(ctx, ev)
    hand = ctx.table.hand
    if hand is None:
        _irregular(ctx, "a group dispensed with no hand in progress", group=ev.group)
        return
    blocked = devices.blocked(ctx)
    if blocked:
        _irregular(ctx, f"a group dispensed while {blocked}", rule=Rule.DE_1544A_APPR)
    deck = ctx.table.deck
    if hand.deal.shuffle_id is None:
        if not deck.ready or deck.shuffle_id != ev.shuffle_id or deck.used_by is not None:
            raise_hold(
                ctx,
                hand,
                Rule.SHF_COUNT,
                Ruling.MISDEAL,
                "a group dispensed from a deck that was not verified",
                evidence=HoldEvidence(shuffle_id=ev.shuffle_id),
            )
            _into_tray(hand, ev, None)
            return
        hand.edit_deal().shuffle_id = ev.shuffle_id
        ctx.table.deck = DeckStatus(deck.shuffle_id, deck.checked, deck.ready, hand.hand_id)
    elif ev.shuffle_id != hand.deal.shuffle_id:
        _irregular(ctx, "a group dispensed from another deck", shuffle_id=ev.shuffle_id)
    if hand.deal.recheck:
        raise_hold(
            ctx,
            hand,
            Rule.SHF_DOOR if "OPEN" in hand.deal.recheck else Rule.SHF_POWER,
            Ruling.CONTINUE,
            f"a group dispensed before the deck was counted again ({hand.deal.recheck})",
        )
    seat = ev.seat
    if ev.purpose is Purpose.HOLE:
        seat = (
            seat
            if seat is not None
            else (
                hand.deal_order[hand.deal.hole_groups]
                if hand.deal.hole_groups < len(hand.order)
                else None
            )
        )
        if not deal_checks.hole_group_dispensed(ctx, hand, ev):
            if ctx.table.hand is hand:
                _into_tray(hand, ev, None)
            return
    elif not board.board_group_dispensed(ctx, hand, ev):
        return
    _into_tray(hand, ev, seat)
    known = tuple(c for c in ev.cards if c is not None)
    dispensed = DealGroupDispensed(ev.group, ev.purpose, seat, len(ev.cards), known or None)
    ctx.emit(dispensed, (Rule.DE_1544A_GRP,))


def _into_tray(hand: HandState, ev: GroupDispensed, seat: int | None) -> None:
    group = PendingGroup(ev.group, ev.purpose, seat, len(ev.cards), ev.cards)
    deal = hand.edit_deal()
    deal.pending = (*deal.pending, group)
    deal.last_group = max(deal.last_group, ev.group)
    deal.tray += len(ev.cards)
    deal.stub = ev.remaining


# --------------------------------------------------------------------------- tag movements


def tag_arrived(ctx: Context, ev: TagArrived) -> None:
    """A tag appeared in a zone."""
    card = ctx.table.manifest.card(ev.uid)
    if card is None:
        integrity.unknown_tag(ctx, ev)
        return
    hand = ctx.table.hand
    zone = ev.zone
    if hand is None or zone.kind is ZoneKind.ENROLL:
        return
    drawn = len(hand.deal.drawn)
    _arrived(ctx, hand, card, zone)
    if len(hand.deal.drawn) > drawn:  # read for a dispensed group (whatever became of the hand)
        deck_audit.cards_read(ctx, hand, hand.deal.drawn[drawn:], zone)
        hand.edit_deal().drawn = ()  # recorded: the hand need not keep them


def _arrived(ctx: Context, hand: HandState, card: Card, zone: Zone) -> None:
    """Route a card read at ``zone`` to the rules that judge it."""
    where = location(hand, card)
    if zone.kind is ZoneKind.SHUFFLER_IN:
        if where is not None and where.kind is ZoneKind.BURN:
            burns.burn_back_on_deck(ctx, hand, card)
        return
    if where == zone:
        return  # the reader saw it again where it already is
    if where is not None:
        _moved(ctx, hand, card, where, zone)
        return
    if zone.kind is ZoneKind.SEAT:
        assert zone.seat is not None
        deal_checks.hole_card_arrived(ctx, hand, card, zone.seat)
    elif zone.kind is ZoneKind.BOARD:
        board.board_card_arrived(ctx, hand, card)
    elif zone.kind is ZoneKind.BURN:
        burns.burn_card_arrived(ctx, hand, card)
    else:
        draw(hand, card)
        drop_finished(hand)
        to_muck(hand, card)
        if card not in hand.irregular.dead_cards:
            _irregular(ctx, "a card never dealt reached the muck", hidden_card=card)


def _moved(ctx: Context, hand: HandState, card: Card, where: Zone, zone: Zone) -> None:
    """A card already placed was read somewhere else."""
    over = hand.phase is Phase.AWARD
    if where.kind is ZoneKind.MUCK and not over:
        integrity.from_muck(ctx, hand, card, zone)
        return
    if zone.kind is ZoneKind.MUCK:
        if where.kind is ZoneKind.BURN:
            burns.burn_to_muck(ctx, hand, card)
            return
        seat = where.seat
        live = (
            seat is not None
            and seat not in hand.chips.folded
            and seat not in hand.showdown.mucked
            and card not in hand.irregular.dead_cards
            and card != hand.board_rulings.next_burn
        )
        if live and not over:
            assert seat is not None
            dead_hands.live_card_mucked(ctx, hand, card, seat)
        else:
            to_muck(hand, card)
        return
    if zone.kind is ZoneKind.BURN and card == hand.board_rulings.next_burn:
        burns.designated_burn_arrived(ctx, hand, card)
        return
    # anything else: the card is where the reader says, and the move is reported
    if zone.kind is ZoneKind.SEAT and zone.seat is not None:
        place(hand, card, seat_place(zone.seat))
    elif zone.kind is ZoneKind.BURN:
        to_burns(hand, card)
    else:
        set_aside(hand, card)
    _irregular(
        ctx, "a card moved where it should not", hidden_card=card, source=str(where), zone=str(zone)
    )


def tag_departed(ctx: Context, ev: TagDeparted) -> None:
    """A tag left a zone: lifting a card does that too, so nothing moves until it arrives."""


def tick(ctx: Context, ev: Tick) -> None:
    """Time passed; the deadlines that fell due were checked before this (see engine)."""


def _irregular(
    ctx: Context,
    reason: str,
    rule: Rule | None = None,
    *,
    group: int | None = None,
    shuffle_id: int | None = None,
    source: str | None = None,
    zone: str | None = None,
    hidden_card: Card | None = None,
) -> None:
    found = IrregularityDetected(
        reason,
        rule=rule.value if rule is not None else None,
        group=group,
        shuffle_id=shuffle_id,
        source=source,
        zone=zone,
        hidden_card=hidden_card,
    )
    ctx.emit(found, (rule,) if rule else (), severity=Severity.WARN)
