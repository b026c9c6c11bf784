"""The dealer's betting entries: actions, corrections, the end of a round.

DE-1548 (Del. § 1548): the action is recorded as the dealer announces it; the player may correct
the dealer before any further action, after which it is locked. DE-1549a (§ 1549(a)): an under-call
must be completed or withdrawn (folded); nothing is recorded until it is. DE-1549b (§ 1549(b)): an
oversized chip put in without a raise declared is a call. MD-CUTOFF / TDA-SA: the action that
passes the misdeal cutoff says so.

The table's betting structure (the profile's ``betting.structure``): RR-PL (RRoP, No-limit and
pot-limit: a bet or raise at most the pot after the call), RR-BR-5/6 (fixed-limit: every bet and
raise the street's one size, an all-in of half a bet or more a full one) and RR-BR-3/4 (a bet and
``betting.cap`` - 1 raises while three or more can still bet; heads-up no cap). A refusal for one
of them cites it, and so does every bet or raise it sized.
"""

from __future__ import annotations

from typing import NamedTuple

from controller.game import betting
from controller.game.betting import ActionRejectedError, Bound
from controller.profiles import FIXED_LIMIT_CAP
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
from controller.table.state import ActionRecord, HandState, Phase, TableState
from controller.table.streets import Street


class Judged(NamedTuple):
    """A betting entry judged against the hand, nothing changed yet: what it does, or the
    under-call it is (DE-1549a: nothing recorded until the call is completed or withdrawn)."""

    rules: tuple[Rule, ...]
    outcome: betting.Outcome | None
    under_call: IrregularityDetected | None = None


def judge(table: TableState, cmd: Action, limits: betting.Limits | None = None) -> Judged:
    """Whether the dealer's entry is legal now, or RejectedError with the reason.

    The daemon's action handler (:func:`betting_action`) and the dealer's menu
    (``controller/rules/menu.py``) both ask this, so they give the same answer; ``limits``:
    another betting structure's (default: the table's).
    """
    hand = table.hand
    if hand is None:
        raise RejectedError("no hand is in progress")
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
            return Judged((Rule.DE_1549A,), None, under_call)
    chips = hand.chips
    if limits is None:
        limits = table_limits(table, hand)
    try:
        outcome = betting.act(
            rnd, hand.order, chips.stacks, chips.folded, seat, kind, amount, limits
        )
    except ActionRejectedError as exc:
        cited = (BOUND_RULES[exc.bound],) if exc.bound is not None else ()
        raise RejectedError(str(exc), cited) from None
    if outcome.kind in (ActionKind.BET, ActionKind.RAISE):
        rules += _sized_by(limits, outcome)
    return Judged(tuple(rules), outcome)


#: The rule of each bound of a betting structure that refuses an amount.
BOUND_RULES = {
    Bound.POT: Rule.RR_PL,
    Bound.SIZE: Rule.RR_BR_5_6,
    Bound.CAP: Rule.RR_BR_3_4,
}


def _sized_by(limits: betting.Limits, outcome: betting.Outcome) -> list[Rule]:
    """The rules that sized a bet or raise: the pot-limit maximum (RR-PL); the fixed-limit size
    (RR-BR-5/6), and the cap when this one reached it (RR-BR-3/4)."""
    if limits.structure is betting.Structure.POT_LIMIT:
        return [Rule.RR_PL]
    if limits.structure is not betting.Structure.FIXED_LIMIT:
        return []
    if outcome.full and limits.cap and limits.raises + 1 == limits.cap:
        return [Rule.RR_BR_5_6, Rule.RR_BR_3_4]
    return [Rule.RR_BR_5_6]


def table_limits(table: TableState, hand: HandState) -> betting.Limits:
    """The limits of the table's betting structure in the hand's open round: its profile's
    ``betting.structure`` and ``betting.cap`` (docs/profiles.md), with the pot (the menu's
    quick sizes read it at every structure)."""
    profile = table.profile
    return limits_for(profile.betting_structure, hand, table.blinds[1], profile.betting_cap)


def fixed_bets(big_blind: int) -> tuple[int, int]:
    """RR-BR-5/6: the fixed-limit small bet (the flop and before it) and big bet (the turn and
    the river): the big blind and twice it (docs/profiles.md says why they are not keys)."""
    return big_blind, 2 * big_blind


def limits_for(
    structure: betting.Structure, hand: HandState, big_blind: int, cap: int = FIXED_LIMIT_CAP
) -> betting.Limits:
    """What ``structure`` allows in the hand's open round (see :class:`betting.Limits`); ``cap``:
    the most bets and raises of a fixed-limit round (RR-BR-3/4)."""
    pot = hand.total_pot
    if structure is not betting.Structure.FIXED_LIMIT:
        return betting.Limits(structure, pot=pot)
    rnd = hand.chips.round
    street = rnd.street if rnd is not None else hand.street
    small_bet, big_bet = fixed_bets(big_blind)
    size = big_bet if street >= Street.TURN else small_bet
    # RRoP, Betting and raising 3-4: a bet and three raises where three or more players can
    # still bet; unlimited once the action is heads-up before the cap, capped for good after it
    out = {s for s in hand.order if hand.chips.stacks[s] == 0} - {
        a.seat for a in hand.chips.actions if a.all_in
    }  # all in on the blinds and antes
    capped_by = 0  # how many could still bet when the cap was reached
    base = raises = level = 0
    if street is Street.PREFLOP and rnd is not None:
        # the blinds and straddles: the big blind is the round's bet, each straddle a raise; the
        # level is what they put in (a short big blind's all-in), as the round keeps it
        base = level = _forced_level(hand, rnd)
        raises = 1 + len(hand.chips.straddles)
        if raises >= cap:
            capped_by = len(hand.order) - len(out)
    for record in hand.chips.actions:
        if record.kind is ActionKind.FOLD or record.all_in:
            out.add(record.seat)  # a raise that is all in reaches the cap with one fewer to bet
        if record.street is street and record.kind in (ActionKind.BET, ActionKind.RAISE):
            if 2 * (record.to - level) >= size:  # half a bet or more counts (RRoP 6, TDA 47)
                base = record.to
                raises += 1
                if raises == cap:
                    capped_by = len(hand.order) - len(out)
            level = max(level, record.to)
    chips = hand.chips
    able = sum(1 for s in hand.order if s not in chips.folded and chips.stacks[s] > 0)
    heads_up = capped_by <= 2 if raises >= cap else able <= 2
    return betting.Limits(
        structure, pot=pot, size=size, base=base, raises=raises, cap=0 if heads_up else cap
    )


def _forced_level(hand: HandState, rnd: betting.Round) -> int:
    """The highest forced bet the pre-flop round opened with (blinds, straddles, live posts)."""
    forced = dict(rnd.bets)
    seen: set[int] = set()
    for record in hand.chips.actions:  # a seat's first action says what it had in before it
        if record.street is Street.PREFLOP and record.seat not in seen:
            seen.add(record.seat)
            forced[record.seat] = record.to - record.put_in
    return max(forced.values(), default=0)


def betting_action(ctx: Context, cmd: Action) -> None:
    """A betting action as the dealer entered it."""
    judged = judge(ctx.table, cmd)
    hand = ctx.hand
    seat = cmd.seat
    if judged.under_call is not None:
        ctx.emit(judged.under_call, judged.rules, severity=Severity.WARN)
        return
    outcome = judged.outcome
    assert outcome is not None
    rules = list(judged.rules)
    before = ctx.original  # the hand before this action, for a correction (DE-1548)
    assert before is not None
    chips = hand.edit_chips()
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
