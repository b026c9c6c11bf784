"""No-limit betting: minimum raises, incomplete all-ins, turn order, rejected commands."""

from __future__ import annotations

import pytest

from controller.game.betting import ActionRejectedError, act, open_round, options
from controller.table.inputs import ActionKind
from controller.table.streets import Street
from tests.helpers import DEAL, of_type, one, run_text, scenario_text
from tests.helpers import act as act_step

ORDER = (1, 2, 3, 4)


def test_the_minimum_raise_is_the_last_full_raise() -> None:
    stacks = {1: 99, 2: 98, 3: 100, 4: 100}
    rnd = open_round(Street.PREFLOP, (3, 4, 1, 2), stacks, frozenset(), 2, {1: 1, 2: 2})
    with pytest.raises(ActionRejectedError, match="minimum raise is to 4"):
        act(rnd, ORDER, stacks, frozenset(), 3, ActionKind.RAISE, 3)
    out = act(rnd, ORDER, stacks, frozenset(), 3, ActionKind.RAISE, 10)  # raise by 8
    stacks = {**stacks, 3: 90}
    opts = options(out.round, stacks, frozenset())
    assert opts is not None
    assert (opts.seat, opts.min_to, opts.to_call) == (4, 18, 10)


def test_an_incomplete_all_in_does_not_reopen_the_betting() -> None:
    stacks = {1: 99, 2: 98, 3: 100, 4: 14}
    rnd = open_round(Street.PREFLOP, (3, 4, 1, 2), stacks, frozenset(), 2, {1: 1, 2: 2})
    out = act(rnd, ORDER, stacks, frozenset(), 3, ActionKind.RAISE, 10)
    stacks = {**stacks, 3: 90}
    out = act(out.round, ORDER, stacks, frozenset(), 4, ActionKind.ALLIN, None)  # to 14: +4 < 8
    assert (out.kind, out.to, out.full) == (ActionKind.RAISE, 14, False)
    stacks = {**stacks, 4: 0}
    out = act(out.round, ORDER, stacks, frozenset(), 1, ActionKind.CALL, None)
    stacks = {**stacks, 1: 86}
    out = act(out.round, ORDER, stacks, frozenset(), 2, ActionKind.CALL, None)
    stacks = {**stacks, 2: 86}
    # back to seat 3, who raised and faces only the short all-in: call or fold
    opts = options(out.round, stacks, frozenset())
    assert opts is not None
    assert opts.seat == 3
    assert not opts.can_raise
    with pytest.raises(ActionRejectedError, match="only call or fold"):
        act(out.round, ORDER, stacks, frozenset(), 3, ActionKind.RAISE, 30)


def test_short_all_ins_that_add_up_to_a_full_raise_reopen_the_betting() -> None:
    stacks = {1: 100, 2: 15, 3: 22, 4: 100}
    rnd = open_round(Street.FLOP, ORDER, stacks, frozenset(), 2)
    out = act(rnd, ORDER, stacks, frozenset(), 1, ActionKind.BET, 10)
    stacks = {**stacks, 1: 90}
    out = act(out.round, ORDER, stacks, frozenset(), 2, ActionKind.ALLIN, None)  # 15: +5
    stacks = {**stacks, 2: 0}
    out = act(out.round, ORDER, stacks, frozenset(), 3, ActionKind.ALLIN, None)  # 22: +7
    stacks = {**stacks, 3: 0}
    out = act(out.round, ORDER, stacks, frozenset(), 4, ActionKind.CALL, None)
    stacks = {**stacks, 4: 78}
    opts = options(out.round, stacks, frozenset())
    assert opts is not None
    assert opts.seat == 1
    assert opts.can_raise  # 12 more than seat 1 bet, at least the full bet of 10


def test_a_raise_needs_someone_who_could_call_it() -> None:
    # seat 2 is all in for 10; seat 1 can call or fold, raising would be pointless
    stacks = {1: 50, 2: 0}
    rnd = open_round(Street.FLOP, (1, 2), {1: 50, 2: 10}, frozenset(), 2)
    out = act(rnd, (1, 2), {1: 50, 2: 10}, frozenset(), 1, ActionKind.CHECK, None)
    out = act(out.round, (1, 2), {1: 50, 2: 10}, frozenset(), 2, ActionKind.ALLIN, None)
    opts = options(out.round, stacks, frozenset())
    assert opts is not None
    assert (opts.seat, opts.to_call, opts.can_raise) == (1, 10, False)
    with pytest.raises(ActionRejectedError, match="only call or fold"):
        act(out.round, (1, 2), stacks, frozenset(), 1, ActionKind.RAISE, 30)
    # and when nobody else has chips, nobody is asked to act at all
    assert open_round(Street.TURN, (1, 2), stacks, frozenset(), 2).to_act is None


def test_acting_out_of_turn_is_rejected_and_changes_nothing() -> None:
    text = scenario_text({1: 50, 2: 50, 3: 50}, 3, DEAL + act_step(1, "call"))
    run = run_text(text)
    rejected = one(run.events, "command.rejected")
    assert rejected.data == {"command": "action", "reason": "it is seat 3's turn, not seat 1's"}
    assert run.state.hand is not None
    assert run.state.hand.chips.actions == ()
    assert run.state.hand.chips.round is not None
    assert run.state.hand.chips.round.to_act == 3


@pytest.mark.parametrize(
    ("steps", "reason"),
    [
        (act_step(3, "raise", 3), "minimum raise is to 4"),
        (act_step(3, "raise", 500), "has only 50 in total"),
        (act_step(3, "check"), "cannot check: 2 to call"),
        (act_step(3, "raise"), "needs an amount"),
        (act_step(3, "call", 7), "calls to 2, not 7"),
        (act_step(9, "call"), "seat 9 is not in hand"),
        (act_step(3, "post", 2), "post when the hand starts"),
        ('[[step]]\ndealer = "table"\nseat = 1\n', "not at showdown"),
        ('[[step]]\ndealer = "start_hand"\n', "still in progress"),
        ('[[step]]\ndealer = "round_closed"\n[[step]]\ndealer = "round_closed"\n', "no betting"),
    ],
)
def test_commands_that_make_no_sense_are_rejected_with_a_reason(steps: str, reason: str) -> None:
    run = run_text(scenario_text({1: 50, 2: 50, 3: 50}, 3, DEAL + steps))
    rejected = of_type(run.events, "command.rejected")
    assert rejected, "nothing was rejected"
    assert reason in rejected[-1].data["reason"]
    assert rejected[-1].severity == "warn"


def test_round_closed_ends_the_round_for_tables_without_actions() -> None:
    steps = DEAL + '[[step]]\ndealer = "round_closed"\n'
    run = run_text(scenario_text({1: 50, 2: 50, 3: 50}, 3, steps))
    closed = one(run.events, "betting.round.closed")
    assert closed.data["closed_by"] == "dealer"
    assert run.state.hand is not None
    assert run.state.hand.phase == "board"
