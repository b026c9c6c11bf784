"""How a hand moves on: rounds close, streets open, showdown, the award, completion.

These are the transitions every rule module may trigger (a dead hand can end a round, a premature
card waits for a round to close), so they live below the rules and call none of them.

Every change of a hand's phase is one row of :data:`TRANSITIONS`, made by :func:`move`, and a hand
begins and ends only through :func:`begin_hand` and :func:`end_hand`: nothing else writes
``hand.phase`` or ``table.hand``. A move the table does not list is a bug, and says so at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from controller.cards import Card
from controller.game import betting, rake
from controller.game import pots as pot_rules
from controller.game.hands import evaluate, showdown_order
from controller.profiles import RakeMode, RulesProfile
from controller.rules.ids import Rule
from controller.table.context import Context
from controller.table.event_types import (
    BettingRoundClosed,
    BoardRunoutStarted,
    HandCompleted,
    PotAwarded,
    PotAwardProposed,
    PotRakeTaken,
    PotShare,
    ShowdownHandTabled,
    ShowdownOrder,
    StubReshuffleRequired,
    seat_map,
)
from controller.table.events import Severity
from controller.table.state import (
    RUNOUT,
    SET_ASIDE,
    BoardRulings,
    DeckStatus,
    HandState,
    Phase,
    TableState,
)
from controller.table.streets import STREETS, Street
from controller.table.tray import BOARD_PURPOSES, place_all, take_all, unread


class Move(StrEnum):
    """What moves a hand from one phase to the next."""

    HOLE_GROUPS_OUT = "every hole group is out: betting may start while the readers catch up"
    ROUND_CLOSED = "a betting round closed with a street to come"
    STREET_DEALT = "the street's board cards are out"
    FLOP_REDEALT = "a fourth flop card: the flop is dealt again (FLOP-COUNT)"
    LAST_ROUND_CLOSED = "the river's round closed with two hands or more"
    POT_DECIDED = "the award is proposed"
    SHOWDOWN_REOPENED = "a hand made live again at the award (RR-SD-5, a claim upheld)"
    NEXT_RUNOUT = "a runout's board is out and another was agreed (RUN-TWICE)"


_LIVE = (Phase.DEALING, Phase.BETTING, Phase.BOARD, Phase.SHOWDOWN)

#: move → {phase before: phase after}
TRANSITIONS: dict[Move, dict[Phase, Phase]] = {
    Move.HOLE_GROUPS_OUT: {Phase.DEALING: Phase.BETTING},
    Move.ROUND_CLOSED: {Phase.BETTING: Phase.BOARD},
    Move.STREET_DEALT: {Phase.BOARD: Phase.BETTING, Phase.BETTING: Phase.BETTING},
    Move.FLOP_REDEALT: {Phase.BETTING: Phase.BOARD, Phase.DEALING: Phase.BOARD},
    Move.LAST_ROUND_CLOSED: {Phase.BETTING: Phase.SHOWDOWN, Phase.BOARD: Phase.SHOWDOWN},
    Move.POT_DECIDED: dict.fromkeys(_LIVE, Phase.AWARD),
    Move.SHOWDOWN_REOPENED: {Phase.AWARD: Phase.SHOWDOWN, Phase.SHOWDOWN: Phase.SHOWDOWN},
    Move.NEXT_RUNOUT: {Phase.BETTING: Phase.BOARD, Phase.BOARD: Phase.BOARD},
}


def move(hand: HandState, what: Move) -> None:
    """Change the hand's phase as ``what`` does (the one place a phase changes)."""
    after = TRANSITIONS[what].get(hand.phase)
    if after is None:
        raise AssertionError(f"no move {what.name} from {hand.phase} in hand {hand.hand_id}")
    hand.phase = after


def begin_hand(table: TableState, hand: HandState) -> None:
    """The hand is in progress (``start_hand``)."""
    if table.hand is not None:
        raise AssertionError(f"hand {hand.hand_id} begins while {table.hand.hand_id} is on")
    table.hand = hand


def end_hand(table: TableState, hand: HandState, *, completed: bool) -> None:
    """The hand is over: completed (it becomes the last hand) or misdealt or void."""
    if table.hand is not hand:
        raise AssertionError(f"hand {hand.hand_id} ends but is not the hand in progress")
    if completed:
        table.last_hand = hand
    table.hand = None


def clockwise_seats(seats: set[int] | frozenset[int], after: int) -> tuple[int, ...]:
    """``seats`` in clockwise order (ascending seat numbers, wrapping) starting after ``after``."""
    return tuple(sorted(seats, key=lambda s: (s <= after, s)))


# --------------------------------------------------------------------------- rounds and streets


def close_round(ctx: Context, hand: HandState, *, by_dealer: bool = False) -> None:
    """End the open round: return an uncalled bet, then the next street, showdown or award."""
    rnd = hand.chips.round
    returned = pot_rules.uncalled(hand.chips.committed)
    given_back = None
    if returned is not None:
        seat, chips = returned
        hand.edit_chips().committed = {
            **hand.chips.committed,
            seat: hand.chips.committed[seat] - chips,
        }
        hand.edit_chips().stacks = {**hand.chips.stacks, seat: hand.chips.stacks[seat] + chips}
        given_back = {str(seat): chips}
    quiet = rnd is not None and rnd.actions == 0 and hand.street is not Street.PREFLOP
    closed = BettingRoundClosed(
        hand.street.label,
        hand.total_pot,
        given_back,
        closed_by="dealer" if by_dealer else None,
        no_action=True if quiet and not by_dealer else None,
    )
    hand.edit_chips().last_round = rnd
    hand.edit_chips().round = None
    ctx.emit(closed)
    if (
        hand.board_rulings.reshuffle_after is not None
        and hand.board_rulings.reshuffle_after[0] is hand.street
    ):
        rule = hand.board_rulings.reshuffle_after[1]
        hand.edit_board_rulings().reshuffle_after = None
        if hand.live_count > 1 and hand.street is not Street.RIVER:
            reshuffle_stub(ctx, hand, rule)  # only a hand with a street to come needs the stub
    if hand.live_count == 1:
        propose_award(ctx, hand)
    elif hand.street is Street.RIVER and len(hand.showdown.boards) + 1 < hand.showdown.runs:
        next_runout(ctx, hand)
    elif hand.street is Street.RIVER:
        enter_showdown(ctx, hand)
    else:
        move(hand, Move.ROUND_CLOSED)
        _faceup_if_all_in(ctx, hand)


def next_runout(ctx: Context, hand: HandState) -> None:
    """RUN-TWICE: this runout's board is out; the next runs from the cards they had in common.

    The runout's cards stay on the table (``RUNOUT``), its burns with the burns; the burn and
    board rulings start again for the new runout, whose streets are dealt, each with its burn.
    """
    board = hand.cards.board
    run_from = hand.showdown.run_from
    assert run_from is not None
    common = STREETS[run_from].board_after
    place_all(hand, board[common:], RUNOUT)
    hand.edit_showdown().boards = (*hand.showdown.boards, board)
    hand.street = run_from
    hand.board_rulings = BoardRulings()
    move(hand, Move.NEXT_RUNOUT)
    started = BoardRunoutStarted(len(hand.showdown.boards) + 1, board[:common], board)
    ctx.emit(started, (Rule.RUN_TWICE,))


def _faceup_if_all_in(ctx: Context, hand: HandState) -> None:
    """ALLIN-FACEUP (tournament): no more betting with someone all in: every hand is shown now."""
    if hand.showdown.faceup or not ctx.table.profile.showdown_allin_faceup:
        return
    can_bet = [s for s in hand.live if hand.chips.stacks[s] > 0]
    if len(can_bet) > 1 or all(hand.chips.stacks[s] > 0 for s in hand.live):
        return
    hand.edit_showdown().faceup = True
    order = showdown_order(hand.live, hand.order, None, None)
    ctx.emit(ShowdownOrder(tuple(order), faceup=True), (Rule.ALLIN_FACEUP,))


def open_street(ctx: Context, hand: HandState) -> None:
    """The board for the next street is out: open its betting round (or skip it)."""
    hand.street = Street(hand.street + 1)
    move(hand, Move.STREET_DEALT)
    chips = hand.edit_chips()
    chips.round = rnd = betting.open_round(
        hand.street, hand.order, chips.stacks, chips.folded, ctx.table.blinds[1]
    )
    if rnd.to_act is None:
        close_round(ctx, hand)


def after_hand_shrank(ctx: Context, hand: HandState) -> None:
    """A hand died outside the betting: the round, the showdown or the pot may now be settled."""
    if hand.phase is Phase.AWARD:
        return
    if hand.chips.round is not None and (hand.live_count == 1 or hand.chips.round.to_act is None):
        close_round(ctx, hand)
    elif hand.live_count == 1 and hand.chips.round is None:
        propose_award(ctx, hand)
    elif hand.phase is Phase.SHOWDOWN:
        maybe_propose(ctx, hand)


def reshuffle_stub(ctx: Context, hand: HandState, rule: Rule) -> None:
    """Cards out of play go back into the stub, which is reshuffled and counted again.

    What goes back: the board cards set aside (premature, or of a flop dealt again) and the cards
    of board groups that were dispensed but never read (the dealer gathers them with the board);
    never the burns, the muck or a hand. ``with`` names the cards the table read; ``unread``
    says how many board cards nobody read go back with them (the dealer gathers every board card
    dealt and not on the table), ``unread_groups`` the groups the table counts them from (with
    identities withheld it cannot tell which card of two groups was read).
    ``stub`` is what the shuffler must count after.
    Until it has, nothing more is asked of it and a board card turned is not part of the board.
    """
    back = list(take_all(hand, SET_ASIDE))
    groups = [g for g in hand.deal.pending if g.purpose in BOARD_PURPOSES and unread(g)]
    groups += [g for g in hand.deal.returning if unread(g)]  # broken groups, whatever their purpose
    count = sum(unread(g) for g in groups)
    hand.edit_deal().pending = tuple(g for g in hand.deal.pending if g not in groups)
    hand.edit_deal().returning = ()
    hand.edit_deal().tray -= count
    hand.edit_deal().stub += len(back) + count
    if not hand.deal.manual_board:  # a stub shuffled by hand is counted by nobody
        hand.edit_deal().reshuffle_due = rule
    required = StubReshuffleRequired(
        hand.deal.stub,
        tuple(back),
        count if groups else None,
        tuple(g.group for g in groups) if groups else None,
    )
    ctx.emit(required, (rule,), severity=Severity.WARN)


# --------------------------------------------------------------------------- showdown and award


def enter_showdown(ctx: Context, hand: HandState) -> None:
    """Two or more live hands after the last round: who shows first (DE-1550a, DE-1551, RR-SD-7)."""
    live = hand.live
    rnd = (
        hand.chips.last_round
        if hand.chips.last_round and hand.chips.last_round.street is Street.RIVER
        else None
    )
    rules = [Rule.DE_1550A, Rule.DE_1551]
    depth: dict[int, int] | None = None
    if ctx.table.profile.showdown_sidepot_first:
        pots = pot_rules.build_pots(hand.chips.committed, live)
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
    move(hand, Move.LAST_ROUND_CLOSED)
    hand.edit_showdown().order = tuple(order)
    ctx.emit(ShowdownOrder(tuple(order)), tuple(rules))
    for seat in order:  # hands already face up (ALLIN-FACEUP) are read now the board is out
        if seat in hand.showdown.shown and seat not in hand.showdown.tabled:
            read_tabled(ctx, hand, seat, hand.showdown.shown[seat])
    maybe_propose(ctx, hand)


def read_tabled(ctx: Context, hand: HandState, seat: int, hole: Sequence[Card]) -> None:
    """Read a hand face up on the table with the full board (cards speak, DE-1550b2)."""
    value = evaluate(hole, hand.cards.board)
    hand.edit_showdown().tabled = {**hand.showdown.tabled, seat: value}
    # a hand mucked and made live again (a claim upheld, RR-SD-5) counts as shown, now
    earlier = tuple(d for d in hand.showdown.declarations if d[0] != seat)
    hand.edit_showdown().declarations = (*earlier, (seat, True))
    tabled = ShowdownHandTabled(
        seat, tuple(hole), value.category, tuple(value.best), value.strength
    )
    ctx.emit(tabled, (Rule.DE_1550B2,))


def maybe_propose(ctx: Context, hand: HandState) -> None:
    """Propose the award once every live hand is tabled or only one is left."""
    if hand.phase is not Phase.SHOWDOWN:
        return
    unresolved = [s for s in hand.live if s not in hand.showdown.tabled]
    if not unresolved or hand.live_count == 1:
        propose_award(ctx, hand)


def propose_award(ctx: Context, hand: HandState) -> None:
    """Split every pot (POT-SEP, odd chips per profile) and wait for the dealer's push (DE-1552)."""
    profile = ctx.table.profile
    # the pots are the ones the betting made: a hand given up at showdown (mucked, conceded or
    # killed there) still marks its level, it only cannot win
    gave_up = [seat for seat, shown in hand.showdown.declarations if not shown]
    claimants = [s for s in hand.order if s not in hand.chips.folded or s in gave_up]
    contested = False

    def winners_of(pot: pot_rules.Pot) -> list[int]:
        nonlocal contested
        live = [
            s for s in pot.eligible if s not in hand.showdown.mucked and s not in hand.chips.folded
        ]
        if not live:  # everyone in this pot gave up: the last to give up was its last claimant
            live = [next(s for s in reversed(gave_up) if s in pot.eligible)]
        if len(live) == 1:
            return live
        # RR-SD-1: in a contested pot only a hand shown in full can win
        contested = True
        best = max(hand.showdown.tabled[s].strength for s in live)
        return [s for s in live if hand.showdown.tabled[s].strength == best]

    pots = pot_rules.build_pots(hand.chips.committed, claimants, sum(hand.chips.dead.values()))
    take = None
    house: list[int] = []
    if profile.drops_from_pots:  # HOUSE-RAKE, HOUSE-DROP-JACKPOT: dropped before the split
        take = rake.take([p.amount for p in pots], hand.street is not Street.PREFLOP, profile)
        house = [take.from_pot(i) for i in range(len(pots))]
    if hand.showdown.boards:  # RUN-TWICE: each pot in parts, one for each runout's winners
        boards = (*hand.showdown.boards, hand.cards.board)
        splits = [
            pot_rules.split_runouts(
                pot,
                [_winners_on(hand, pot, board, gave_up) for board in boards],
                hand.order,
                claimants,
                profile,
                house[i] if house else 0,
            )
            for i, pot in reversed(tuple(enumerate(pots)))
        ]
        contested = any(len(_contenders(hand, p, gave_up)) > 1 for p in pots)
    else:
        splits = pot_rules.resolve(pots, claimants, hand.order, winners_of, profile, house)
    hand.edit_showdown().proposal = tuple(splits)
    hand.edit_showdown().take = take
    move(hand, Move.POT_DECIDED)
    rules = [Rule.DE_1552]
    if contested:
        rules.append(Rule.RR_SD_1)
    if len(splits) > 1:
        rules.append(Rule.POT_SEP)
    if any(split.odd_chips for split in splits):
        rules.append(pot_rules.odd_chip_rule(profile))
    if hand.showdown.boards:
        rules.append(Rule.RUN_TWICE)
    if take is not None:
        rules += house_rules(take, profile)
    shares, payouts = award_data(splits)
    proposed = PotAwardProposed(
        shares, payouts, tuple(losers(hand)), take.total if take is not None else None
    )
    ctx.emit(proposed, tuple(rules), needs_confirm=True)


def _contenders(hand: HandState, pot: pot_rules.Pot, gave_up: Sequence[int]) -> list[int]:
    """The hands still able to win ``pot`` (its last claimant when all gave up)."""
    live = [s for s in pot.eligible if s not in hand.showdown.mucked and s not in hand.chips.folded]
    return live or [next(s for s in reversed(gave_up) if s in pot.eligible)]


def _winners_on(
    hand: HandState, pot: pot_rules.Pot, board: Sequence[Card], gave_up: Sequence[int]
) -> list[int]:
    """RUN-TWICE: the best hands for ``pot`` on one runout's ``board`` (cards speak)."""
    live = _contenders(hand, pot, gave_up)
    if len(live) == 1:
        return live
    strength = {s: evaluate(hand.deal.dealt.get(s, ()), board).strength for s in live}
    best = max(strength.values())
    return [s for s in live if strength[s] == best]


def house_rules(take: rake.HouseTake, profile: RulesProfile) -> list[Rule]:
    """The rules a take cites: what it took, or (nothing taken) what the profile would take."""
    if take.total:
        return [Rule.HOUSE_RAKE] * bool(sum(take.rake)) + [Rule.HOUSE_DROP_JACKPOT] * bool(
            take.jackpot
        )
    return [Rule.HOUSE_RAKE] if profile.rake_mode is RakeMode.POT else [Rule.HOUSE_DROP_JACKPOT]


def losers(hand: HandState) -> list[int]:
    """Tabled hands that win nothing: RR-SD-4 has them killed before the pot is pushed."""
    winners = {s for split in hand.showdown.proposal or () for s in split.winners}
    return [s for s in hand.order if s in hand.showdown.tabled and s not in winners]


def award_data(
    splits: Sequence[pot_rules.PotSplit],
) -> tuple[tuple[PotShare, ...], dict[str, int]]:
    """The pots and payouts as ``pot.award.proposed`` and ``pot.awarded`` carry them."""
    payouts: dict[int, int] = {}
    for split in splits:
        for seat, chips in split.winners.items():
            payouts[seat] = payouts.get(seat, 0) + chips
    pots = tuple(
        PotShare(
            split.pot.amount - split.house,
            tuple(split.pot.eligible),
            seat_map(split.winners),
            seat_map(split.odd_chips),
            split.house or None,
            tuple(seat_map(b) for b in split.boards) if split.boards else None,
        )
        for split in splits
    )
    return pots, seat_map(payouts)


def push_award(ctx: Context, hand: HandState) -> None:
    """The dealer pushes the pots (DE-1552); the hand completes."""
    assert hand.showdown.proposal is not None
    pots, payouts = award_data(hand.showdown.proposal)
    stacks = dict(hand.chips.stacks)
    for split in hand.showdown.proposal:
        for seat, chips in split.winners.items():
            stacks[seat] += chips
    hand.edit_chips().stacks = stacks
    take = hand.showdown.take
    if take is not None:  # the dealer drops the house's take before the push
        ctx.table.house += take.total
        taken = PotRakeTaken(sum(take.rake), take.jackpot, take.rake, take.total, take.waived)
        ctx.emit(taken, tuple(house_rules(take, ctx.table.profile)))
    ctx.emit(PotAwarded(pots, payouts, take.total if take is not None else None), (Rule.DE_1552,))
    complete_hand(ctx, hand)


def complete_hand(ctx: Context, hand: HandState) -> None:
    """Book the stacks, move the button (RR-BB-ROT), and make the table ready for the next hand."""
    table = ctx.table
    table.stacks = {**table.stacks, **hand.chips.stacks}
    with_chips = {s for s, c in table.stacks.items() if c > 0}
    button = hand.showdown.button_seen if hand.showdown.button_seen is not None else hand.button
    movable = with_chips | {button}
    next_button = clockwise_seats(movable, button)[0]
    table.button = next_button
    take = hand.showdown.take
    ctx.emit(
        HandCompleted(
            seat_map(table.stacks), next_button, take.total if take is not None else None
        ),
        (Rule.RR_BB_ROT,),
    )
    if table.deck.shuffle_id is not None and table.deck.shuffle_id == hand.deal.shuffle_id:
        table.deck = DeckStatus()
    end_hand(table, hand, completed=True)
