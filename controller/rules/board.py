"""Burns and the board: assigned burns, missing and extra burns, premature and over-dealt boards.

BURN-ASSIGN (RR Hold'em 1, 3, 4, 5): an exposed or extra card takes the place of the next burn; a
redealt flop or a street dealt after a stub reshuffle is dealt without a burn. BURN-MISS /
BURN-EXTRA (RRoP 5.6): a street dealt with no burn, or with two, is corrected before any action
on that street (the dealer confirms); after action the cards stand. DE-1547-SEP / DE-1547-RET
(Del. § 1547): a burn is kept apart from the muck until every card is dealt, and may go back on
top of the deck where the house allows it. FLOP-PREM, TURN-PREM, RIVER-PREM, FLOP-COUNT (RR
Hold'em 2-4): a board card read while its betting round is still open, or a flop of four.
BOARD-GROUP (§ 1544): a shuffler board group of the wrong size is held before delivery.
BOARD-AFTER-END: a board card after the hand is decided does not count. STUB-DISORDER (TDA RP-4).
"""

from __future__ import annotations

from controller.cards import Card
from controller.profiles import PreflopExposedBoard
from controller.rules.holds import AFTER_RULING, raise_hold, ruling
from controller.rules.ids import Rule
from controller.table import flow
from controller.table.betting import Street
from controller.table.context import Context
from controller.table.events import Severity
from controller.table.flow import BOARD_SIZE
from controller.table.inputs import GroupDispensed, Purpose, StubDisorder
from controller.table.state import HandState, Hold, Phase
from controller.table.tray import BOARD_PURPOSES, draw, drop_finished, remove

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


def assign_next_burn(ctx: Context, hand: HandState, card: Card, rule: Rule) -> None:
    """An exposed or extra card becomes the next burn (BURN-ASSIGN with the rule that made it)."""
    street = next_street(hand) or Street.FLOP
    hand.next_burn = card
    ctx.emit(
        "card.burn.assigned",
        {"street": street.label, "source": rule.value},
        (Rule.BURN_ASSIGN, rule),
        secret={"card": card},
    )


# --------------------------------------------------------------------------- groups


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


def burn_card_arrived(ctx: Context, hand: HandState, card: Card) -> None:
    """A card never placed before was read in the burn zone."""
    draw(hand, card, (Purpose.BURN, *BOARD_PURPOSES))
    drop_finished(hand)
    street = next_street(hand)
    if street is None or hand.phase not in (Phase.BOARD, Phase.BETTING):
        hand.burns = (*hand.burns, card)
        _irregular(ctx, "a burn card with no street left to deal", Rule.BURN_EXTRA, card)
        return
    if street in hand.no_burn or street in hand.burn_for or hand.next_burn is not None:
        hand.burns = (*hand.burns, card)
        raise_hold(
            ctx,
            hand,
            Rule.BURN_EXTRA,
            "burn_extra_correct",
            f"a second burn before the {street.label}",
            card=card,
            secret={"card": card},
        )
        return
    _take_burn(ctx, hand, street, card)


def _take_burn(ctx: Context, hand: HandState, street: Street, card: Card) -> None:
    hand.burns = (*hand.burns, card)
    hand.burn_for = {**hand.burn_for, street: card}
    ctx.emit(
        "card.burn.assigned", {"street": street.label}, (Rule.BURN_ASSIGN,), secret={"card": card}
    )


def designated_burn_arrived(ctx: Context, hand: HandState, card: Card) -> None:
    """The exposed or extra card reached the burn zone: it is the next street's burn."""
    street = next_street(hand) or Street.FLOP
    remove(hand, card)
    hand.next_burn = None
    hand.burns = (*hand.burns, card)
    hand.burn_for = {**hand.burn_for, street: card}


@ruling("burn_extra_correct")
def _burn_extra_correct(ctx: Context, hand: HandState, hold: Hold) -> None:
    """RRoP 5.6: the extra burn should have been the street's card: it goes to the board."""
    street = next_street(hand) or Street.FLOP
    ctx.emit(
        "irregularity.detected",
        {"rule": hold.rule.value, "reason": f"the extra burn is the {street.label}'s next card"},
        (hold.rule,),
        secret={"card": hold.card},
    )
    if hold.card is not None:
        remove(hand, hold.card)
        _place_on_board(ctx, hand, hold.card)


def burn_to_muck(ctx: Context, hand: HandState, card: Card) -> None:
    """DE-1547-SEP: a burn reached the muck before every card was dealt (a warning)."""
    remove(hand, card)
    hand.muck = (*hand.muck, card)
    if len(hand.board) < 5 and hand.live_count > 1 and hand.phase is not Phase.AWARD:
        _irregular(
            ctx,
            "a burn card went into the muck before the board was complete",
            Rule.DE_1547_SEP,
            card,
            severity=Severity.WARN,
        )


def burn_back_on_deck(ctx: Context, hand: HandState, card: Card) -> None:
    """DE-1547-RET: a burn went back on top of the deck while the deal was paused."""
    street = next((s for s, c in hand.burn_for.items() if c == card), None)
    if not ctx.table.profile.burn_allow_return_to_top:
        _irregular(
            ctx, "a burn card went back on the deck", Rule.DE_1547_RET, card, severity=Severity.WARN
        )
        return
    remove(hand, card)
    hand.stub += 1
    if street is not None:
        hand.burn_for = {s: c for s, c in hand.burn_for.items() if s is not street}
    ctx.emit(
        "irregularity.detected",
        {
            "rule": Rule.DE_1547_RET.value,
            "reason": "burn returned to the top of the deck",
            "severity": "info",
        },
        (Rule.DE_1547_RET,),
        secret={"card": card},
    )


# --------------------------------------------------------------------------- board cards


def board_card_arrived(ctx: Context, hand: HandState, card: Card) -> None:
    """A card never placed before was read on the board."""
    draw(hand, card, BOARD_PURPOSES)
    drop_finished(hand)
    if hand.live_count <= 1 or hand.phase in (Phase.SHOWDOWN, Phase.AWARD):
        hand.set_aside = (*hand.set_aside, card)
        _irregular(
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
    _place_on_board(ctx, hand, card)


def _round_is_over(hand: HandState) -> bool:
    return hand.round is None or hand.round.to_act is None


def _place_on_board(ctx: Context, hand: HandState, card: Card) -> None:
    street = next_street(hand)
    if street is None:
        hand.set_aside = (*hand.set_aside, card)
        _irregular(ctx, "a sixth board card", Rule.BOARD_AFTER_END, card, public=True)
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


@ruling("burn_correct")
def _burn_correct(ctx: Context, hand: HandState, hold: Hold) -> None:
    """RRoP 5.6: no burn before the street: the first card dealt is the burn.

    Before the flop a board card has been seen: with ``burn_error.preflop_exposed = reshuffle``
    every card of it goes back into the stub, which is reshuffled, and the flop is dealt again
    without a burn.
    """
    street = next_street(hand) or Street.FLOP
    held = hand.held_board
    if not held:
        return
    profile = ctx.table.profile
    if (
        street is Street.FLOP
        and profile.burn_error_preflop_exposed is PreflopExposedBoard.RESHUFFLE
    ):
        hand.held_board = ()
        hand.set_aside = (*hand.set_aside, *held)
        hand.no_burn = hand.no_burn | {Street.FLOP}
        ctx.emit("board.redeal.required", {"street": "flop", "cards": list(held)}, (hold.rule,))
        flow.reshuffle_stub(ctx, hand, hold.rule)
        return
    card = held[0]
    hand.held_board = held[1:]
    hand.burns = (*hand.burns, card)
    hand.burn_for = {**hand.burn_for, street: card}
    ctx.emit(
        "card.burn.assigned",
        {"street": street.label, "source": hold.rule.value, "card": card},
        (Rule.BURN_ASSIGN, hold.rule),
    )


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
        _irregular(ctx, "a board card after the river", Rule.BOARD_AFTER_END, card, public=True)
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


def _irregular(
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
        _place_on_board(ctx, hand, card)


AFTER_RULING.append(release_held_board)
