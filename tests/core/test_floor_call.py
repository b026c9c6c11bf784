"""FLOOR-CALL in the core: a floor call in a hand with no hold pending holds the hand until the
floor rules (controller/rules/floor_call.py, docs/rules.md)."""

from __future__ import annotations

import random
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.authority import Authority, Role
from controller.table.engine import apply
from controller.table.events import TableEvent
from controller.table.inputs import (
    Action,
    ActionKind,
    Award,
    CallFloor,
    Confirm,
    DealerInput,
    FloorOverride,
    Input,
    RaiseHold,
    Reject,
)
from controller.table.state import Phase, TableState
from simulators.autoplay import AutoDealer, Style, random_table
from simulators.scenario.primitives import EPOCH
from tests.core.test_authority import held_at_seat_count
from tests.helpers import DEAL, RUNOUT, run_text, scenario_text, step

TS = EPOCH + timedelta(hours=1)  # after every scenario step
DEALER = Authority("Ann", Role.DEALER, "ann")
FLOOR = Authority("Bob", Role.FLOOR, "bob")
STACKS = {1: 100, 2: 100, 3: 100}
SHOWDOWN = RUNOUT + "".join(step(dealer="table", seat=s) for s in (1, 2, 3))


def betting(house_rules: str = "{}") -> TableState:
    """Three seats in the first betting round (seat 3 to act), no hold pending."""
    state = run_text(scenario_text(STACKS, 3, DEAL, house_rules=house_rules)).state
    assert state.hand is not None
    assert state.hand.phase is Phase.BETTING
    assert not state.hand.irregular.holds
    return state


def at_the_award() -> TableState:
    """The same table at the award: every hand tabled, the proposal waiting for the push."""
    state = run_text(scenario_text(STACKS, 3, DEAL + SHOWDOWN)).state
    assert state.hand is not None
    assert state.hand.phase is Phase.AWARD
    assert state.hand.showdown.proposal is not None
    return state


def types(events: list[TableEvent]) -> list[str]:
    return [e.type for e in events]


def call(
    state: TableState, reason: str = "a player disputes the bet", **fields: object
) -> tuple[TableState, list[TableEvent]]:
    return apply(state, CallFloor(TS, reason, authority=DEALER, **fields))  # type: ignore[arg-type]


def test_floor_call_mid_hand_holds_the_hand_and_refuses_the_dealer_until_the_floor_confirms() -> (
    None
):
    state = betting()
    held, events = call(state, seat=2)
    assert types(events) == ["hand.hold", "floor.called"]
    hold, called = events
    assert hold.rules == called.rules == ("FLOOR-CALL",)
    assert hold.data == {
        "hold": "T1-00001-h1",
        "rule": "FLOOR-CALL",
        "reason": "a player disputes the bet",
        "ruling": "continue",
        "seat": 2,
    }
    assert hold.needs_confirm
    # the call names the hold it raised: the pit's queue shows the call on it
    assert called.data == {
        "reason": "a player disputes the bet",
        "hold": "T1-00001-h1",
        "rule": "FLOOR-CALL",
        "seat": 2,
    }
    assert called.by == hold.by == {"person": "Ann", "role": "dealer"}
    assert held.hand is not None
    assert [h.rule.value for h in held.hand.irregular.holds] == ["FLOOR-CALL"]
    # the dealer's next action is refused while the hold is pending, and changes nothing
    after, refused = apply(held, Action(TS, 3, ActionKind.CALL, authority=DEALER))
    assert types(refused) == ["command.rejected"]
    assert refused[0].data["reason"] == (
        "the hand is held (T1-00001-h1, FLOOR-CALL: a player disputes the bet): "
        "confirm, reject or override it first"
    )
    assert after is held
    # the floor confirms: the hand goes on as it was, and the same action is taken
    resumed, events = apply(held, Confirm(TS, authority=FLOOR))
    assert types(events) == ["hand.resume"]
    assert events[0].data == {
        "hold": "T1-00001-h1",
        "rule": "FLOOR-CALL",
        "decision": "continue",
        "by": "confirm",
    }
    assert resumed.hand is not None
    assert not resumed.hand.irregular.holds
    assert resumed.hand.chips == state.hand.chips  # type: ignore[union-attr]
    _, events = apply(resumed, Action(TS, 3, ActionKind.CALL, authority=DEALER))
    assert types(events)[0] == "betting.action"


def test_floor_call_the_dealer_may_not_rule_on_it_unless_the_house_names_it() -> None:
    held, _ = call(betting())
    for verb in (Confirm, Reject):
        after, events = apply(held, verb(TS, authority=DEALER))
        assert types(events) == ["command.rejected"]
        assert events[0].data["reason"].startswith("FLOOR-CALL is the floor's ruling")
        assert events[0].rules == ("FLOOR-CALL",)
        assert after is held
    override = FloorOverride(TS, "FLOOR-CALL", "continue", authority=DEALER)
    assert types(apply(held, override)[1]) == ["command.rejected"]
    # a house that lets its dealers confirm floor calls (dealer_may_confirm)
    lenient, _ = call(betting('{ dealer_may_confirm = ["FLOOR-CALL"] }'))
    _, events = apply(lenient, Confirm(TS, authority=DEALER))
    assert types(events) == ["hand.resume"]
    _, events = apply(lenient, Reject(TS, authority=DEALER))
    assert types(events) == ["hand.resume"]
    assert events[0].data["by"] == "reject"


def test_floor_call_the_floors_override_to_a_misdeal_returns_every_chip() -> None:
    state = betting()
    raised, _ = apply(state, Action(TS, 3, ActionKind.RAISE, 8, authority=DEALER))
    held, _ = call(raised)
    after, events = apply(held, FloorOverride(TS, "FLOOR-CALL", "misdeal", authority=FLOOR))
    assert types(events)[:2] == ["floor.override", "hand.misdeal"]
    assert events[0].data == {"rule": "FLOOR-CALL", "decision": "misdeal", "hold": "T1-00001-h1"}
    assert events[1].data["returned"] == {"1": 1, "2": 2, "3": 8}
    assert "FLOOR-CALL" in events[1].rules
    assert after.hand is None
    assert after.stacks == STACKS


def test_floor_call_reject_dismisses_the_call_and_the_hand_goes_on() -> None:
    held, _ = call(betting())
    resumed, events = apply(held, Reject(TS, authority=FLOOR))
    assert types(events) == ["hand.resume"]
    assert events[0].data["by"] == "reject"
    assert resumed.hand is not None
    assert not resumed.hand.irregular.holds


def test_floor_call_a_disputed_award_is_pushed_only_once_the_floor_rules_de_1552() -> None:
    state = at_the_award()
    held, events = call(state, "the award is disputed")
    assert types(events) == ["hand.hold", "floor.called"]
    after, refused = apply(held, Award(TS, authority=DEALER))
    assert types(refused) == ["command.rejected"]
    assert "the hand is held" in refused[0].data["reason"]
    assert "FLOOR-CALL: the award is disputed" in refused[0].data["reason"]
    assert after is held
    # the floor confirms (the award stands): the dealer pushes it, the losing hands killed first
    resumed, _ = apply(held, Confirm(TS, authority=FLOOR))
    pushing, events = apply(resumed, Award(TS, authority=DEALER))
    assert [(e.type, e.rules) for e in events] == [("hand.hold", ("RR-SD-4",))]
    done, events = apply(pushing, Confirm(TS, authority=FLOOR))
    assert "pot.awarded" in types(events)
    assert done.hand is None
    # or the floor pushes it as proposed by its override
    done, events = apply(
        held, FloorOverride(TS, "FLOOR-CALL", "award_as_proposed", authority=FLOOR)
    )
    assert types(events)[:3] == ["floor.override", "irregularity.detected", "pot.awarded"]
    assert events[1].data["reason"] == "the floor upholds the award as proposed"
    assert done.hand is None
    # or the floor voids the hand: every chip back
    void, events = apply(held, FloorOverride(TS, "FLOOR-CALL", "void", authority=FLOOR))
    assert "hand.void" in types(events)
    assert void.stacks == STACKS


def test_floor_call_a_seats_dispute_upheld_reopens_the_showdown_for_it() -> None:
    state = at_the_award()
    held, _ = call(state, "seat 1 says its hand was misread", seat=1)
    after, events = apply(held, FloorOverride(TS, "FLOOR-CALL", "claim_upheld", authority=FLOOR))
    assert types(events)[0] == "floor.override"
    assert "pot.award.proposed" in types(events)  # proposed anew, with seat 1's hand live
    assert after.hand is not None
    assert not after.hand.irregular.holds


def test_floor_call_an_override_it_cannot_apply_is_refused_and_the_hold_stays() -> None:
    held, _ = call(betting())
    for decision, reason in (
        ("card_dead", "a floor call's hold takes one of continue, misdeal, void, dead_hand"),
        ("award_as_proposed", "there is no proposed award to push"),
        ("dead_hand", "dead_hand needs the seat"),
        ("claim_upheld", "claim_upheld needs the seat"),
    ):
        after, events = apply(held, FloorOverride(TS, "FLOOR-CALL", decision, authority=FLOOR))
        assert types(events) == ["command.rejected"], decision
        assert events[0].data["reason"].startswith(reason), events[0].data["reason"]
        assert after is held
    seat_held, _ = call(betting(), seat=1)
    upheld = FloorOverride(TS, "FLOOR-CALL", "claim_upheld", authority=FLOOR)
    _, events = apply(seat_held, upheld)
    assert events[0].data["reason"] == "a claim is upheld at the showdown or the award, not before"
    after, events = apply(seat_held, FloorOverride(TS, "FLOOR-CALL", "dead_hand", authority=FLOOR))
    assert types(events)[:2] == ["floor.override", "seat.hand.dead"]


def test_floor_call_with_a_hold_pending_is_about_that_hold() -> None:
    state = held_at_seat_count()
    after, events = call(state, "two cards seen")
    assert types(events) == ["floor.called"]
    assert events[0].data["rule"] == "SEAT-COUNT"
    assert events[0].rules == ("SEAT-COUNT",)
    assert after.hand is not None
    assert [h.rule.value for h in after.hand.irregular.holds] == ["SEAT-COUNT"]
    # a hold named that is not pending is refused, and changes nothing
    unchanged, events = call(state, hold="T1-00001-h9")
    assert types(events) == ["command.rejected"]
    assert events[0].data["reason"].startswith("no pending hold 'T1-00001-h9' (pending: ")
    assert unchanged is state


def test_floor_call_between_hands_holds_nothing() -> None:
    held, _ = call(at_the_award())
    done, _ = apply(held, FloorOverride(TS, "FLOOR-CALL", "award_as_proposed", authority=FLOOR))
    assert done.hand is None
    after, events = call(done, "a player asks for the floor", seat=3)
    assert types(events) == ["floor.called"]
    assert events[0].data == {
        "reason": "a player asks for the floor",
        "hold": None,
        "rule": None,
        "seat": 3,
    }
    assert events[0].rules == ()
    assert after.hand is None
    assert after.stacks == done.stacks
    _, events = call(done, seat=7)
    assert types(events) == ["command.rejected"]
    assert events[0].data["reason"] == "seat 7 is not at the table"


def test_floor_call_words_are_bounded_and_default() -> None:
    _, events = call(betting(), "   ")
    assert events[-1].data["reason"] == "the dealer calls the floor"
    _, events = call(betting(), "x" * 1000)
    assert len(events[-1].data["reason"]) == 200
    assert events[0].data["reason"] == events[-1].data["reason"]


def test_floor_call_surveillance_may_still_hold_the_hand_while_the_floor_is_called() -> None:
    held, _ = call(betting())
    watcher = Authority("Eve", Role.SURVEILLANCE, "eve")
    after, events = apply(held, RaiseHold(TS, "FOUL-DUP", "on camera", authority=watcher))
    assert types(events) == ["hand.hold"]
    assert after.hand is not None
    assert [h.rule.value for h in after.hand.irregular.holds] == ["FLOOR-CALL", "FOUL-DUP"]


# ------------------------------------------------------------------------------- property


def played_hand(seed: int) -> tuple[TableState, list[Input], TableState]:
    """A random table, its state before one hand, the hand's inputs, the state after it."""
    rng = random.Random(seed)
    dealer = AutoDealer(random_table(rng), rng, Style(muck_loser=0.2))
    before = dealer.run.state
    assert dealer.play_hand()
    return before, list(dealer.run.inputs), dealer.run.state


def replayed(state: TableState, inputs: list[Input]) -> tuple[TableState, list[TableEvent]]:
    events: list[TableEvent] = []
    for item in inputs:
        state, caused = apply(state, item)
        events += caused
    return state, events


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), at=st.floats(0, 1, exclude_max=True))
def test_floor_call_anywhere_in_a_hand_holds_it_and_confirmed_changes_nothing_else(
    seed: int, at: float
) -> None:
    """A call at any point of a random hand with no hold pending holds it; every dealer command
    but the rulings is refused meanwhile; once the floor confirms, the hand plays on to the very
    same end; overridden to a misdeal, every chip goes back to where it was before the hand."""
    before, inputs, after = played_hand(seed)
    split = 1 + int(at * (len(inputs) - 1))  # after the hand's start, before its last input
    state, _ = replayed(before, inputs[:split])
    hand = state.hand
    if hand is None or hand.irregular.holds:
        return  # over already, or held for another ruling: the call is about that
    held, events = apply(state, CallFloor(inputs[split - 1].ts, "why", authority=DEALER))
    assert types(events) == ["hand.hold", "floor.called"]
    assert events[1].data["hold"] == events[0].data["hold"]
    dealer_next = next((i for i in inputs[split:] if isinstance(i, DealerInput)), None)
    if dealer_next is not None:
        refused, events = apply(held, dealer_next)
        assert types(events) == ["command.rejected"], dealer_next
        assert refused is held
    at_ts = inputs[split - 1].ts
    resumed, _ = apply(held, Confirm(at_ts, authority=FLOOR))
    end, _ = replayed(resumed, inputs[split:])
    assert end.stacks == after.stacks
    assert end.button == after.button
    assert end.hand is None
    misdealt, _ = apply(held, FloorOverride(at_ts, "FLOOR-CALL", "misdeal", authority=FLOOR))
    assert misdealt.hand is None
    assert sum(misdealt.stacks.values()) == sum(before.stacks.values())
    assert misdealt.stacks == before.stacks
