"""A floor override of any hold, with any decision, never stops the table: it resolves the hold,
or it is refused with the reason and the hold stays (controller/rules/holds.py,
``override_refusal``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.authority import Authority, Role
from controller.table.engine import apply
from controller.table.inputs import FloorOverride, RaiseHold
from controller.table.state import Ruling, TableState
from tests.core.test_floor_call import FLOOR, TS, at_the_award, betting

SURVEILLANCE = Authority("Sue", Role.SURVEILLANCE, "sue")
BETTING = betting()
AWARD = at_the_award()


@given(
    at=st.sampled_from(["betting", "award"]),
    rule=st.sampled_from(["SEAT-COUNT", "EXP-OTHER", "RR-SD-4", "FLOOR-CALL"]),
    seat=st.sampled_from([None, 1, 2, 3]),
    decision=st.sampled_from(list(Ruling)),
)
def test_any_decision_on_any_hold_resolves_it_or_is_refused_and_the_hold_stays(
    at: str, rule: str, seat: int | None, decision: Ruling
) -> None:
    state: TableState = BETTING if at == "betting" else AWARD
    held, _ = apply(state, RaiseHold(TS, rule, "look at seat", seat, authority=SURVEILLANCE))
    assert held.hand is not None
    (hold,) = held.hand.irregular.holds
    after, events = apply(held, FloorOverride(TS, rule, decision.value, authority=FLOOR))
    kinds = [e.type for e in events]
    if kinds == ["command.rejected"]:
        assert after is held  # nothing changed: the hold is still the floor's to rule
        assert events[0].data["reason"]
    else:
        assert kinds[0] == "floor.override"
        pending = after.hand.irregular.holds if after.hand is not None else ()
        assert hold not in pending


def test_decisions_the_hold_cannot_carry_are_refused_with_the_reason() -> None:
    held, _ = apply(BETTING, RaiseHold(TS, "SEAT-COUNT", "look", authority=SURVEILLANCE))
    for decision, reason in (
        ("award_as_proposed", "there is no proposed award to push"),
        ("dead_hand", "dead_hand needs the seat, and this SEAT-COUNT hold names none"),
        ("redeal_board", "redeal_board needs what a continue hold of SEAT-COUNT does not carry"),
    ):
        after, events = apply(held, FloorOverride(TS, "SEAT-COUNT", decision, authority=FLOOR))
        assert [e.type for e in events] == ["command.rejected"]
        assert events[0].data["reason"] == reason
        assert after is held
