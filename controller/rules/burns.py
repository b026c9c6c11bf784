"""Burn cards: the burn for each street, missing and extra burns, the burn and the muck.

BURN-ASSIGN (RR Hold'em 1, 3, 4, 5): an exposed or extra card takes the place of the next burn; a
redealt flop or a street dealt after a stub reshuffle is dealt without a burn. BURN-MISS /
BURN-EXTRA (RRoP 5.6): a street dealt with no burn, or with two, is corrected before any action
on that street (the dealer confirms); after action the cards stand. DE-1547-SEP / DE-1547-RET
(Del. § 1547): a burn is kept apart from the muck until every card is dealt, and may go back on
top of the deck where the house allows it.
"""

from __future__ import annotations

from controller.cards import Card
from controller.profiles import PreflopExposedBoard
from controller.rules import board
from controller.rules.board import next_street
from controller.rules.holds import raise_hold
from controller.rules.ids import Rule
from controller.table import flow
from controller.table.context import Context
from controller.table.event_types import (
    BoardRedealRequired,
    CardBurnAssigned,
    HoldEvidence,
    IrregularityDetected,
)
from controller.table.events import Severity
from controller.table.inputs import Purpose
from controller.table.state import HELD, SET_ASIDE, HandState, Hold, Phase, Ruling
from controller.table.streets import FULL_BOARD, STREETS, Street
from controller.table.tray import (
    BOARD_PURPOSES,
    draw,
    drop_finished,
    move_pile,
    take,
    to_burns,
    to_muck,
)


def assign_next_burn(ctx: Context, hand: HandState, card: Card, rule: Rule) -> None:
    """An exposed or extra card becomes the next burn (BURN-ASSIGN with the rule that made it)."""
    street = next_street(hand) or Street.FLOP
    hand.edit_board_rulings().next_burn = card
    ctx.emit(CardBurnAssigned(street.label, rule.value, hidden_card=card), (Rule.BURN_ASSIGN, rule))


# --------------------------------------------------------------------------- groups


def burn_card_arrived(ctx: Context, hand: HandState, card: Card) -> None:
    """A card never placed before was read in the burn zone."""
    draw(hand, card, (Purpose.BURN, *BOARD_PURPOSES))
    drop_finished(hand)
    street = next_street(hand)
    if street is None or hand.phase not in (Phase.BOARD, Phase.BETTING):
        to_burns(hand, card)
        board.irregular(ctx, "a burn card with no street left to deal", Rule.BURN_EXTRA, card)
        return
    rulings = hand.board_rulings
    if street in rulings.no_burn or street in rulings.burn_for or rulings.next_burn is not None:
        to_burns(hand, card)
        raise_hold(
            ctx,
            hand,
            Rule.BURN_EXTRA,
            Ruling.BURN_EXTRA_CORRECT,
            f"a second burn before the {street.label}",
            card=card,
            evidence=HoldEvidence(hidden_card=card),
        )
        return
    _take_burn(ctx, hand, street, card)


def _take_burn(ctx: Context, hand: HandState, street: Street, card: Card) -> None:
    to_burns(hand, card)
    hand.edit_board_rulings().burn_for = {**hand.board_rulings.burn_for, street: card}
    ctx.emit(CardBurnAssigned(street.label, hidden_card=card), (Rule.BURN_ASSIGN,))


def designated_burn_arrived(ctx: Context, hand: HandState, card: Card) -> None:
    """The exposed or extra card reached the burn zone: it is the next street's burn."""
    street = next_street(hand) or Street.FLOP
    to_burns(hand, card)
    rulings = hand.edit_board_rulings()
    rulings.next_burn = None
    rulings.burn_for = {**rulings.burn_for, street: card}


def burn_extra_correct_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    """RRoP 5.6: the extra burn should have been the street's card: it goes to the board."""
    street = next_street(hand) or Street.FLOP
    corrected = IrregularityDetected(
        f"the extra burn is the {street.label}'s next card",
        rule=hold.rule.value,
        hidden_card=hold.card,
    )
    ctx.emit(corrected, (hold.rule,))
    if hold.card is not None:
        board.place_on_board(ctx, hand, hold.card)  # from the burns to the board


def burn_to_muck(ctx: Context, hand: HandState, card: Card) -> None:
    """DE-1547-SEP: a burn reached the muck before every card was dealt (a warning)."""
    to_muck(hand, card)
    if len(hand.cards.board) < FULL_BOARD and hand.live_count > 1 and hand.phase is not Phase.AWARD:
        board.irregular(
            ctx,
            "a burn card went into the muck before the board was complete",
            Rule.DE_1547_SEP,
            card,
            severity=Severity.WARN,
        )


def burn_back_on_deck(ctx: Context, hand: HandState, card: Card) -> None:
    """DE-1547-RET: a burn went back on top of the deck while the deal was paused."""
    street = next((s for s, c in hand.board_rulings.burn_for.items() if c == card), None)
    if not ctx.table.profile.burn_allow_return_to_top:
        board.irregular(
            ctx, "a burn card went back on the deck", Rule.DE_1547_RET, card, severity=Severity.WARN
        )
        return
    take(hand, card)
    hand.edit_deal().stub += 1
    if street is not None:
        rulings = hand.edit_board_rulings()
        rulings.burn_for = {s: c for s, c in rulings.burn_for.items() if s is not street}
    returned = IrregularityDetected(
        "burn returned to the top of the deck",
        rule=Rule.DE_1547_RET.value,
        severity="info",
        hidden_card=card,
    )
    ctx.emit(returned, (Rule.DE_1547_RET,))


# --------------------------------------------------------------------------- board cards


def burn_was_there(ctx: Context, hand: HandState, hold: Hold) -> None:
    """BURN-MISS rejected: the burn was dealt and not read; the street stands without one."""
    street = next_street(hand) or Street.FLOP
    hand.edit_board_rulings().no_burn = hand.board_rulings.no_burn | {street}


def burn_correct_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    """RRoP 5.6: no burn before the street: the first card dealt is the burn.

    Before the flop a board card has been seen: with ``burn_error.preflop_exposed = reshuffle``
    every card of it goes back into the stub, which is reshuffled, and the flop is dealt again
    without a burn. Four or more cards face up for the flop are a flop with too many cards
    whatever the burn (FLOP-COUNT, RR Hold'em 2): dealt again the same way.
    """
    street = next_street(hand) or Street.FLOP
    held = hand.cards.at(HELD)
    if not held:
        return
    profile = ctx.table.profile
    too_many = len(held) > STREETS[Street.FLOP].cards
    if street is Street.FLOP and (
        too_many or profile.burn_error_preflop_exposed is PreflopExposedBoard.RESHUFFLE
    ):
        move_pile(hand, HELD, SET_ASIDE)
        hand.edit_board_rulings().no_burn = hand.board_rulings.no_burn | {Street.FLOP}
        rules = (hold.rule, Rule.FLOP_COUNT) if too_many else (hold.rule,)
        ctx.emit(BoardRedealRequired("flop", held), rules)
        flow.reshuffle_stub(ctx, hand, rules[-1])
        return
    card = held[0]
    to_burns(hand, card)
    rulings = hand.edit_board_rulings()
    rulings.burn_for = {**rulings.burn_for, street: card}
    ctx.emit(
        CardBurnAssigned(street.label, hold.rule.value, card=card), (Rule.BURN_ASSIGN, hold.rule)
    )
