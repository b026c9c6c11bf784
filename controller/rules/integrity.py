"""A fouled deck, foreign cards, cards back from the muck, jokers.

FOUL-DUP (RRoP Irregularities 4, TDA 35E): two cards of the same rank and suit in play; FOUL-FOREIGN
(RRoP Irregularities 3, Del. § 1559): a card not from the deck in play. Either holds play at once
with an integrity alarm and voids the hand when the floor confirms, at any time before the award,
every chip going back. Found only in the stub or the shuffler, the action stands.
CARD-FROM-MUCK (Del. § 1550(b)(3),(6); RRoP Dead Hands): a card from the muck read at a seat or on
the board is held for the floor. JOKER (RRoP Irregularities 8): a joker is a scrap of paper.
"""

from __future__ import annotations

from controller.cards import Card
from controller.rules.holds import raise_hold
from controller.rules.ids import Rule
from controller.rules.misdeal import kill_hand
from controller.table.context import Context
from controller.table.event_types import (
    CardDead,
    CardReplacementRequested,
    HoldEvidence,
    IntegrityAlarm,
    IrregularityDetected,
)
from controller.table.events import Severity
from controller.table.inputs import TagArrived, Zone, ZoneKind
from controller.table.state import HandState, Hold, Ruling
from controller.table.tray import location, place, seat_place, set_aside


def unknown_tag(ctx: Context, ev: TagArrived) -> None:
    """A tag that is not a card of the deck in play."""
    hand = ctx.table.hand
    if ev.uid in ctx.table.manifest.jokers:
        _joker(ctx, hand, ev)
        return
    known = ctx.table.other_decks.get(ev.uid)
    card = known[1] if known else None
    dup = hand is not None and card is not None and location(hand, card) is not None
    rule = Rule.FOUL_DUP if dup else Rule.FOUL_FOREIGN
    reason = (
        f"a second {card} (deck {known[0]}) in play"
        if dup and known
        else f"a card of deck {known[0]}, not the deck in play"
        if known
        else "a tag that is not in the deck in play"
    )
    in_play = hand is not None and ev.zone.kind not in (ZoneKind.SHUFFLER_IN, ZoneKind.ENROLL)
    alarm = IntegrityAlarm(
        reason,
        rule=rule.value,
        zone=str(ev.zone),
        action_stands=not in_play,
        uid=ev.uid,
        card=card or None,
    )
    ctx.emit(alarm, (rule,), severity=Severity.CRITICAL)
    if in_play:
        assert hand is not None
        evidence = HoldEvidence(zone=str(ev.zone), uid=ev.uid)
        raise_hold(ctx, hand, rule, Ruling.VOID, reason, evidence=evidence)


def _joker(ctx: Context, hand: HandState | None, ev: TagArrived) -> None:
    seat = ev.zone.seat
    joker = IrregularityDetected(
        "a joker: a scrap of paper, replaced", rule=Rule.JOKER.value, zone=str(ev.zone)
    )
    ctx.emit(
        joker,
        (Rule.JOKER,),
        severity=Severity.WARN,
    )
    if hand is not None and seat is not None and seat in hand.order:
        hand.edit_deal().owed = {**hand.deal.owed, seat: hand.deal.owed.get(seat, 0) + 1}
        ctx.emit(CardReplacementRequested(seat, None), (Rule.JOKER,))


def from_muck(ctx: Context, hand: HandState, card: Card, zone: Zone) -> None:
    """CARD-FROM-MUCK: a mucked card came back into play: held for the floor."""
    if zone.kind is ZoneKind.SEAT and zone.seat is not None:
        place(hand, card, seat_place(zone.seat))
    else:
        set_aside(hand, card)
    alarm = IntegrityAlarm(
        "a card came back from the muck",
        rule=Rule.CARD_FROM_MUCK.value,
        zone=str(zone),
        card=card,
    )
    ctx.emit(alarm, (Rule.CARD_FROM_MUCK,), severity=Severity.CRITICAL)
    raise_hold(
        ctx,
        hand,
        Rule.CARD_FROM_MUCK,
        Ruling.CARD_DEAD,
        f"a mucked card read at {zone}",
        seat=zone.seat,
        card=card,
        evidence=HoldEvidence(hidden_card=card),
    )


def card_dead_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    """The card is dead; a hand that holds it is dead (retrieval is the floor's to allow)."""
    if hold.card is not None:
        hand.edit_irregular().dead_cards = hand.irregular.dead_cards | {hold.card}
        ctx.emit(CardDead(hold.seat, None, hidden_card=hold.card), (hold.rule,))
    if hold.seat is not None:
        kill_hand(ctx, hand, hold.seat, hold.rule, "holds a card from the muck")
