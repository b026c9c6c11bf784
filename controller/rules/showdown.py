"""The showdown and the award, as the dealer declares them.

DE-1550b1 (§ 1550(b)(1)): a hand with too many or too few cards is dead (held: a reader may have
missed a card). DE-1550b2 (§ 1550(b)(2),(4)): cards speak; a verbal concession is not binding.
DE-1550b5 (§ 1550(b)(5)): a player who leaves the table concedes and the hand is dead. DE-1551
(§ 1551(5)): a player may muck without showing. RR-HE-6: declaring that one plays the board.
RR-SD-5 (vs § 1551(5), profile ``showdown.request_to_see``): asking to see a called hand.
ALLIN-FACEUP: in the tournament profile hands are tabled before the runout. DE-1552 (§ 1552): the
dealer awards the pot; a claim must come before the claimant's cards are mucked. RR-SD-4: losing
hands are killed before the pot is pushed.
"""

from __future__ import annotations

from controller.rules.holds import raise_hold
from controller.rules.ids import Rule
from controller.rules.misdeal import kill_hand
from controller.table import flow
from controller.table.context import Context, RejectedError
from controller.table.event_types import (
    HoldEvidence,
    IrregularityDetected,
    ShowdownHandMucked,
    ShowdownHandShown,
    ShowdownHandTabled,
    ShowdownPlaysBoard,
)
from controller.table.events import Severity
from controller.table.inputs import Award, Claim, Concede, Muck, PlaysBoard, RequestToSee, TableHand
from controller.table.state import MUCK, HandState, Hold, Phase, Ruling
from controller.table.tray import live_cards


def _live_seat(hand: HandState, seat: int) -> None:
    if seat not in hand.order:
        raise RejectedError(f"seat {seat} is not in hand {hand.hand_id}")
    if seat in hand.chips.folded or seat in hand.showdown.mucked:
        raise RejectedError(f"seat {seat} has no live hand")


def table_hand(ctx: Context, cmd: TableHand) -> None:
    """A live hand is turned face up."""
    hand = ctx.hand
    early = hand.showdown.faceup and hand.phase in (Phase.BOARD, Phase.BETTING)
    if hand.phase is not Phase.SHOWDOWN and not early:
        raise RejectedError("the hand is not at showdown")
    _live_seat(hand, cmd.seat)
    if cmd.seat in hand.showdown.tabled or (early and cmd.seat in hand.showdown.shown):
        raise RejectedError(f"seat {cmd.seat}'s hand is already tabled")
    if cmd.cards is not None:
        cards = tuple(cmd.cards)
    elif cmd.seat in hand.showdown.plays_board:
        cards = hand.deal.dealt.get(
            cmd.seat, ()
        )  # RR-HE-6: declared, so its mucked cards still speak
    else:
        cards = live_cards(hand, cmd.seat)
    if len(cards) != 2:
        raise_hold(
            ctx,
            hand,
            Rule.DE_1550B1,
            Ruling.DEAD_HAND,
            f"seat {cmd.seat} shows {len(cards)} cards",
            seat=cmd.seat,
            evidence=HoldEvidence(count=len(cards)),
        )
        return
    if early:
        hand.edit_showdown().shown = {**hand.showdown.shown, cmd.seat: cards}
        ctx.emit(ShowdownHandTabled(cmd.seat, tuple(cards)), (Rule.ALLIN_FACEUP,))
        return
    flow.read_tabled(ctx, hand, cmd.seat, cards)
    flow.maybe_propose(ctx, hand)


def muck_hand(ctx: Context, cmd: Muck) -> None:
    """A live hand is discarded unshown at showdown (§ 1551(5))."""
    hand = ctx.hand
    if hand.phase is not Phase.SHOWDOWN:
        raise RejectedError("the hand is not at showdown")
    _live_seat(hand, cmd.seat)
    if cmd.seat in hand.showdown.tabled:
        raise RejectedError(f"seat {cmd.seat}'s hand is already tabled")
    if cmd.seat in hand.showdown.plays_board:
        # RR-HE-6: declared first, so it keeps its claim: read with its cards (cards speak)
        flow.read_tabled(ctx, hand, cmd.seat, hand.deal.dealt.get(cmd.seat, ()))
        flow.maybe_propose(ctx, hand)
        return
    hand.edit_showdown().mucked = hand.showdown.mucked | {cmd.seat}
    hand.edit_showdown().muck_order = (*hand.showdown.muck_order, cmd.seat)
    hand.edit_showdown().declarations = (*hand.showdown.declarations, (cmd.seat, False))
    ctx.emit(ShowdownHandMucked(cmd.seat, hand.deal.dealt.get(cmd.seat, ())), (Rule.DE_1551,))
    flow.maybe_propose(ctx, hand)


def plays_board(ctx: Context, cmd: PlaysBoard) -> None:
    """RR-HE-6: the seat declares it plays the board before discarding."""
    hand = ctx.hand
    _live_seat(hand, cmd.seat)
    if hand.street.label != "river" and hand.phase is not Phase.SHOWDOWN:
        raise RejectedError("the board is not complete")
    hand.edit_showdown().plays_board = hand.showdown.plays_board | {cmd.seat}
    ctx.emit(ShowdownPlaysBoard(cmd.seat), (Rule.RR_HE_6,))


def concede(ctx: Context, cmd: Concede) -> None:
    """A concession: binding only when the player leaves the table (§ 1550(b)(4),(5))."""
    hand = ctx.hand
    _live_seat(hand, cmd.seat)
    if cmd.left_table:
        kill_hand(ctx, hand, cmd.seat, Rule.DE_1550B5, "left_table")
        return
    not_binding = IrregularityDetected(
        "a verbal concession is not binding", rule=Rule.DE_1550B2.value, seat=cmd.seat
    )
    ctx.emit(not_binding, (Rule.DE_1550B2,))


def request_to_see(ctx: Context, cmd: RequestToSee) -> None:
    """RR-SD-5: see a called hand; the winner asking makes it live, anyone else kills it."""
    hand = ctx.hand
    if not ctx.table.profile.showdown_request_to_see:
        raise RejectedError(
            "this table plays § 1551(5): a player may muck without showing", (Rule.DE_1551,)
        )
    if hand.phase not in (Phase.SHOWDOWN, Phase.AWARD):
        raise RejectedError("the hand is not at showdown")
    if cmd.seat not in hand.order:
        raise RejectedError(f"seat {cmd.seat} was not dealt in")
    if cmd.target not in hand.showdown.mucked:
        raise RejectedError(f"seat {cmd.target}'s hand was not called and mucked")
    cards = hand.deal.dealt.get(cmd.target, ())
    winners = {s for split in hand.showdown.proposal or () for s in split.winners}
    if cmd.seat in winners:
        hand.edit_showdown().mucked = hand.showdown.mucked - {cmd.target}
        hand.edit_showdown().muck_order = tuple(
            s for s in hand.showdown.muck_order if s != cmd.target
        )
        flow.move(hand, flow.Move.SHOWDOWN_REOPENED)
        hand.edit_showdown().proposal = None
        ctx.emit(ShowdownHandShown(cmd.target, tuple(cards), True, cmd.seat), (Rule.RR_SD_5,))
        flow.read_tabled(ctx, hand, cmd.target, cards)
        flow.maybe_propose(ctx, hand)
        return
    ctx.emit(ShowdownHandShown(cmd.target, tuple(cards), False, cmd.seat), (Rule.RR_SD_5,))


def claim(ctx: Context, cmd: Claim) -> None:
    """DE-1552: a claim on the pot, only before the claimant's cards are mucked."""
    hand = ctx.hand
    if hand.phase not in (Phase.SHOWDOWN, Phase.AWARD):
        raise RejectedError("there is no pot to claim yet")
    if cmd.seat not in hand.order:
        raise RejectedError(f"seat {cmd.seat} was not dealt in")
    cards = hand.deal.dealt.get(cmd.seat, ())
    if cards and all(hand.cards.where.get(c) == MUCK for c in cards):
        raise RejectedError(
            f"seat {cmd.seat}'s cards are in the muck: the claim came too late", (Rule.DE_1552,)
        )
    hand.edit_showdown().claims = hand.showdown.claims | {cmd.seat}
    raise_hold(
        ctx,
        hand,
        Rule.DE_1552,
        Ruling.CLAIM_UPHELD,
        f"seat {cmd.seat} claims the pot",
        seat=cmd.seat,
    )


def claim_upheld_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    """The claim stands: the claimant's hand is live again and the award is proposed anew."""
    seat = hold.seat
    if seat is None:
        return
    if seat in hand.chips.folded:
        hand.edit_chips().folded = hand.chips.folded - {seat}
        hand.edit_irregular().dead = {s: r for s, r in hand.irregular.dead.items() if s != seat}
    hand.edit_showdown().mucked = hand.showdown.mucked - {seat}
    hand.edit_showdown().muck_order = tuple(s for s in hand.showdown.muck_order if s != seat)
    hand.edit_showdown().proposal = None
    flow.move(hand, flow.Move.SHOWDOWN_REOPENED)
    cards = hand.deal.dealt.get(seat, ())
    if len(cards) == 2 and seat not in hand.showdown.tabled:
        flow.read_tabled(ctx, hand, seat, cards)
    flow.maybe_propose(ctx, hand)


def award(ctx: Context, _cmd: Award) -> None:
    """The dealer pushes the pots (DE-1552), once the losing hands are killed (RR-SD-4)."""
    hand = ctx.hand
    if hand.phase is not Phase.AWARD or hand.showdown.proposal is None:
        raise RejectedError("there is no proposed award to push")
    unkilled = [
        s
        for s in flow.losers(hand)
        if not all(hand.cards.where.get(c) == MUCK for c in hand.deal.dealt.get(s, ()))
    ]
    if unkilled:
        raise_hold(
            ctx,
            hand,
            Rule.RR_SD_4,
            Ruling.AWARD_AS_PROPOSED,
            "losing hands are not in the muck",
            evidence=HoldEvidence(kill=tuple(unkilled)),
        )
        return
    flow.push_award(ctx, hand)


def award_as_proposed_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    """The dealer confirms the losing hands are dead (RR-SD-4), or the floor rules that a
    disputed award stands (FLOOR-CALL): push the pots."""
    said = (
        "the floor upholds the award as proposed"
        if hold.rule is Rule.FLOOR_CALL
        else "losing hands killed by the dealer"
    )
    ctx.emit(
        IrregularityDetected(said, rule=hold.rule.value),
        (hold.rule,),
        severity=Severity.INFO,
    )
    flow.push_award(ctx, hand)
