"""The hole deal under § 1544: every group intact, to the right seat, in order.

DE-1544a-GRP: each hole delivery is one whole group from one dispense. GRP-SIZE: a hole group of
the wrong size is caught before delivery. SEAT-WRONG-FIRST, SEAT-SEQ, SEAT-EMPTY: the first group
at the wrong seat, groups out of sequence or split, cards at a seat not dealt in. SEAT-COUNT and
SEAT-DEALT-OUT: once the readers have had time to settle, a seat holding other than two cards, or
none. EXTRA-1 / EXTRA-2+: one extra card to the first player becomes the burn (or a misdeal, by
profile); two or more extra cards are a misdeal. DEAL-DONE: every seat holds its two cards.
Before the misdeal cutoff these are misdeals; after it, see each rule.
"""

from __future__ import annotations

from datetime import timedelta

from controller.cards import Card
from controller.profiles import ExtraSingle, GroupSizeError
from controller.rules import burns, exposure
from controller.rules.holds import raise_hold, resolve
from controller.rules.ids import Rule
from controller.rules.misdeal import (
    cutoff_note,
    cutoff_passed,
    misdeal_unless_cutoff,
)
from controller.table import flow
from controller.table.context import Context
from controller.table.event_types import (
    DealComplete,
    DealGroupDelivered,
    HoldEvidence,
    IrregularityDetected,
)
from controller.table.events import Severity
from controller.table.inputs import GroupDispensed, Purpose
from controller.table.state import HandState, PendingGroup, Phase, Ruling
from controller.table.tray import draw, drop_finished, live_cards, place, seat_place

_HOLE = (Purpose.HOLE,)


def hole_group_dispensed(ctx: Context, hand: HandState, ev: GroupDispensed) -> bool:
    """Check a dispensed hole group; False when it must not be dealt (misdealt or held)."""
    size = len(ev.cards)
    expected = (
        hand.deal_order[hand.deal.hole_groups] if hand.deal.hole_groups < len(hand.order) else None
    )
    if expected is None:
        misdeal_unless_cutoff(ctx, hand, Rule.EXTRA_2, "a hole group after every seat had one")
        return False
    if size != 2:
        # GRP-SIZE: the group is caught before delivery, so no card has been seen; the house
        # rule says whether the dealer confirms the misdeal or the hold is decided at once
        at_once = ctx.table.profile.grp_size_error is not GroupSizeError.HOLD
        hold = raise_hold(
            ctx,
            hand,
            Rule.GRP_SIZE,
            Ruling.MISDEAL,
            f"hole group of {size} cards",
            seat=ev.seat,
            evidence=HoldEvidence(group=ev.group, count=size),
            needs_confirm=not at_once,
        )
        if at_once:
            resolve(ctx, hand, hold, Ruling.MISDEAL, "rule")
        return False
    if ev.seat is not None and ev.seat != expected:
        rule = Rule.SEAT_EMPTY if ev.seat not in hand.order else Rule.SEAT_SEQ
        misdeal_unless_cutoff(
            ctx, hand, rule, f"group for seat {ev.seat} when seat {expected} was next", seat=ev.seat
        )
        return False
    hand.edit_deal().hole_groups += 1
    if hand.deal.hole_groups == len(hand.order):
        flow.move(hand, flow.Move.HOLE_GROUPS_OUT)
        hand.edit_deal().deadline = ev.ts + timedelta(seconds=ctx.table.settle)
        if hand.chips.round is None or hand.chips.round.to_act is None:
            flow.close_round(ctx, hand)  # nobody can bet: the blinds left no decision
    return True


def hole_card_arrived(ctx: Context, hand: HandState, card: Card, seat: int) -> None:
    """A card never placed before was read at a seat."""
    if seat not in hand.order:
        draw(hand, card)
        place(hand, card, seat_place(seat))
        misdeal_unless_cutoff(
            ctx, hand, Rule.SEAT_EMPTY, f"a card at seat {seat}, not dealt in", seat=seat
        )
        return
    for group in hand.deal.pending:  # a loop, not next(generator): this runs for every hole card
        if group.purpose is Purpose.HOLE and group.seat == seat:
            _into_group(ctx, hand, card, seat, group)
            return
    other = next(
        (g for g in hand.deal.pending if g.purpose is Purpose.HOLE and len(g.read) < g.size), None
    )
    if other is not None:
        draw(hand, card, (Purpose.HOLE,), other.seat)
        place(hand, card, seat_place(seat))
        first = other.seat == hand.deal_order[0] and not hand.deal.delivered
        rule = Rule.SEAT_WRONG_FIRST if first else Rule.SEAT_SEQ
        if first:
            what = "the first group"
        elif other.seat is None:  # held or refused when it was dispensed: dealt to no seat
            what = "a group stopped at the shuffler"
        else:
            what = f"seat {other.seat}'s group"
        misdeal_unless_cutoff(ctx, hand, rule, f"a card of {what} reached seat {seat}", seat=seat)
        return
    if hand.deal.owed.get(seat):
        _replacement(ctx, hand, card, seat)
        return
    if hand.deal.hole_groups < len(hand.order):
        draw(hand, card)
        place(hand, card, seat_place(seat))
        raise_hold(
            ctx,
            hand,
            Rule.SEAT_SEQ,
            Ruling.MISDEAL,
            f"a card at seat {seat} before its group was dispensed",
            seat=seat,
        )
        return
    _extra_card(ctx, hand, card, seat)


def _into_group(ctx: Context, hand: HandState, card: Card, seat: int, group: PendingGroup) -> None:
    draw(hand, card, _HOLE, seat)
    place(hand, card, seat_place(seat))
    # the group's known cards (None where withheld) must include this one
    if card not in group.cards and any(group.cards):
        misdeal_unless_cutoff(
            ctx, hand, Rule.SEAT_SEQ, f"seat {seat} got a card of another group", seat=seat
        )
        return
    for updated in hand.deal.pending:
        if updated.group == group.group:
            break
    else:
        raise AssertionError(f"group {group.group} left the tray while its card was read")
    if len(updated.read) < updated.size:
        return
    drop_finished(hand)
    hand.edit_deal().dealt = {**hand.deal.dealt, seat: updated.read}
    hand.edit_deal().delivered = hand.deal.delivered | {seat}
    delivered = DealGroupDelivered(seat, updated.group, updated.size, cards=updated.read)
    ctx.emit(delivered, (Rule.DE_1544A_GRP,))
    if len(hand.deal.delivered) == len(hand.order):
        exposure.after_groups_delivered(ctx, hand)
    maybe_deal_done(ctx, hand)


def _replacement(ctx: Context, hand: HandState, card: Card, seat: int) -> None:
    """A replacement for an exposed or boxed card reached its seat (EXP-REPL-CHECK)."""
    group = draw(hand, card, (Purpose.EXTRA, Purpose.HOLE), seat)
    drop_finished(hand)
    place(hand, card, seat_place(seat))
    hand.edit_deal().owed = {**hand.deal.owed, seat: hand.deal.owed[seat] - 1}
    hand.edit_deal().replaced = hand.deal.replaced | {card}
    hand.edit_deal().dealt = {**hand.deal.dealt, seat: live_cards(hand, seat)}
    expected = [c for c in group.cards if c is not None] if group else []
    if expected and card not in expected:
        raise_hold(
            ctx,
            hand,
            Rule.EXP_REPL_CHECK,
            Ruling.CONTINUE,
            "the replacement was not the next card",
            seat=seat,
            evidence=HoldEvidence(hidden_card=card, expected_cards=tuple(expected)),
        )
    replacement = DealGroupDelivered(
        seat, group.group if group else None, 1, replacement=True, cards=(card,)
    )
    ctx.emit(replacement, (Rule.EXP_REPL_CHECK,))
    maybe_deal_done(ctx, hand)


def _extra_card(ctx: Context, hand: HandState, card: Card, seat: int) -> None:
    """A card after every seat had its starting hand (EXTRA-1, EXTRA-2+)."""
    draw(hand, card, (Purpose.EXTRA,), seat)
    drop_finished(hand)
    place(hand, card, seat_place(seat))
    hand.edit_deal().extras += 1
    if hand.deal.extras >= 2:
        misdeal_unless_cutoff(
            ctx, hand, Rule.EXTRA_2, f"{hand.deal.extras} extra cards dealt", seat=seat
        )
        return
    first = hand.deal_order[0]
    if seat != first:
        hold_rule = Rule.SEAT_COUNT
        decides = Ruling.DEAD_HAND if cutoff_passed(hand, ctx.table.profile) else Ruling.MISDEAL
        raise_hold(
            ctx,
            hand,
            hold_rule,
            decides,
            f"seat {seat} holds an extra card",
            seat=seat,
            evidence=HoldEvidence(count=len(hand.cards.seat(seat))),
        )
        return
    if ctx.table.profile.extra_single is ExtraSingle.MISDEAL:
        misdeal_unless_cutoff(
            ctx, hand, Rule.EXTRA_1, "an extra card to the first player", seat=seat
        )
        return
    # RR Hold'em 5: the card goes back to the deck and is used as the burn card
    ctx.emit(
        IrregularityDetected(
            "an extra card to the first player", rule=Rule.EXTRA_1.value, seat=seat
        ),
        (Rule.EXTRA_1,),
        severity=Severity.WARN,
    )
    burns.assign_next_burn(ctx, hand, card, Rule.EXTRA_1)


def maybe_deal_done(ctx: Context, hand: HandState) -> None:
    """DEAL-DONE: every seat holds exactly its two cards and nothing is owed."""
    if (
        hand.deal.deal_done
        or hand.deal.hole_groups < len(hand.order)
        or any(hand.deal.owed.values())
    ):
        return
    live = [s for s in hand.order if s not in hand.irregular.dead]
    if len(hand.deal.delivered) < len(hand.order):
        return
    if all(len(live_cards(hand, s)) == 2 for s in live):
        hand.edit_deal().deal_done = True
        ctx.emit(DealComplete(hand.order), (Rule.DEAL_DONE,))
        if hand.phase is Phase.DEALING:
            flow.move(hand, flow.Move.HOLE_GROUPS_OUT)


def check_seat_counts(ctx: Context, hand: HandState) -> None:
    """The readers have settled: every seat must hold two cards (SEAT-COUNT, SEAT-DEALT-OUT).

    Not counted: a seat out of the hand (dead, folded), one still owed a replacement, and one
    whose cards the showdown already took: tabled or shown (two cards, or § 1550(b)(1) ruled on
    it then) or mucked. A hand all in before the flop reaches the showdown within seconds, and
    the dealer may push a killed hand to the muck before the settle time is up; counting that
    seat again would hold a hand for cards that are exactly where the rules sent them. Nor a seat
    a SEAT-COUNT hold already waits on (an extra card is held when it is read): one wrong count
    is one ruling, not two.
    """
    hand.edit_deal().deadline = None
    after = cutoff_passed(hand, ctx.table.profile)
    showdown = hand.showdown
    held = {h.seat for h in hand.irregular.holds if h.rule is Rule.SEAT_COUNT}
    for seat in hand.order:
        if seat in hand.irregular.dead or seat in hand.chips.folded or hand.deal.owed.get(seat):
            continue
        if seat in showdown.tabled or seat in showdown.shown or seat in showdown.mucked:
            continue
        if seat in held:
            continue
        count = len(live_cards(hand, seat))
        if count == 2:
            continue
        rule = Rule.SEAT_DEALT_OUT if count == 0 else Rule.SEAT_COUNT
        if after:
            cutoff_note(
                ctx, hand, rule, f"seat {seat} holds {count} card{'' if count == 1 else 's'}"
            )
        raise_hold(
            ctx,
            hand,
            rule,
            Ruling.DEAD_HAND if after else Ruling.MISDEAL,
            f"seat {seat} holds {count} card{'' if count == 1 else 's'}",
            seat=seat,
            evidence=HoldEvidence(count=count),
        )
