"""The hand lifecycle: start, blinds, betting, streets, showdown, award and completion."""

from __future__ import annotations

from collections.abc import Sequence

from controller.rules import pots as pot_rules
from controller.rules.ids import Rule
from controller.rules.showdown import evaluate, showdown_order
from controller.table import betting
from controller.table.betting import ActionRejectedError, Street
from controller.table.context import Context, RejectedError, seat_map
from controller.table.inputs import (
    Action,
    ActionKind,
    Award,
    Muck,
    RoundClosed,
    StartHand,
    TableHand,
)
from controller.table.state import ActionRecord, DeckStatus, HandState, Phase

BOARD_SIZE = {Street.FLOP: 3, Street.TURN: 4, Street.RIVER: 5}


def clockwise_seats(seats: set[int] | frozenset[int], after: int) -> tuple[int, ...]:
    """``seats`` in clockwise order (ascending seat numbers, wrapping) starting after ``after``."""
    return tuple(sorted(seats, key=lambda s: (s <= after, s)))


# --------------------------------------------------------------------------- start and blinds


def start_hand(ctx: Context, cmd: StartHand) -> None:
    """Begin a hand: seats, button, blinds and antes (DE-1537-5/7, RR-BB-ROT, HU)."""
    table = ctx.table
    if table.hand is not None:
        raise RejectedError(f"hand {table.hand.hand_id} is still in progress")
    seats = set(cmd.seats) if cmd.seats is not None else {s for s, c in table.stacks.items() if c}
    for seat in seats:
        if seat not in table.stacks:
            raise RejectedError(f"seat {seat} has no player")
        if table.stacks[seat] <= 0:
            raise RejectedError(f"seat {seat} has no chips")
    if len(seats) < 2:
        raise RejectedError("a hand needs at least two seats with chips")
    button = cmd.button if cmd.button is not None else table.button
    if button not in seats:
        raise RejectedError(f"the button seat {button} is not dealt in")

    order = clockwise_seats(seats, button)
    rules = [Rule.DE_1537_5_7, Rule.RR_BB_ROT]
    if len(order) == 2:
        # heads-up the button posts the small blind; the first group per headsup.first_card (C-14)
        other = order[0]
        small_seat, big_seat = button, other
        deal_order: tuple[int, ...] = (
            order if table.profile.headsup_first_card == "non_button" else order[::-1]
        )
        rules.append(Rule.HU)
    else:
        small_seat, big_seat = order[0], order[1]
        deal_order = order

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
        start_stacks=dict(stacks),
        stacks=stacks,
        committed=dict.fromkeys(order, 0),
    )
    table.hands_started = number
    table.button = button
    table.hand = hand
    ctx.emit(
        "hand.started",
        {
            "button": button,
            "seats": list(order),
            "small_blind": small_seat,
            "big_blind": big_seat,
            "blinds": list(table.blinds),
            "ante": table.ante,
            "stacks": seat_map(stacks),
        },
        tuple(rules),
    )
    _post_forced_bets(ctx, hand)


def _post_forced_bets(ctx: Context, hand: HandState) -> None:
    small, big = ctx.table.blinds
    stacks = dict(hand.stacks)
    committed = dict(hand.committed)
    posts: dict[int, int] = {}
    bets: dict[int, int] = {}

    def post(seat: int, amount: int, blind: str) -> int:
        paid = min(amount, stacks[seat])
        stacks[seat] -= paid
        committed[seat] += paid
        posts[seat] = posts.get(seat, 0) + paid
        ctx.emit(
            "betting.action",
            {
                "seat": seat,
                "action": "post",
                "blind": blind,
                "amount": paid,
                "stack": stacks[seat],
                "all_in": stacks[seat] == 0,
            },
            (Rule.DE_1537_5_7,),
        )
        return paid

    if ctx.table.ante:
        for seat in hand.order:
            post(seat, ctx.table.ante, "ante")
    if hand.small_blind_seat is not None:
        bets[hand.small_blind_seat] = post(hand.small_blind_seat, small, "small")
    if hand.big_blind_seat is not None:
        bets[hand.big_blind_seat] = post(hand.big_blind_seat, big, "big")
    hand.stacks, hand.committed, hand.posts = stacks, committed, posts
    first = betting.clockwise_from(hand.order, hand.big_blind_seat or hand.button)
    hand.round = betting.open_round(Street.PREFLOP, first, stacks, hand.folded, big, bets)


# --------------------------------------------------------------------------- betting


def betting_action(ctx: Context, cmd: Action) -> None:
    """A betting action as the dealer entered it (DE-1548)."""
    hand = ctx.hand
    if cmd.seat not in hand.order:
        raise RejectedError(f"seat {cmd.seat} is not in hand {hand.hand_id}")
    if cmd.action is ActionKind.POST:
        raise RejectedError("blinds and antes are posted automatically when the hand starts")
    if hand.phase is Phase.DEALING:
        raise RejectedError("the hole cards are not all delivered yet")
    if hand.phase is not Phase.BETTING or hand.round is None:
        raise RejectedError("no betting round is open")
    if cmd.seat in hand.folded:
        raise RejectedError(f"seat {cmd.seat} has folded")
    try:
        outcome = betting.act(
            hand.round, hand.order, hand.stacks, hand.folded, cmd.seat, cmd.action, cmd.amount
        )
    except ActionRejectedError as exc:
        raise RejectedError(str(exc)) from None

    seat = cmd.seat
    if outcome.put_in:
        hand.stacks = {**hand.stacks, seat: hand.stacks[seat] - outcome.put_in}
        hand.committed = {**hand.committed, seat: hand.committed[seat] + outcome.put_in}
    if outcome.kind is ActionKind.FOLD:
        hand.folded = hand.folded | {seat}
    hand.actions = (
        *hand.actions,
        ActionRecord(hand.street, seat, outcome.kind, outcome.to, outcome.put_in, outcome.all_in),
    )
    data: dict[str, object] = {
        "seat": seat,
        "action": outcome.kind,
        "to": outcome.to,
        "put_in": outcome.put_in,
        "stack": hand.stacks[seat],
        "all_in": outcome.all_in,
        "pot": hand.total_pot,
    }
    if outcome.kind in (ActionKind.BET, ActionKind.RAISE) and not outcome.full:
        data["reopens_betting"] = False
    ctx.emit("betting.action", data, (Rule.DE_1548,))
    hand.round = betting.settle_queue(outcome.round, hand.stacks, hand.folded)
    if hand.live_count == 1 or hand.round.to_act is None:
        close_round(ctx, hand)


def round_closed(ctx: Context, cmd: RoundClosed) -> None:
    """The dealer closes the round (tables that do not enter every action)."""
    hand = ctx.hand
    if hand.phase is not Phase.BETTING or hand.round is None:
        raise RejectedError("no betting round is open")
    close_round(ctx, hand, by_dealer=True)


def close_round(ctx: Context, hand: HandState, *, by_dealer: bool = False) -> None:
    """End the open round: return an uncalled bet, then the next street, showdown or award."""
    rnd = hand.round
    returned = pot_rules.uncalled(hand.committed)
    data: dict[str, object] = {"street": hand.street.label}
    if returned is not None:
        seat, chips = returned
        hand.committed = {**hand.committed, seat: hand.committed[seat] - chips}
        hand.stacks = {**hand.stacks, seat: hand.stacks[seat] + chips}
        data["returned"] = {str(seat): chips}
    data["pot"] = hand.total_pot
    if by_dealer:
        data["closed_by"] = "dealer"
    elif rnd is not None and rnd.actions == 0 and hand.street is not Street.PREFLOP:
        data["no_action"] = True
    hand.last_round = rnd
    hand.round = None
    ctx.emit("betting.round.closed", data)
    if hand.live_count == 1:
        propose_award(ctx, hand)
    elif hand.street is Street.RIVER:
        enter_showdown(ctx, hand)
    else:
        hand.phase = Phase.BOARD


def open_street(ctx: Context, hand: HandState) -> None:
    """The board for the next street is out: open its betting round (or skip it)."""
    hand.street = Street(hand.street + 1)
    hand.phase = Phase.BETTING
    hand.round = betting.open_round(
        hand.street, hand.order, hand.stacks, hand.folded, ctx.table.blinds[1]
    )
    if hand.round.to_act is None:
        close_round(ctx, hand)


# --------------------------------------------------------------------------- showdown and award


def enter_showdown(ctx: Context, hand: HandState) -> None:
    """Two or more live hands after the last round: who shows first (DE-1550a, DE-1551, RR-SD-7)."""
    live = hand.live
    rnd = hand.last_round if hand.last_round and hand.last_round.street is Street.RIVER else None
    rules = [Rule.DE_1550A, Rule.DE_1551]
    depth: dict[int, int] | None = None
    if ctx.table.profile.showdown_sidepot_first:
        pots = pot_rules.build_pots(hand.committed, live)
        if len(pots) > 1:
            depth = {s: sum(s in p.eligible for p in pots) for s in live}
            rules.append(Rule.RR_SD_7)
    order = showdown_order(
        live,
        hand.order,
        rnd.aggressor if rnd else None,
        rnd.first_actor if rnd else None,
        depth,
    )
    hand.phase = Phase.SHOWDOWN
    hand.showdown_order = tuple(order)
    ctx.emit("showdown.order", {"order": order}, tuple(rules))


def table_hand(ctx: Context, cmd: TableHand) -> None:
    """A live hand is turned face up: read it (cards speak, DE-1550b2)."""
    hand = _showdown_seat(ctx, cmd.seat)
    cards = hand.holes.get(cmd.seat, ())
    if len(cards) != 2:
        raise RejectedError(f"seat {cmd.seat}'s hole cards were not both read")
    value = evaluate(cards, hand.board)
    hand.tabled = {**hand.tabled, cmd.seat: value}
    ctx.emit(
        "showdown.hand.tabled",
        {
            "seat": cmd.seat,
            "cards": list(cards),
            "category": value.category,
            "best": list(value.best),
            "strength": value.strength,
        },
        (Rule.DE_1550B2,),
    )
    _maybe_propose(ctx, hand)


def muck_hand(ctx: Context, cmd: Muck) -> None:
    """A live hand is discarded unshown at showdown (§ 1551(5))."""
    hand = _showdown_seat(ctx, cmd.seat)
    hand.mucked = hand.mucked | {cmd.seat}
    hand.muck_order = (*hand.muck_order, cmd.seat)
    ctx.emit(
        "showdown.hand.mucked",
        {"seat": cmd.seat},
        (Rule.DE_1551,),
        secret={"cards": list(hand.holes.get(cmd.seat, ()))},
    )
    _maybe_propose(ctx, hand)


def _showdown_seat(ctx: Context, seat: int) -> HandState:
    hand = ctx.hand
    if hand.phase is not Phase.SHOWDOWN:
        raise RejectedError("the hand is not at showdown")
    if seat not in hand.live:
        raise RejectedError(f"seat {seat} has no live hand")
    if seat in hand.tabled:
        raise RejectedError(f"seat {seat}'s hand is already tabled")
    return hand


def _maybe_propose(ctx: Context, hand: HandState) -> None:
    unresolved = [s for s in hand.live if s not in hand.tabled]
    if not unresolved or (len(hand.live) == 1):
        propose_award(ctx, hand)


def propose_award(ctx: Context, hand: HandState) -> None:
    """Split every pot (POT-SEP, odd chips per profile) and wait for the dealer's push (DE-1552)."""
    profile = ctx.table.profile
    claimants = [s for s in hand.order if s not in hand.folded]

    def winners_of(pot: pot_rules.Pot) -> list[int]:
        live = [s for s in pot.eligible if s not in hand.mucked]
        if not live:  # everyone in this pot gave up: the last to muck was its last claimant
            live = [next(s for s in reversed(hand.muck_order) if s in pot.eligible)]
        if len(live) == 1:
            return live
        best = max(hand.tabled[s].strength for s in live)
        return [s for s in live if hand.tabled[s].strength == best]

    splits = pot_rules.resolve(hand.committed, claimants, hand.order, winners_of, profile)
    hand.proposal = tuple(splits)
    hand.phase = Phase.AWARD
    rules = [Rule.DE_1552]
    if len(splits) > 1:
        rules.append(Rule.POT_SEP)
    if any(split.odd_chips for split in splits):
        rules.append(pot_rules.odd_chip_rule(profile))
    ctx.emit("pot.award.proposed", award_data(splits), tuple(rules), needs_confirm=True)


def award_data(
    splits: Sequence[pot_rules.PotSplit],
) -> dict[str, object]:
    """The pots and payouts as ``pot.award.proposed`` and ``pot.awarded`` carry them."""
    payouts: dict[int, int] = {}
    for split in splits:
        for seat, chips in split.winners.items():
            payouts[seat] = payouts.get(seat, 0) + chips
    return {
        "pots": [
            {
                "amount": split.pot.amount,
                "eligible": list(split.pot.eligible),
                "winners": seat_map(split.winners),
                "odd_chips": seat_map(split.odd_chips),
            }
            for split in splits
        ],
        "payouts": seat_map(payouts),
    }


def award(ctx: Context, _cmd: Award) -> None:
    """The dealer pushes the pots (DE-1552); the hand completes and the button moves (RR-BB-ROT)."""
    hand = ctx.hand
    if hand.phase is not Phase.AWARD or hand.proposal is None:
        raise RejectedError("there is no proposed award to push")
    data = award_data(hand.proposal)
    stacks = dict(hand.stacks)
    for split in hand.proposal:
        for seat, chips in split.winners.items():
            stacks[seat] += chips
    hand.stacks = stacks
    ctx.emit("pot.awarded", data, (Rule.DE_1552,))
    complete_hand(ctx, hand)


def complete_hand(ctx: Context, hand: HandState) -> None:
    """Book the stacks, move the button, and make the table ready for the next hand."""
    table = ctx.table
    table.stacks = {**table.stacks, **hand.stacks}
    with_chips = {s for s, c in table.stacks.items() if c > 0}
    movable = with_chips | {hand.button}
    next_button = clockwise_seats(movable, hand.button)[0]
    table.button = next_button
    ctx.emit(
        "hand.completed",
        {"stacks": seat_map(table.stacks), "next_button": next_button},
        (Rule.RR_BB_ROT,),
    )
    if table.deck.shuffle_id is not None and table.deck.shuffle_id == hand.shuffle_id:
        table.deck = DeckStatus()
    table.last_hand = hand
    table.hand = None
