"""Holds: rulings that wait for the dealer or the floor.

A reader that misses a card looks exactly like a card that is not there, so every count-based
ruling a reader fault could cause is not made at once: the hand is held (``hand.hold`` with
``needs_confirm`` and the evidence), and the ruling becomes final only on ``confirm``. ``reject``
drops it; ``floor_override`` replaces it with the floor's decision. Each is journaled with the
rule ID. While a hold is pending the dealer's other commands are refused; the devices keep
reporting, so nothing they see is lost.

What a ruling does is a function of the rule module that owns it; the engine registers each
under its :class:`~controller.table.state.Ruling` beside the handler table.
"""

from __future__ import annotations

from controller.authority import Role
from controller.cards import Card
from controller.rules.ids import Rule
from controller.table.context import Context, RejectedError
from controller.table.event_types import (
    NO_EVIDENCE,
    HandHold,
    HandResume,
    HoldEvidence,
)
from controller.table.event_types import (
    FloorOverride as FloorOverridden,
)
from controller.table.events import Severity
from controller.table.inputs import Confirm, FloorOverride, RaiseHold, Reject
from controller.table.state import HandState, Hold, Phase, Ruling
from controller.table.streets import Street

#: Decisions the floor may give where no hold is pending.
_STANDALONE = {Ruling.MISDEAL, Ruling.VOID}


def held(hand: HandState) -> RejectedError | None:
    """The refusal of a dealer command while a hold is pending (the engine's gate; the dealer's
    menu asks it too, so both give the same reason), or None."""
    if not hand.irregular.holds:
        return None
    pending = hand.irregular.holds[0]
    return RejectedError(
        f"the hand is held ({pending.id}, {pending.rule}: {pending.reason}): "
        "confirm, reject or override it first"
    )


def go_on(ctx: Context, hand: HandState, hold: Hold) -> None:
    """CONTINUE: the hand goes on as it is."""


def raise_hold(
    ctx: Context,
    hand: HandState,
    rule: Rule,
    ruling: Ruling,
    reason: str,
    *,
    seat: int | None = None,
    card: Card | None = None,
    evidence: HoldEvidence = NO_EVIDENCE,
    group: int | None = None,
    street: Street | None = None,
    needs_confirm: bool = True,
) -> Hold:
    """Hold the hand: ``ruling_name`` applies when the dealer confirms.

    ``needs_confirm=False``: a house rule decides it at once, and the caller resolves it.
    """
    hand.edit_irregular().hold_count += 1
    hold_id = f"{hand.hand_id}-h{hand.irregular.hold_count}"
    hold = Hold(hold_id, rule, ruling, reason, seat, card, group, street)
    hand.edit_irregular().holds = (*hand.irregular.holds, hold)
    held = HandHold(hold.id, rule.value, reason, ruling.value, seat, evidence)
    ctx.emit(held, (rule,), severity=Severity.HOLD, needs_confirm=needs_confirm)
    return hold


def _pending(hand: HandState, hold_id: str | None) -> Hold:
    if not hand.irregular.holds:
        raise RejectedError("no hold is pending")
    if hold_id is None:
        return hand.irregular.holds[0]
    for hold in hand.irregular.holds:
        if hold.id == hold_id:
            return hold
    pending = ", ".join(h.id for h in hand.irregular.holds)
    raise RejectedError(f"no pending hold {hold_id!r} (pending: {pending})")


def resolve(ctx: Context, hand: HandState, hold: Hold, decision: Ruling, how: str) -> None:
    """Apply ``decision`` to ``hold`` and resume the hand if nothing else holds it."""
    hand.edit_irregular().holds = tuple(h for h in hand.irregular.holds if h.id != hold.id)
    ctx.rulings.decide[decision](ctx, hand, hold)
    if ctx.table.hand is hand:
        for after in ctx.rulings.after:
            after(ctx, hand)
    if ctx.table.hand is hand and not hand.irregular.holds:
        ctx.emit(HandResume(hold.id, hold.rule.value, decision, how), (hold.rule,))


def _may_rule(ctx: Context, hold: Hold, verb: str) -> None:
    """A ruling is the floor's; a dealer's only for the rules the house names (docs/security.md)."""
    authority = ctx.authority
    if authority is None or authority.role is Role.FLOOR:
        return
    if authority.role is Role.DEALER and hold.rule.value in ctx.table.profile.dealer_may_confirm:
        return
    raise RejectedError(
        f"{hold.rule} is the floor's ruling: a {authority.role} may not {verb} it "
        "(dealer_may_confirm names the holds a dealer may)",
        (hold.rule,),
    )


def confirm(ctx: Context, cmd: Confirm) -> None:
    """The dealer confirms the pending ruling."""
    hand = ctx.hand
    hold = _pending(hand, cmd.hold)
    _may_rule(ctx, hold, "confirm")
    resolve(ctx, hand, hold, hold.ruling, "confirm")


def reject(ctx: Context, cmd: Reject) -> None:
    """The dealer rejects the pending ruling: it does not apply (a reader fault, say)."""
    hand = ctx.hand
    hold = _pending(hand, cmd.hold)
    _may_rule(ctx, hold, "reject")
    settle = ctx.rulings.on_reject.get(hold.ruling)
    if settle is not None:
        settle(ctx, hand, hold)
    resolve(ctx, hand, hold, Ruling.CONTINUE, "reject")


def floor_override(ctx: Context, cmd: FloorOverride) -> None:
    """The floor decides differently; journaled with the rule ID."""
    if ctx.authority is not None and ctx.authority.role is not Role.FLOOR:
        raise RejectedError(f"only the floor overrides a ruling, not a {ctx.authority.role}")
    try:
        rule = Rule(cmd.rule)
    except ValueError:
        raise RejectedError(f"{cmd.rule!r} is not a rule ID of the catalogue") from None
    hand = ctx.table.hand
    hold = (
        next((h for h in hand.irregular.holds if h.rule is rule), None)
        if hand is not None
        else None
    )
    try:
        decision = Ruling(cmd.decision)
    except ValueError:
        if hold is not None:
            known = ", ".join(sorted(Ruling))
            raise RejectedError(f"unknown decision {cmd.decision!r} (one of {known})") from None
        # a decision outside the controller's rulings is journaled and changes nothing
        ctx.emit(FloorOverridden(rule.value, cmd.decision, None), (rule,))
        return
    if hand is not None and hold is not None:
        check = ctx.rulings.overrides.get(rule)
        # the rule's own check first (its words), then what any hold allows
        refusal = (check(hand, hold, decision) if check is not None else None) or override_refusal(
            hand, hold, decision
        )
        if refusal is not None:  # refused before anything is journaled: the hold stays pending
            raise RejectedError(refusal, (rule,))
    ctx.emit(
        FloorOverridden(rule.value, decision.value, hold.id if hold else None),
        (rule,),
    )
    if hold is not None:
        assert hand is not None
        resolve(ctx, hand, hold, decision, "floor")
    elif hand is not None and decision in _STANDALONE:
        ctx.rulings.decide[decision](ctx, hand, Hold("", rule, decision, "floor decision"))


#: What the floor may decide on any hold, whatever the hold carries.
_ANY_HOLD = {Ruling.CONTINUE, Ruling.MISDEAL, Ruling.VOID}


def override_refusal(hand: HandState, hold: Hold, decision: Ruling) -> str | None:
    """Why the floor's ``decision`` cannot resolve ``hold`` now (None: it can).

    The floor may decide what the hold's own rule proposed (the hold carries what that ruling
    needs: its card, its board group, its seat), go on, misdeal or void; a seat's hand dead or
    its claim upheld where the hold names the seat; the award pushed where one is proposed.
    Anything else would act on what the hold does not say (a surveillance hold, a floor call,
    a hold of another kind), and is refused with the reason before anything is journaled.
    """
    if decision is hold.ruling or decision in _ANY_HOLD:
        return None
    if decision in (Ruling.DEAD_HAND, Ruling.CLAIM_UPHELD):
        if hold.seat is None:
            return f"{decision} needs the seat, and this {hold.rule} hold names none"
        if hold.seat not in hand.order:
            return f"seat {hold.seat} is not in hand {hand.hand_id}"
        if decision is Ruling.CLAIM_UPHELD and hand.phase not in (Phase.SHOWDOWN, Phase.AWARD):
            return "a claim is upheld at the showdown or the award, not before"
        return None
    if decision is Ruling.AWARD_AS_PROPOSED:
        if hand.phase is not Phase.AWARD or hand.showdown.proposal is None:
            return "there is no proposed award to push"
        return None
    return f"{decision} needs what a {hold.ruling} hold of {hold.rule} does not carry"


def raise_hold_request(ctx: Context, cmd: RaiseHold) -> None:
    """Surveillance (or the floor) holds the hand for the floor's ruling on ``rule``.

    Confirming it changes nothing by itself: the floor rules with ``floor_override``. Who may raise
    a hold is in docs/security.md.
    """
    hand = ctx.hand
    try:
        rule = Rule(cmd.rule)
    except ValueError:
        raise RejectedError(f"{cmd.rule!r} is not a rule ID of the catalogue") from None
    if cmd.seat is not None and cmd.seat not in hand.order:
        raise RejectedError(f"seat {cmd.seat} is not in hand {hand.hand_id}")
    who = ctx.authority.role.value if ctx.authority is not None else "surveillance"
    raise_hold(ctx, hand, rule, Ruling.CONTINUE, cmd.reason or f"held by {who}", seat=cmd.seat)
