"""FLOOR-CALL: the dealer calls the floor to the table, and the hand waits for the floor.

Once the floor is called the game stops for that decision: the floorperson's decision is final
(Robert's Rules of Poker, "Decision-making"; TDA rule 1, "Floor Decisions"), and a pot in dispute
may be held while it is pending (RRoP, "Decision-making" 7). So ``call_floor`` in a hand with no
hold pending holds the hand (``hand.hold`` citing FLOOR-CALL, ruling ``continue``): the engine's
gate refuses the dealer's commands, the award's push included, until the floor rules. Confirm:
the hand goes on as it is; reject: the same, the call dismissed; ``floor_override``: the floor's
decision (:data:`OVERRIDES`). The hold is the floor's: a dealer rules on it only where the house
names FLOOR-CALL in ``dealer_may_confirm``.

With a hold pending the call is about that hold (it holds the hand already); between hands it
holds nothing. Either way ``floor.called`` is journaled, naming the hold, for the pit's alarm and
its chime (docs/console.md).
"""

from __future__ import annotations

from controller.rules.holds import raise_hold
from controller.rules.ids import Rule
from controller.table.context import Context, RejectedError
from controller.table.event_types import FloorCalled
from controller.table.events import Severity
from controller.table.inputs import CallFloor
from controller.table.state import HandState, Hold, Ruling

#: The most characters of the dealer's own words an event keeps.
MAX_REASON = 200
#: What the dealer's call says when the dealer gave no words.
DEFAULT_REASON = "the dealer calls the floor"


def call_floor(ctx: Context, cmd: CallFloor) -> None:
    """FLOOR-CALL: journal the call; in a hand with no hold pending, hold the hand first."""
    table = ctx.table
    hand = table.hand
    pending = hand.irregular.holds if hand is not None else ()
    hold = pending[0] if pending else None
    if cmd.hold is not None:
        hold = next((h for h in pending if h.id == cmd.hold), None)
        if hold is None:
            listed = ", ".join(h.id for h in pending) or "none"
            raise RejectedError(f"no pending hold {_cut(cmd.hold, 40)!r} (pending: {listed})")
    seats = hand.order if hand is not None else tuple(table.stacks)
    if cmd.seat is not None and cmd.seat not in seats:
        raise RejectedError(f"seat {cmd.seat} is not at the table")
    reason = _cut(cmd.reason.strip(), MAX_REASON) or DEFAULT_REASON
    if hand is not None and hold is None:
        hold = raise_hold(ctx, hand, Rule.FLOOR_CALL, Ruling.CONTINUE, reason, seat=cmd.seat)
    seat = cmd.seat if cmd.seat is not None else (hold.seat if hold is not None else None)
    called = FloorCalled(
        reason,
        hold.id if hold is not None else None,
        hold.rule.value if hold is not None else None,
        seat,
    )
    ctx.emit(called, (hold.rule,) if hold is not None else (), severity=Severity.WARN)


#: What the floor may decide instead on a FLOOR-CALL hold: the rulings that need nothing the
#: call did not give (a card, a board group, a burn belong to the holds of their own rules).
OVERRIDES = (
    Ruling.CONTINUE,
    Ruling.MISDEAL,
    Ruling.VOID,
    Ruling.DEAD_HAND,
    Ruling.CLAIM_UPHELD,
    Ruling.AWARD_AS_PROPOSED,
)


def override_refusal(hand: HandState, hold: Hold, decision: Ruling) -> str | None:
    """Why the floor's ``decision`` cannot apply to the FLOOR-CALL ``hold`` (None: it can, as
    far as the call goes: :func:`controller.rules.holds.override_refusal` checks the rest)."""
    if decision not in OVERRIDES:
        allowed = ", ".join(OVERRIDES)
        return f"a floor call's hold takes one of {allowed}, not {decision}"
    if decision in (Ruling.DEAD_HAND, Ruling.CLAIM_UPHELD) and hold.seat is None:
        return f"{decision} needs the seat: call the floor for the seat it concerns"
    return None


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (the event's bound)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
