"""The board: premature and over-dealt boards, broken board groups, cards after the end.

Burns are in ``controller/rules/burns.py``; a board card with no burn before it is held here
(BURN-MISS) and judged there. FLOP-PREM, TURN-PREM, RIVER-PREM, FLOP-COUNT (RR
Hold'em 2-4): a board card read while its betting round is still open, or a flop of four.
BOARD-GROUP (§ 1544): a shuffler board group of the wrong size is held before delivery.
BOARD-AFTER-END: a board card after the hand is decided does not count. STUB-DISORDER (TDA RP-4).
"""

from __future__ import annotations

from controller.cards import Card
from controller.rules.holds import AFTER_RULING, raise_hold, ruling
from controller.rules.ids import Rule
from controller.table import flow
from controller.table.betting import Street
from controller.table.context import Context
from controller.table.events import Severity
from controller.table.flow import BOARD_SIZE
from controller.table.inputs import GroupDispensed, Purpose, StubDisorder
from controller.table.state import HandState, Hold, Phase
from controller.table.tray import BOARD_PURPOSES, draw, drop_finished

_STREET_SIZE = {Street.FLOP: 3, Street.TURN: 1, Street.RIVER: 1}
_BOARD_HOLDS = frozenset({Rule.BURN_MISS, Rule.BOARD_GROUP})
_PURPOSE_STREET = {
    Purpose.FLOP: Street.FLOP,
    Purpose.TURN: Street.TURN,
    Purpose.RIVER: Street.RIVER,
}


def next_street(hand: HandState) -> Street | None:
    """The street the board is waiting for, if any."""
    return Street(hand.street + 1) if hand.street < Street.RIVER else None


def street_cards(hand: HandState, street: Street) -> tuple[Card, ...]:
    """The board cards of ``street`` dealt so far."""
    start = {Street.FLOP: 0, Street.TURN: 3, Street.RIVER: 4}[street]
    return hand.board[start : BOARD_SIZE[street]]


def board_group_dispensed(ctx: Context, hand: HandState, ev: GroupDispensed) -> bool:
    """BOARD-GROUP: a burn or board group must have its size; a broken group is held."""
    size = len(ev.cards)
    with_burn = ctx.table.profile.board_group_includes_burn
    if ev.purpose is Purpose.BURN:
        expected = 1
    elif ev.purpose in _PURPOSE_STREET:
        expected = _STREET_SIZE[_PURPOSE_STREET[ev.purpose]] + (1 if with_burn else 0)
        if _PURPOSE_STREET[ev.purpose] in hand.no_burn:
            expected = _STREET_SIZE[_PURPOSE_STREET[ev.purpose]]
    else:
        return True
    if size == expected:
        return True
    raise_hold(
        ctx,
        hand,
        Rule.BOARD_GROUP,
        "redeal_board",
        f"a {ev.purpose} group of {size} cards, {expected} expected",
        evidence={"group": ev.group, "count": size, "expected": expected},
    )
    return True  # tracked in the tray until the ruling sends it back


@ruling("redeal_board")
def _redeal_board(ctx: Context, hand: HandState, hold: Hold) -> None:
    """The broken group goes back into the stub, which is reshuffled; the street is dealt again."""
    back = sum(
        g.size - len(g.read) for g in hand.pending if g.purpose in (*BOARD_PURPOSES, Purpose.BURN)
    )
    hand.pending = tuple(
        g for g in hand.pending if g.purpose not in (*BOARD_PURPOSES, Purpose.BURN)
    )
    hand.tray -= back
    hand.stub += back
    street = next_street(hand) or Street.FLOP
    ctx.emit("board.redeal.required", {"street": street.label, "returned": back}, (hold.rule,))
    flow.reshuffle_stub(ctx, hand, hold.rule)


# --------------------------------------------------------------------------- burns


def board_card_arrived(ctx: Context, hand: HandState, card: Card) -> None:
    """A card never placed before was read on the board."""
    draw(hand, card, BOARD_PURPOSES)
    drop_finished(hand)
    if hand.live_count <= 1 or hand.phase in (Phase.SHOWDOWN, Phase.AWARD):
        hand.set_aside = (*hand.set_aside, card)
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
    if any(h.rule in _BOARD_HOLDS for h in hand.holds):
        hand.held_board = (*hand.held_board, card)  # waits for the ruling on this street
        return
    street = next_street(hand)
    assert street is not None
    if (
        street not in hand.no_burn
        and street not in hand.burn_for
        and not street_cards(hand, street)
    ):
        hand.held_board = (*hand.held_board, card)
        raise_hold(
            ctx,
            hand,
            Rule.BURN_MISS,
            "burn_correct",
            f"the {street.label} was dealt without a burn",
            card=card,
            evidence={"street": street.label, "card": card},
        )
        return
    place_on_board(ctx, hand, card)


def _round_is_over(hand: HandState) -> bool:
    return hand.round is None or hand.round.to_act is None


def place_on_board(ctx: Context, hand: HandState, card: Card) -> None:
    street = next_street(hand)
    if street is None:
        hand.set_aside = (*hand.set_aside, card)
        irregular(ctx, "a sixth board card", Rule.BOARD_AFTER_END, card, public=True)
        return
    hand.board = (*hand.board, card)
    if len(hand.board) < BOARD_SIZE[street]:
        return
    ctx.emit(
        "board.dealt",
        {
            "street": street.label,
            "cards": list(street_cards(hand, street)),
            "board": list(hand.board),
        },
    )
    flow.open_street(ctx, hand)


def _premature(ctx: Context, hand: HandState, card: Card) -> None:
    """A board card while its round is open (FLOP-PREM, TURN-PREM, RIVER-PREM, FLOP-COUNT)."""
    rnd = hand.round
    street = hand.street
    if (
        street is Street.FLOP
        and rnd is not None
        and rnd.actions == 0
        and Street.TURN not in hand.burn_for
    ):
        _flop_count(ctx, hand, card)
        return
    hand.set_aside = (*hand.set_aside, card)
    if street is Street.PREFLOP:
        rule, premature = Rule.FLOP_PREM, Street.FLOP
    elif street is Street.FLOP:
        rule, premature = Rule.TURN_PREM, Street.TURN
    elif street is Street.TURN:
        rule, premature = Rule.RIVER_PREM, Street.RIVER
    else:
        irregular(ctx, "a board card after the river", Rule.BOARD_AFTER_END, card, public=True)
        return
    first = hand.reshuffle_after is None
    if first:
        ctx.emit(
            "board.premature",
            {"street": premature.label, "card": card},
            (rule,),
            severity=Severity.WARN,
        )
    ctx.emit("board.card.set_aside", {"street": premature.label, "card": card}, (rule,))
    if not first:
        return
    if rule is Rule.FLOP_PREM:
        # RR Hold'em 3: the burn stays; after the betting the flop goes back into the stub
        ctx.emit("board.redeal.required", {"street": "flop"}, (rule,))
        hand.reshuffle_after = (Street.PREFLOP, rule)
        hand.no_burn = hand.no_burn | {Street.FLOP}
    elif rule is Rule.TURN_PREM:
        # RR Hold'em 4: the would-be river is burned and turned as the turn; after the turn
        # round the set-aside card is reshuffled in and the river comes without a burn
        hand.reshuffle_after = (Street.TURN, rule)
        hand.no_burn = hand.no_burn | {Street.RIVER}
    else:
        hand.reshuffle_after = (Street.TURN, rule)
        hand.no_burn = hand.no_burn | {Street.RIVER}


def _flop_count(ctx: Context, hand: HandState, card: Card) -> None:
    """FLOP-COUNT: a fourth flop card: the flop is dealt again, even if the extra is known."""
    flop = (*hand.board, card)
    hand.board = ()
    hand.stub += len(flop)
    hand.round = None
    hand.street = Street.PREFLOP
    hand.phase = Phase.BOARD
    hand.no_burn = hand.no_burn | {Street.FLOP}
    ctx.emit(
        "board.redeal.required",
        {"street": "flop", "cards": list(flop)},
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
    data: dict[str, object] = {"rule": rule.value, "reason": reason}
    if public:
        data["card"] = card
    ctx.emit(
        "irregularity.detected",
        data,
        (rule,),
        severity=severity,
        secret=None if public else {"card": card},
    )


def release_held_board(ctx: Context, hand: HandState) -> None:
    """Once no burn or board ruling is pending, the board cards held back take their places."""
    if not hand.held_board or any(h.rule in _BOARD_HOLDS for h in hand.holds):
        return
    held = hand.held_board
    hand.held_board = ()
    for card in held:
        place_on_board(ctx, hand, card)


AFTER_RULING.append(release_held_board)
