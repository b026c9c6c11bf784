"""The dealer's betting entries: actions, corrections, the end of a round.

DE-1548 (Del. § 1548): the action is recorded as the dealer announces it; the player may correct
the dealer before any further action, after which it is locked. DE-1549a (§ 1549(a)): an under-call
must be completed or withdrawn (folded); nothing is recorded until it is. DE-1549b (§ 1549(b)): an
oversized chip put in without a raise declared is a call. MD-CUTOFF / TDA-SA: the action that
passes the misdeal cutoff says so.
"""

from __future__ import annotations

from controller.game import betting
from controller.game.betting import ActionRejectedError
from controller.rules.ids import Rule
from controller.rules.misdeal import cutoff_passed, cutoff_rule
from controller.table import flow
from controller.table.context import Context, RejectedError
from controller.table.event_types import (
    BettingAction,
    BettingActionCorrected,
    CorrectedAction,
    IrregularityDetected,
)
from controller.table.events import Severity
from controller.table.inputs import Action, ActionKind, Correction, RoundClosed
from controller.table.state import ActionRecord, HandState, Phase


def betting_action(ctx: Context, cmd: Action) -> None:
    """A betting action as the dealer entered it."""
    hand = ctx.hand
    seat = cmd.seat
    if seat not in hand.order:
        raise RejectedError(f"seat {seat} is not in hand {hand.hand_id}")
    if cmd.action is ActionKind.POST:
        raise RejectedError(
            "blinds, antes and straddles post when the hand starts; a seat that owes blinds "
            "posts them between hands with the post command"
        )
    if hand.phase is Phase.DEALING:
        raise RejectedError("the hole groups are not all dealt yet")
    rnd = hand.chips.round
    if hand.phase is not Phase.BETTING or rnd is None:
        raise RejectedError("no betting round is open")
    if seat in hand.chips.folded:
        raise RejectedError(f"seat {seat}'s hand is folded or dead")
    kind, amount = cmd.action, cmd.amount
    rules = [Rule.DE_1548]
    bet = rnd.bets.get(seat, 0)
    if cmd.oversized_chip:
        rules.append(Rule.DE_1549B)
        if rnd.current > bet:
            kind, amount = ActionKind.CALL, None  # § 1549(b): a call unless a raise was announced
    if kind is ActionKind.CALL and amount is not None and seat == rnd.to_act:
        call_to = min(rnd.current, bet + hand.chips.stacks[seat])
        if amount < call_to:
            under_call = IrregularityDetected(
                "under-call: complete the call or withdraw the chips and fold",
                rule=Rule.DE_1549A.value,
                seat=seat,
                put=amount,
                call_to=call_to,
            )
            ctx.emit(
                under_call,
                (Rule.DE_1549A,),
                severity=Severity.WARN,
            )
            return
    before = ctx.original  # the hand before this action, for a correction (DE-1548)
    assert before is not None
    chips = hand.edit_chips()
    try:
        outcome = betting.act(rnd, hand.order, chips.stacks, chips.folded, seat, kind, amount)
    except ActionRejectedError as exc:
        raise RejectedError(str(exc)) from None
    if outcome.put_in:
        chips.stacks = {**chips.stacks, seat: chips.stacks[seat] - outcome.put_in}
        chips.committed = {**chips.committed, seat: chips.committed[seat] + outcome.put_in}
    if outcome.kind is ActionKind.FOLD:
        chips.folded = chips.folded | {seat}
    chips.actions = (
        *chips.actions,
        ActionRecord(hand.street, seat, outcome.kind, outcome.to, outcome.put_in, outcome.all_in),
    )
    short = outcome.kind in (ActionKind.BET, ActionKind.RAISE) and not outcome.full
    profile = ctx.table.profile
    passed = not cutoff_passed(before, profile) and cutoff_passed(hand, profile)
    if passed:
        rules.append(cutoff_rule(profile))
    acted = BettingAction(
        seat,
        outcome.kind,
        chips.stacks[seat],
        outcome.all_in,
        to=outcome.to,
        put_in=outcome.put_in,
        pot=hand.total_pot,
        reopens_betting=False if short else None,
        misdeal_cutoff_passed=True if passed else None,
    )
    ctx.emit(acted, tuple(rules))
    chips.round = rnd = betting.settle_queue(outcome.round, chips.stacks, chips.folded)
    # only the last action can be corrected: keep the hand before it, not the whole chain
    previous = before.copy()
    previous.edit_chips().before_last_action = None
    chips.before_last_action = previous
    if hand.live_count == 1 or rnd.to_act is None:
        flow.close_round(ctx, hand)


def correction(ctx: Context, cmd: Correction) -> None:
    """DE-1548: the player corrects the announced action before anyone else acts."""
    hand = ctx.hand
    before = hand.chips.before_last_action
    last = hand.chips.actions[-1] if hand.chips.actions else None
    if before is None or last is None or last.seat != cmd.seat:
        raise RejectedError(
            f"only seat {last.seat if last else '-'}'s last action can still be corrected",
            (Rule.DE_1548,),
        )
    if hand.street is not last.street or hand.phase is not Phase.BETTING or _moved_on(hand, before):
        raise RejectedError("the action is locked: the hand has moved on", (Rule.DE_1548,))
    ctx.table.hand = before.copy()
    ctx.emit(BettingActionCorrected(cmd.seat, CorrectedAction(last.kind, last.to)), (Rule.DE_1548,))
    betting_action(ctx, Action(cmd.ts, cmd.seat, cmd.action, cmd.amount))


def _moved_on(hand: HandState, before: HandState) -> bool:
    """Anything but the last action itself changed the hand since (a card was dealt, say)."""
    return (
        hand.cards.board != before.cards.board
        or len(hand.chips.actions) != len(before.chips.actions) + 1
    )


def round_closed(ctx: Context, cmd: RoundClosed) -> None:
    """The dealer closes the round (tables that do not enter every action)."""
    hand = ctx.hand
    if hand.phase is not Phase.BETTING or hand.chips.round is None:
        raise RejectedError("no betting round is open")
    flow.close_round(ctx, hand, by_dealer=True)
