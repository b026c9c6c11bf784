"""Exposed, flashed, boxed and off-table cards.

DE-1546a (Del. § 1546(a)): a card meant to be dealt face down that is dealt face up, flashed, or
dealt off the table is dead; the remedy is one of: EXP-FIRST (RR Hold'em 1, RRoP Misdeals 2(a),
TDA 35A-5): one of the first cards of the deal exposed is a misdeal (``exp.initial_scope``: the
whole first group, or only its first card); EXP-OTHER: any other single exposed card: the deal
goes on, the card is replaced after the deal and becomes the burn; EXP-MULTI: a second exposed
card in the deal is a misdeal; EXP-REPL-EXPOSED: an exposed replacement counts as the second.
BOXED (RRoP Irregularities 7, TDA 35A-1): a card face up in the deck is a scrap of paper and is
replaced; two on the initial deal are a misdeal. SHOWN-BY-PLAYER (RR Showdown 6): cards a player
showed are public; no dealer error, no remedy.
"""

from __future__ import annotations

from controller.cards import Card
from controller.profiles import InitialScope
from controller.rules import burns
from controller.rules.holds import raise_hold
from controller.rules.ids import Rule
from controller.rules.misdeal import misdeal_unless_cutoff
from controller.table.context import Context, RejectedError
from controller.table.event_types import (
    CardDead,
    CardExposed,
    CardReplacementRequested,
    IrregularityDetected,
)
from controller.table.events import Severity
from controller.table.inputs import Boxed, Exposed, OffTable
from controller.table.state import Exposure, HandState, Pile, Ruling


def _seat_of(hand: HandState, card: Card) -> int | None:
    place = hand.cards.where.get(card)
    return place.seat if place is not None and place.pile is Pile.SEAT else None


def _identify(
    hand: HandState, card: Card | None, seat: int | None
) -> tuple[Card | None, int | None]:
    if card is None and seat is None:
        raise RejectedError("name the card or the seat")
    if card is not None:
        where = _seat_of(hand, card)
        if seat is not None and where is not None and where != seat:
            raise RejectedError(f"{card} was read at seat {where}, not seat {seat}")
        seat = where if where is not None else seat
    if seat is not None and seat not in hand.order:
        raise RejectedError(f"seat {seat} is not dealt in")
    return card, seat


def _during_deal(hand: HandState) -> bool:
    """The deal lasts until the first action: replacements included."""
    return not hand.chips.actions


def exposed(ctx: Context, cmd: Exposed) -> None:
    """A card seen face up or flashed."""
    _exposure(ctx, "exposed", cmd.card, cmd.seat, by_player=cmd.by == "player")


def off_table(ctx: Context, cmd: OffTable) -> None:
    """A card dealt off the table."""
    _exposure(ctx, "off_table", cmd.card, cmd.seat, by_player=False)


def _exposure(
    ctx: Context, kind: str, card: Card | None, seat: int | None, *, by_player: bool
) -> None:
    hand = ctx.hand
    card, seat = _identify(hand, card, seat)
    if by_player:
        ctx.emit(CardExposed(seat, card, kind, by="player"), (Rule.SHOWN_BY_PLAYER,))
        return
    exposed = CardExposed(seat, card, kind)
    if not _during_deal(hand):
        ctx.emit(exposed, (Rule.DE_1546A,), severity=Severity.WARN)
        raise_hold(
            ctx,
            hand,
            Rule.DE_1546A,
            Ruling.CONTINUE,
            "a hole card exposed after the deal",
            seat=seat,
        )
        return
    prior = sum(1 for e in hand.irregular.exposures if e.kind != "boxed")
    replacement = card is not None and card in hand.deal.replaced
    first = _is_first(ctx, hand, card, seat)
    other = not replacement and prior == 0 and not first
    hand.edit_irregular().exposures = (
        *hand.irregular.exposures,
        Exposure(kind, seat, card, remedy_due=other),
    )
    if card is not None:
        hand.edit_irregular().dead_cards = hand.irregular.dead_cards | {card}
    ctx.emit(exposed, (Rule.DE_1546A,), severity=Severity.WARN)
    ctx.emit(CardDead(seat, card), (Rule.DE_1546A,))
    if replacement:
        misdeal_unless_cutoff(
            ctx, hand, Rule.EXP_REPL_EXPOSED, "the replacement card was exposed too", seat=seat
        )
    elif prior:
        misdeal_unless_cutoff(ctx, hand, Rule.EXP_MULTI, "a second hole card exposed", seat=seat)
    elif first:
        misdeal_unless_cutoff(
            ctx, hand, Rule.EXP_FIRST, "one of the first cards exposed", seat=seat
        )
    elif len(hand.deal.delivered) == len(hand.order):
        after_groups_delivered(ctx, hand)


def _is_first(ctx: Context, hand: HandState, card: Card | None, seat: int | None) -> bool:
    """EXP-FIRST, by ``exp.initial_scope``: the first group, or the first card of it."""
    if seat != hand.deal_order[0]:
        return False
    if ctx.table.profile.exp_initial_scope is InitialScope.FIRST_GROUP:
        return True
    # the first card: as the shuffler reported it, else as the readers saw it
    group = hand.deal.dealt.get(seat) or hand.cards.seat(seat)
    return card is not None and bool(group) and group[0] == card


def after_groups_delivered(ctx: Context, hand: HandState) -> None:
    """EXP-OTHER: once every group is delivered, replace the exposed card; it becomes the burn."""
    due = [e for e in hand.irregular.exposures if e.remedy_due]
    if not due:
        return
    hand.edit_irregular().exposures = tuple(
        e._replace(remedy_due=False) for e in hand.irregular.exposures
    )
    for exposure in due:
        seat = exposure.seat
        if seat is None:
            continue
        hand.edit_deal().owed = {**hand.deal.owed, seat: hand.deal.owed.get(seat, 0) + 1}
        ctx.emit(
            CardReplacementRequested(seat, exposure.card),
            (Rule.EXP_OTHER,),
            severity=Severity.WARN,
        )
        if exposure.card is not None:
            burns.assign_next_burn(ctx, hand, exposure.card, Rule.EXP_OTHER)


def boxed(ctx: Context, cmd: Boxed) -> None:
    """A card found face up in the deck: a scrap of paper, replaced; two in the deal misdeal."""
    hand = ctx.hand
    card, seat = _identify(hand, cmd.card, cmd.seat)
    during = _during_deal(hand)
    hand.edit_irregular().exposures = (*hand.irregular.exposures, Exposure("boxed", seat, card))
    if card is not None:
        hand.edit_irregular().dead_cards = hand.irregular.dead_cards | {card}
    boxed_card = IrregularityDetected(
        "a card face up in the deck", rule=Rule.BOXED.value, seat=seat, card=card
    )
    ctx.emit(
        boxed_card,
        (Rule.BOXED,),
        severity=Severity.WARN,
    )
    count = sum(1 for e in hand.irregular.exposures if e.kind == "boxed")
    if during and count >= ctx.table.profile.boxed_initial_deal_misdeal_at:
        misdeal_unless_cutoff(ctx, hand, Rule.BOXED, f"{count} boxed cards in the deal", seat=seat)
        return
    ctx.emit(CardDead(seat, card), (Rule.BOXED,))
    if seat is not None:
        hand.edit_deal().owed = {**hand.deal.owed, seat: hand.deal.owed.get(seat, 0) + 1}
        ctx.emit(CardReplacementRequested(seat, card), (Rule.BOXED,))
