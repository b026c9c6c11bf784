"""Starting a hand: who is dealt in, the button, the blinds and antes.

Who is dealt in, the button and the blinds (DE-1537-5/7, RR-BB-ROT, RR-BB-2, HU, MISSED-BLINDS,
MD-REDEAL) are placed by ``controller/rules/button.py``; here they are posted. DE-1544a-APPR: no
hand starts while the shuffler is refused. BUTTON-POS (RRoP Misdeals 2(g), Irregularities 1): a
button found in the wrong place. HOUSE-TIME (house rules, ``rake.mode = "time"``): the first hand
of each period collects time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from controller.game import betting, rake
from controller.profiles import AnteKind, HeadsUpFirstCard, RakeMode, StraddleMode
from controller.rules import blinds, devices
from controller.rules import button as button_rules
from controller.rules.ids import Rule
from controller.rules.misdeal import cutoff_note, cutoff_passed, declare_misdeal
from controller.table import flow
from controller.table.context import Context, RejectedError
from controller.table.event_types import (
    BettingAction,
    HandStarted,
    HouseTimeCollected,
    IrregularityDetected,
    seat_map,
)
from controller.table.flow import clockwise_seats
from controller.table.inputs import ActionKind, ButtonReport, StartHand
from controller.table.state import Chips, HandState, TableState
from controller.table.streets import Street


def start_hand(ctx: Context, cmd: StartHand) -> None:
    """Begin a hand: seats, button, blinds and antes."""
    table = ctx.table
    if table.hand is not None:
        raise RejectedError(f"hand {table.hand.hand_id} is still in progress")
    blocked = devices.blocked(ctx)
    if blocked:
        raise RejectedError(f"the table cannot deal: {blocked}", (Rule.DE_1544A_APPR,))
    placement = button_rules.place(table, seats=cmd.seats, button=cmd.button)
    redeal = table.redeal
    button, small_seat, big_seat = placement.button, placement.small, placement.big
    rules = list(placement.rules)
    order = clockwise_seats(placement.seats, button)
    deal_order = order
    if len(order) == 2 and table.profile.headsup_first_card is HeadsUpFirstCard.BUTTON:
        deal_order = order[::-1]  # HU: the first group to the button (headsup.first_card)

    straddles = _straddles(table, cmd.straddles or (), order, small_seat, big_seat, button)
    if straddles:
        rules.append(Rule.STRADDLE)
    # nothing is refused below: the debts, the time and the straddles are settled for this hand
    owed_posts: list[tuple[int, int, int]] = []
    sitting_out = sum(1 for c in table.stacks.values() if c) > len(order)
    if redeal is not None:
        owed_posts = list(redeal.owed_posts)  # the misdeal gave them back: posted again
    elif sitting_out or blinds.anyone_owes(table, order):
        # MISSED-BLINDS: blinds that passed a seat sitting out, and what returning seats post
        owed_posts = blinds.settle(ctx, order, small_seat, big_seat)
        if owed_posts:
            rules.append(Rule.MISSED_BLINDS)
    elif not table.played.issuperset(order):
        table.played = table.played | set(order)
    if table.profile.rake_mode is RakeMode.TIME:
        _collect_time(ctx, order, cmd.ts)
    number = table.hands_started + 1
    stacks = {s: table.stacks[s] for s in order}
    hand = HandState(
        hand_id=f"{table.table_id}-{number:05d}",
        number=number,
        button=button,
        order=order,
        deal_order=deal_order,
        small_blind_seat=small_seat,
        big_blind_seat=big_seat,
        chips=Chips(
            stacks, dict.fromkeys(order, 0), straddles=straddles, owed_posts=tuple(owed_posts)
        ),
    )
    table.hands_started = number
    table.button = button
    # where the small blind sat, even dead: the next dead button goes there (RR-BB-2); with no
    # small blind, where it would have been (the last big blind's seat); a redeal keeps them
    if small_seat is not None:
        table.last_blinds = (small_seat, big_seat)
    elif redeal is None:
        assert table.last_blinds is not None  # a dead small blind follows a hand
        table.last_blinds = (table.last_blinds[1], big_seat)
    table.redeal = None
    flow.begin_hand(table, hand)
    started = HandStarted(
        button,
        order,
        small_seat,
        big_seat,
        table.blinds,
        table.ante,
        seat_map(stacks),
        redeal.of if redeal is not None else None,
        seat_map(dict(straddles)) if straddles else None,
        *_structure(table),
    )
    ctx.emit(started, tuple(rules))
    _post_forced_bets(ctx, hand)


def _structure(table: TableState) -> tuple[str | None, int | None]:
    """The betting structure ``hand.started`` names (none at a no-limit table), and the cap
    with fixed-limit."""
    structure = table.profile.betting_structure
    if structure is betting.Structure.NO_LIMIT:
        return None, None
    cap = table.profile.betting_cap if structure is betting.Structure.FIXED_LIMIT else None
    return structure.value, cap


def _straddles(
    table: TableState,
    seats: tuple[int, ...],
    order: tuple[int, ...],
    small: int | None,
    big: int,
    button: int,
) -> tuple[tuple[int, int], ...]:
    """STRADDLE: each straddle's (seat, chips), or RejectedError naming what is wrong.

    The first straddle is under the gun (the seat after the big blind) or, Mississippi, on the
    button; each re-straddle is the seat after the last straddler, never a blind; each is twice
    the blind or straddle before it, and its seat must cover it.
    """
    if not seats:
        return ()
    profile = table.profile
    cite = (Rule.STRADDLE,)
    if profile.straddle_mode is StraddleMode.NONE:
        raise RejectedError("this table takes no straddles (straddle.mode)", cite)
    if len(seats) > profile.straddle_max:
        raise RejectedError(
            f"at most {profile.straddle_max} straddle(s) a hand (straddle.max)", cite
        )
    if len(order) < 3:
        raise RejectedError("a heads-up hand has no straddle", cite)
    utg = betting.clockwise_from(order, big)[0]
    first = {utg}
    if profile.straddle_mode is StraddleMode.MISSISSIPPI and button in order:
        first.add(button)
    amount, previous = table.blinds[1], None
    posted: list[tuple[int, int]] = []
    for seat in seats:
        if previous is None and seat not in first:
            where = " or the button" if len(first) > 1 else ""
            raise RejectedError(f"the first straddle is under the gun (seat {utg}){where}", cite)
        if previous is not None and seat != betting.clockwise_from(order, previous)[0]:
            raise RejectedError(f"seat {seat} is not next after straddler {previous}", cite)
        if seat in (small, big) or seat in dict(posted):
            raise RejectedError(f"seat {seat} cannot straddle: it has posted already", cite)
        amount *= 2
        if table.stacks[seat] < amount:
            raise RejectedError(f"seat {seat} cannot cover a straddle of {amount}", cite)
        posted.append((seat, amount))
        previous = seat
    return tuple(posted)


def _collect_time(ctx: Context, seats: tuple[int, ...], now: datetime) -> None:
    """HOUSE-TIME: the first hand of each period pays the period's time, seat by seat."""
    table = ctx.table
    if table.time_paid_until is not None and now < table.time_paid_until:
        return
    profile = table.profile
    charges = rake.time_charges(table.stacks, seats, profile.rake_time_amount)
    table.stacks = {s: c - charges.get(s, 0) for s, c in table.stacks.items()}
    table.house += sum(charges.values())
    table.time_paid_until = now + timedelta(minutes=profile.rake_time_minutes)
    unpaid = tuple(s for s in seats if not charges[s])
    collected = HouseTimeCollected(
        seat_map({s: c for s, c in charges.items() if c}),
        sum(charges.values()),
        table.time_paid_until.isoformat(),
        unpaid or None,
    )
    ctx.emit(collected, (Rule.HOUSE_TIME,))


def _post_forced_bets(ctx: Context, hand: HandState) -> None:
    small, big = ctx.table.blinds
    ante, kind = ctx.table.ante, ctx.table.profile.ante_kind
    stacks = dict(hand.chips.stacks)
    committed = dict(hand.chips.committed)
    posts: dict[int, int] = {}
    bets: dict[int, int] = {}
    dead: dict[int, int] = {}

    def post(seat: int, amount: int, blind: str, rule: Rule = Rule.DE_1537_5_7) -> int:
        for_table = rule is Rule.ANTE_TABLE or blind == "dead_small"
        paid = min(amount, stacks[seat])
        stacks[seat] -= paid
        if for_table:  # the table's ante: dead money in the main pot, not the seat's bet
            dead[seat] = dead.get(seat, 0) + paid
        else:
            committed[seat] += paid
        posts[seat] = posts.get(seat, 0) + paid
        posted = BettingAction(
            seat, ActionKind.POST, stacks[seat], stacks[seat] == 0, blind=blind, amount=paid
        )
        ctx.emit(posted, (rule,))
        return paid

    if ante and kind is AnteKind.EACH:
        for seat in hand.order:
            post(seat, ante, "ante")
    if hand.small_blind_seat is not None:
        bets[hand.small_blind_seat] = post(hand.small_blind_seat, small, "small")
    if hand.big_blind_seat is not None:
        bets[hand.big_blind_seat] = post(hand.big_blind_seat, big, "big")
    for (
        seat,
        live,
        dead_small,
    ) in hand.chips.owed_posts:  # MISSED-BLINDS: what a returning seat owes
        if live:
            bets[seat] = post(seat, live, "big", Rule.MISSED_BLINDS)
        if dead_small:
            post(seat, dead_small, "dead_small", Rule.MISSED_BLINDS)
    for seat, amount in hand.chips.straddles:  # live bets: the last straddler acts last
        bets[seat] = post(seat, amount, "straddle", Rule.STRADDLE)
    if ante and kind is not AnteKind.EACH:
        # ANTE-TABLE: one seat posts it for the table, after the blinds (a short big blind's chips
        # go to its blind first, TDA)
        post(table_ante_seat(hand, kind), ante, "ante", Rule.ANTE_TABLE)
    hand.chips.stacks, hand.chips.committed, hand.edit_chips().posts = stacks, committed, posts
    if dead:
        hand.edit_chips().dead = dead
    straddles = hand.chips.straddles
    last = straddles[-1][0] if straddles else hand.big_blind_seat or hand.button
    first = betting.clockwise_from(hand.order, last)
    # a straddle is the round's opening bet: the minimum raise is a straddle more
    opening = straddles[-1][1] if straddles else big
    hand.edit_chips().round = betting.open_round(
        Street.PREFLOP, first, stacks, hand.chips.folded, opening, bets
    )


def table_ante_seat(hand: HandState, kind: AnteKind) -> int:
    """Who posts the table's ante: the big blind, or the button (with a dead button, on an empty
    seat, the big blind)."""
    if kind is AnteKind.BUTTON and hand.button in hand.order:
        return hand.button
    assert hand.big_blind_seat is not None
    return hand.big_blind_seat


def button_report(ctx: Context, cmd: ButtonReport) -> None:
    """BUTTON-POS: the button was seen at ``seat``."""
    hand = ctx.hand
    if cmd.seat == hand.button:
        ctx.emit(
            IrregularityDetected("button in place", rule=Rule.BUTTON_POS.value, seat=cmd.seat),
            (Rule.BUTTON_POS,),
        )
        return
    reason = f"the button is at seat {cmd.seat}, not seat {hand.button}"
    if not cutoff_passed(hand, ctx.table.profile):
        declare_misdeal(ctx, hand, Rule.BUTTON_POS, reason)
        return
    # RRoP Irregularities 1: the hand stands; the next hand is corrected from where it really was
    hand.edit_showdown().button_seen = cmd.seat
    cutoff_note(ctx, hand, Rule.BUTTON_POS, reason)
