"""Misdeals, the misdeal cutoff, dead hands and void hands.

MD-CUTOFF (RRoP Misdeals 1; TDA 35D, 36): a misdeal can only be called before the cutoff: two
players after the blinds have acted (RRoP), or substantial action (TDA: two actions in turn with
chips put in by at least one, or any three actions; blinds excluded). After it the hand plays on.
MD-REDEAL (TDA 35C): a misdeal returns every chip and the next deal has the same button and the
same players. FOUL-DUP / FOUL-FOREIGN: a fouled deck voids the hand at any time before the award,
all chips returned, and takes the deck out of service.
"""

from __future__ import annotations

from controller.authority import Role
from controller.game import betting
from controller.profiles import MisdealCutoff, RulesProfile
from controller.rules.holds import raise_hold
from controller.rules.ids import Rule
from controller.table import flow
from controller.table.context import Context, RejectedError
from controller.table.event_types import (
    HandMisdeal,
    HandVoid,
    IrregularityDetected,
    SeatHandDead,
    seat_map,
)
from controller.table.events import Severity
from controller.table.inputs import Misdeal
from controller.table.state import DeckStatus, HandState, Hold, Phase, Redeal, Ruling


def cutoff_passed(hand: HandState, profile: RulesProfile) -> bool:
    """Whether enough action has happened that a misdeal can no longer be called."""
    actions = hand.chips.actions
    if profile.misdeal_cutoff is MisdealCutoff.RROP_TWO_ACTIONS:
        return len(actions) >= 2
    return len(actions) >= 3 or (len(actions) >= 2 and any(a.put_in for a in actions))


def cutoff_rule(profile: RulesProfile) -> Rule:
    """The rule that defines the cutoff in this profile."""
    if profile.misdeal_cutoff is MisdealCutoff.RROP_TWO_ACTIONS:
        return Rule.MD_CUTOFF
    return Rule.TDA_SA


def _return_chips(ctx: Context, hand: HandState) -> dict[int, int]:
    dead = hand.chips.dead
    returned = {
        s: c + dead.get(s, 0) for s, c in hand.chips.committed.items() if c + dead.get(s, 0)
    }
    ctx.table.stacks = {**ctx.table.stacks, **hand.start_stacks}
    return returned


def declare_misdeal(ctx: Context, hand: HandState, rule: Rule, reason: str) -> None:
    """Misdeal (MD-REDEAL): chips back, same button and players next, the deck reshuffled."""
    table = ctx.table
    returned = _return_chips(ctx, hand)
    ctx.emit(
        HandMisdeal(reason, rule.value, seat_map(returned), hand.button, hand.order),
        (rule, Rule.MD_REDEAL),
        severity=Severity.WARN,
    )
    table.redeal = Redeal(hand.hand_id, hand.button, hand.order, hand.chips.owed_posts)
    table.button = hand.button
    table.deck = DeckStatus()
    flow.end_hand(table, hand, completed=False)


def void_hand(ctx: Context, hand: HandState, rule: Rule, reason: str) -> None:
    """Void the hand (fouled deck): every chip back, the deck out of service."""
    table = ctx.table
    returned = _return_chips(ctx, hand)
    ctx.emit(
        HandVoid(reason, rule.value, seat_map(returned), hand.deal.shuffle_id),
        (rule,),
        severity=Severity.CRITICAL,
    )
    table.redeal = Redeal(hand.hand_id, hand.button, hand.order, hand.chips.owed_posts)
    table.button = hand.button
    table.deck = DeckStatus()
    flow.end_hand(table, hand, completed=False)


def misdeal_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    declare_misdeal(ctx, hand, hold.rule, hold.reason)


def void_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    void_hand(ctx, hand, hold.rule, hold.reason)


def cutoff_note(ctx: Context, hand: HandState, rule: Rule, reason: str) -> None:
    """A misdeal trigger after the cutoff: no misdeal; say so with the evidence."""
    ctx.emit(
        IrregularityDetected(
            reason, rule=rule.value, cutoff_passed=True, actions=len(hand.chips.actions)
        ),
        (rule, Rule.MD_CUTOFF),
        severity=Severity.WARN,
    )


def misdeal_unless_cutoff(
    ctx: Context, hand: HandState, rule: Rule, reason: str, *, seat: int | None = None
) -> None:
    """A misdeal before the cutoff; after it, the floor decides (held, nothing changes)."""
    if not cutoff_passed(hand, ctx.table.profile):
        ctx.emit(
            IrregularityDetected(reason, rule=rule.value, seat=seat),
            (rule,),
            severity=Severity.WARN,
        )
        declare_misdeal(ctx, hand, rule, reason)
        return
    cutoff_note(ctx, hand, rule, reason)
    raise_hold(
        ctx, hand, rule, Ruling.CONTINUE, f"{reason}; after the cutoff the floor decides", seat=seat
    )


def dead_hand_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    assert hold.seat is not None
    kill_hand(ctx, hand, hold.seat, hold.rule, hold.reason)


def kill_hand(ctx: Context, hand: HandState, seat: int, rule: Rule, reason: str) -> None:
    """The seat's hand is dead: it can win nothing (its chips stay in the pot)."""
    if seat in hand.chips.folded:
        return
    hand.edit_irregular().dead = {**hand.irregular.dead, seat: reason}
    hand.edit_chips().folded = hand.chips.folded | {seat}
    if hand.phase is Phase.SHOWDOWN:  # a hand given up at showdown, as a muck
        hand.edit_showdown().declarations = (*hand.showdown.declarations, (seat, False))
    ctx.emit(SeatHandDead(seat, reason), (rule,), severity=Severity.WARN)
    if hand.chips.round is not None and seat in hand.chips.round.queue:
        hand.edit_chips().round = betting.drop_seat(hand.chips.round, seat)
    flow.after_hand_shrank(ctx, hand)


def called(ctx: Context, cmd: Misdeal) -> None:
    """The dealer calls a misdeal: only before the cutoff (MD-CUTOFF), then MD-REDEAL.

    After the cutoff only the floor may (a command signed in the floor role, docs/security.md).
    """
    current = ctx.hand
    if cutoff_passed(current, ctx.table.profile):
        floor = cmd.authority is not None and cmd.authority.role is Role.FLOOR
        if not floor:
            raise RejectedError(
                "the misdeal cutoff has passed: the hand plays on "
                "(the floor may call it, or override MD-CUTOFF)",
                (Rule.MD_CUTOFF,),
            )
        declare_misdeal(ctx, current, Rule.MD_CUTOFF, cmd.reason or "called by the floor")
        return
    declare_misdeal(ctx, current, Rule.MD_REDEAL, cmd.reason or "called by the dealer")
