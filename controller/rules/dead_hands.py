"""Live hands that reach the muck.

DE-1550b3/6 (Del. § 1550(b)(3),(6); § 1545): a live hand whose cards touch the discards, or that
the dealer mucks without objection, is dead, unless it was protected and can be reconstructed
completely: the dealer confirms (dead) or rejects (live). RR-HE-6 (RR Hold'em 6): a player whose
best hand is the board must declare it before discarding, or gives up all claim to the pot.
"""

from __future__ import annotations

from controller.cards import Card
from controller.game.hands import strength
from controller.rules.holds import raise_hold
from controller.rules.ids import Rule
from controller.table.context import Context
from controller.table.event_types import HoldEvidence
from controller.table.state import HandState, Ruling
from controller.table.streets import FULL_BOARD
from controller.table.tray import to_muck


def live_card_mucked(ctx: Context, hand: HandState, card: Card, seat: int) -> None:
    """A card of a live hand was read in the muck."""
    hole = hand.deal.dealt.get(seat, ())
    to_muck(hand, card)
    if seat in hand.showdown.plays_board:
        return  # declared first: the hand keeps its claim (RR-HE-6)
    if any(
        h.seat == seat and h.rule in (Rule.DE_1550B3_6, Rule.RR_HE_6) for h in hand.irregular.holds
    ):
        return  # its other card: already held
    board = hand.cards.board
    plays_the_board = (
        len(board) == FULL_BOARD and len(hole) == 2 and strength(hole, board) == strength((), board)
    )
    if plays_the_board:
        rule, reason = Rule.RR_HE_6, "discarded_without_board_claim"
    else:
        rule, reason = Rule.DE_1550B3_6, "mucked"
    raise_hold(
        ctx,
        hand,
        rule,
        Ruling.DEAD_HAND,
        reason,
        seat=seat,
        evidence=HoldEvidence(protected_reconstructible="reject to keep the hand live (§ 1545)"),
    )
