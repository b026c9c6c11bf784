"""The board: premature and over-dealt boards, broken board groups, cards after the end.

Burns are in ``controller/rules/burns.py``; a board card with no burn before it is held here
(BURN-MISS) and judged there. FLOP-PREM, TURN-PREM, RIVER-PREM, FLOP-COUNT (RR
Hold'em 2-4): a board card read while its betting round is still open, or a flop of four.
BOARD-GROUP (§ 1544): a shuffler board group of the wrong size is held before delivery.
BOARD-AFTER-END: a board card after the hand is decided does not count. STUB-DISORDER (TDA RP-4).
"""

from __future__ import annotations

from controller.cards import Card
from controller.rules.holds import raise_hold
from controller.rules.ids import Rule
from controller.table import flow
from controller.table.context import Context
from controller.table.event_types import (
    BoardCardSetAside,
    BoardDealt,
    BoardPremature,
    BoardRedealRequired,
    HoldEvidence,
    IrregularityDetected,
)
from controller.table.events import Severity
from controller.table.inputs import GroupDispensed, Purpose, StubDisorder
from controller.table.state import BOARD, HELD, SET_ASIDE, HandState, Hold, Phase, Ruling
from controller.table.streets import STREET_OF, STREETS, Street, following
from controller.table.tray import (
    BOARD_PURPOSES,
    draw,
    drop_finished,
    hold_back,
    move_pile,
    place,
    place_all,
    set_aside,
    take,
    unread,
)

_BOARD_HOLDS = frozenset({Rule.BURN_MISS, Rule.BOARD_GROUP})


def next_street(hand: HandState) -> Street | None:
    """The street the board is waiting for, if any."""
    return following(hand.street)


def street_cards(hand: HandState, street: Street) -> tuple[Card, ...]:
    """The board cards of ``street`` dealt so far."""
    deal = STREETS[street]
    return hand.cards.board[deal.start : deal.board_after]


def board_group_dispensed(ctx: Context, hand: HandState, ev: GroupDispensed) -> bool:
    """BOARD-GROUP: a burn or board group must have its size; a broken group is held."""
    size = len(ev.cards)
    with_burn = ctx.table.profile.board_group_includes_burn
    street = STREET_OF.get(ev.purpose)
    if hand.deal.reshuffle_due is not None and (street is not None or ev.purpose is Purpose.BURN):
        _dealt_before_reshuffle(ctx, hand, ev)
    if ev.purpose is Purpose.BURN:
        expected = 1
    elif street is not None:
        expected = STREETS[street].cards
        if (
            with_burn
            and street not in hand.board_rulings.no_burn
            and street not in hand.board_rulings.burn_for
        ):
            expected += 1
    else:
        return True
    if size == expected:
        return True
    raise_hold(
        ctx,
        hand,
        Rule.BOARD_GROUP,
        Ruling.REDEAL_BOARD,
        f"a {ev.purpose} group of {size} cards, {expected} expected",
        evidence=HoldEvidence(group=ev.group, count=size, expected=expected),
        group=ev.group,
        street=street or next_street(hand),
    )
    return True  # tracked in the tray until the ruling sends it back


def _dealt_before_reshuffle(ctx: Context, hand: HandState, ev: GroupDispensed) -> None:
    """A burn or board group dealt before the stub was reshuffled: its cards will not count."""
    rule = hand.deal.reshuffle_due
    assert rule is not None
    early = IrregularityDetected(
        "a board group dealt before the stub was reshuffled", rule=rule.value, group=ev.group
    )
    ctx.emit(
        early,
        (rule,),
        severity=Severity.WARN,
    )


def redeal_board_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    """BOARD-GROUP: the broken group does not make the street.

    A flop group (RR Hold'em 2-3), or any group none of whose cards reached the board: every card
    of it goes back into the stub, the burn already on the table stays there, the stub is
    reshuffled and the street is dealt again without a burn. A turn or river group whose cards
    reached the board: the first card turned is the street's card and any other is a premature
    card of the next street (RR Hold'em 4); its unread cards go back at the next reshuffle.
    """
    street = hold.street or next_street(hand) or Street.FLOP
    group = tuple(g for g in hand.deal.pending if g.group == hold.group)
    hand.edit_deal().pending = tuple(g for g in hand.deal.pending if g.group != hold.group)
    held = hand.cards.at(HELD)
    if street is Street.FLOP or not held:
        move_pile(hand, HELD, SET_ASIDE)
        hand.edit_deal().returning = (*hand.deal.returning, *group)
        back = len(held) + sum(unread(g) for g in group)
        hand.edit_board_rulings().no_burn = hand.board_rulings.no_burn | {street}
        too_many = len(held) > STREETS[street].cards
        rules = (hold.rule, Rule.FLOP_COUNT) if too_many else (hold.rule,)
        ctx.emit(BoardRedealRequired(street.label, held, back), rules)
        flow.reshuffle_stub(ctx, hand, hold.rule)
        return
    if group:  # cards nobody turned: they go back with the reshuffle after the turn's round
        hand.edit_deal().returning = (*hand.deal.returning, *group)
        if street is Street.TURN and hand.board_rulings.reshuffle_after is None:
            hand.edit_board_rulings().reshuffle_after = (Street.TURN, hold.rule)
            hand.edit_board_rulings().no_burn = hand.board_rulings.no_burn | {Street.RIVER}
    # the cards on the board are judged in the order they were turned (release_held_board)


# --------------------------------------------------------------------------- board cards


def board_card_arrived(ctx: Context, hand: HandState, card: Card) -> None:
    """A card never placed before was read on the board."""
    draw(hand, card, BOARD_PURPOSES)
    drop_finished(hand)
    judge_board_card(ctx, hand, card)


def judge_board_card(ctx: Context, hand: HandState, card: Card) -> None:
    """Decide what a card turned on the board is: the board, premature, held, or out of play."""
    if hand.live_count <= 1 or hand.phase in (Phase.SHOWDOWN, Phase.AWARD):
        set_aside(hand, card)
        irregular(
            ctx,
            "a board card after the hand was decided",
            Rule.BOARD_AFTER_END,
            card,
            severity=Severity.INFO,
            public=True,
        )
        return
    if hand.phase in (Phase.BETTING, Phase.DEALING) and not _round_is_over(hand):
        _premature(ctx, hand, card)
        return
    if any(h.rule in _BOARD_HOLDS for h in hand.irregular.holds):
        hold_back(hand, card)  # waits for the ruling on this street
        return
    street = next_street(hand)
    assert street is not None
    if hand.deal.reshuffle_due is not None:
        _before_reshuffle(ctx, hand, street, card)
        return
    if (
        street not in hand.board_rulings.no_burn
        and street not in hand.board_rulings.burn_for
        and not street_cards(hand, street)
    ):
        hold_back(hand, card)
        raise_hold(
            ctx,
            hand,
            Rule.BURN_MISS,
            Ruling.BURN_CORRECT,
            f"the {street.label} was dealt without a burn",
            card=card,
            evidence=HoldEvidence(street=street.label, card=card),
        )
        return
    place_on_board(ctx, hand, card)


def _round_is_over(hand: HandState) -> bool:
    return hand.chips.round is None or hand.chips.round.to_act is None


def _before_reshuffle(ctx: Context, hand: HandState, street: Street, card: Card) -> None:
    """A card turned before the stub was reshuffled is not the board: it goes back too."""
    rule = hand.deal.reshuffle_due
    assert rule is not None
    set_aside(hand, card)
    ctx.emit(
        BoardCardSetAside(street.label, card, "the stub was not reshuffled yet"),
        (rule,),
        severity=Severity.WARN,
    )
    flow.reshuffle_stub(ctx, hand, rule)


def place_on_board(ctx: Context, hand: HandState, card: Card) -> None:
    street = next_street(hand)
    if street is None:
        set_aside(hand, card)
        irregular(ctx, "a sixth board card", Rule.BOARD_AFTER_END, card, public=True)
        return
    place(hand, card, BOARD)
    board = hand.cards.board
    if len(board) < STREETS[street].board_after:
        return
    ctx.emit(BoardDealt(street.label, street_cards(hand, street), board))
    flow.open_street(ctx, hand)


def _premature(ctx: Context, hand: HandState, card: Card) -> None:
    """A board card while its round is open (FLOP-PREM, TURN-PREM, RIVER-PREM, FLOP-COUNT)."""
    rnd = hand.chips.round
    street = hand.street
    if (
        street is Street.FLOP
        and rnd is not None
        and rnd.actions == 0
        and Street.TURN not in hand.board_rulings.burn_for
        and Street.TURN not in hand.board_rulings.premature
    ):
        _flop_count(ctx, hand, card)
        return
    set_aside(hand, card)
    premature = following(street)
    rule = STREETS[premature].premature if premature is not None else None
    if premature is None or rule is None:
        irregular(ctx, "a board card after the river", Rule.BOARD_AFTER_END, card, public=True)
        return
    declared = hand.board_rulings.premature
    if premature not in declared:
        hand.edit_board_rulings().premature = declared | {premature}
        ctx.emit(
            BoardPremature(premature.label, card),
            (rule,),
            severity=Severity.WARN,
        )
    ctx.emit(BoardCardSetAside(premature.label, card), (rule,))
    if premature in declared:
        return
    if rule is Rule.FLOP_PREM:
        # RR Hold'em 3: the burn stays; after the betting the flop goes back into the stub and
        # the new flop comes without a burn
        ctx.emit(BoardRedealRequired("flop"), (rule,))
        after = Street.PREFLOP
        hand.edit_board_rulings().no_burn = hand.board_rulings.no_burn | {Street.FLOP}
    else:
        # RR Hold'em 4: the premature card is out of play for this round; after the turn round
        # it is reshuffled into the stub and the river comes without a burn
        after = Street.TURN
        hand.edit_board_rulings().no_burn = hand.board_rulings.no_burn | {Street.RIVER}
        if rule is Rule.TURN_PREM and Street.TURN in hand.board_rulings.burn_for:
            # its burn stays a burn, but the turn dealt after the round has a burn of its own
            hand.edit_board_rulings().burn_for = {
                s: c for s, c in hand.board_rulings.burn_for.items() if s is not Street.TURN
            }
    if hand.board_rulings.reshuffle_after is None:
        hand.edit_board_rulings().reshuffle_after = (after, rule)


def _flop_count(ctx: Context, hand: HandState, card: Card) -> None:
    """FLOP-COUNT: a fourth flop card: the flop is dealt again, even if the extra is known.

    RR Hold'em 2-3: the flop cards go back into the stub, the burn stays on the table, the stub
    is reshuffled and the new flop is dealt without a burn.
    """
    flop = (*move_pile(hand, BOARD, SET_ASIDE), card)
    set_aside(hand, card)
    hand.edit_chips().round = None
    hand.street = Street.PREFLOP
    flow.move(hand, flow.Move.FLOP_REDEALT)
    hand.edit_board_rulings().no_burn = hand.board_rulings.no_burn | {Street.FLOP}
    ctx.emit(
        BoardRedealRequired("flop", flop),
        (Rule.FLOP_COUNT,),
        severity=Severity.WARN,
    )
    flow.reshuffle_stub(ctx, hand, Rule.FLOP_COUNT)


def stub_disorder(ctx: Context, cmd: StubDisorder) -> None:
    """STUB-DISORDER: the stub was dropped: a new stub from stub cards only, reshuffled."""
    hand = ctx.hand
    flow.reshuffle_stub(ctx, hand, Rule.STUB_DISORDER)


def irregular(
    ctx: Context,
    reason: str,
    rule: Rule,
    card: Card,
    *,
    severity: Severity = Severity.WARN,
    public: bool = False,
) -> None:
    found = IrregularityDetected(
        reason,
        rule=rule.value,
        card=card if public else None,
        hidden_card=None if public else card,
    )
    ctx.emit(found, (rule,), severity=severity)


def release_held_board(ctx: Context, hand: HandState) -> None:
    """Once no burn or board ruling is pending, the cards held back are judged, in order.

    Each is judged as if it were turned now: the first ones complete the street, and one turned
    after the street was complete is premature (or a flop of four), as it was at the table.
    """
    while hand.cards.at(HELD) and not any(h.rule in _BOARD_HOLDS for h in hand.irregular.holds):
        card, *rest = hand.cards.at(HELD)
        for later in rest:  # off the table while the first is judged, then back after it
            take(hand, later)
        judge_board_card(ctx, hand, card)  # held again (first) if it raises a ruling of its own
        place_all(hand, rest, HELD)
