"""The table's betting structure, as its profile names it (``betting.structure``, docs/profiles.md)
and the daemon's judge enforces it (controller/rules/actions.py): RR-PL (pot-limit: at most the
pot after the call), RR-BR-5/6 (fixed-limit: the street's one size; half a bet all in counts as a
bet) and RR-BR-3/4 (``betting.cap`` bets and raises while three or more can still bet, no cap
heads-up). Each refusal cites its rule, and so does each bet or raise the structure sized.

Against pokerkit: random hands played at pot-limit and fixed-limit tables, each replayed in
pokerkit's game of the same structure (tests/oracle.py), give the same stacks; pokerkit refuses
any amount its structure does not allow, so the replay also proves every bet and raise the core
took is one pokerkit takes.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.game.betting import Structure
from controller.profiles import load_profile
from controller.rules.actions import table_limits
from controller.rules.menu import check_amount, menu
from controller.table.engine import apply
from controller.table.events import TableEvent
from controller.table.inputs import Action, ActionKind
from controller.table.state import HandState, TableState
from controller.table.streets import Street
from simulators.autoplay import AutoDealer, Style, random_table
from simulators.scenario.primitives import EPOCH
from tests.helpers import DEAL, run_text, scenario_text, step
from tests.helpers import act as act_step
from tests.oracle import pokerkit_stacks

FOUR = {1: 100, 2: 100, 3: 100, 4: 100}
POT_LIMIT = '{ "betting.structure" = "pot_limit" }'
FIXED_LIMIT = '{ "betting.structure" = "fixed_limit" }'


def table_after(steps: str, house: str, stacks: dict[int, int] = FOUR) -> TableState:
    """The table after ``steps`` (button 4: small blind 1, big blind 2, seat 3 first to act)."""
    return run_text(scenario_text(stacks, 4, steps, house_rules=house)).state


def entered(state: TableState, seat: int, kind: ActionKind, amount: int | None = None) -> Any:
    """What the daemon's core does with the entry: the table after it and its first event."""
    after, events = apply(state, Action(EPOCH, seat, kind, amount))
    return after, events[0]


def refused(state: TableState, seat: int, kind: ActionKind, amount: int | None) -> TableEvent:
    after, event = entered(state, seat, kind, amount)
    assert event.type == "command.rejected", event
    assert after is state  # nothing changed
    # the station's checker gives the same words (controller/rules/menu.py)
    assert check_amount(state, seat, kind, amount) == event.data["reason"]
    return event  # type: ignore[no-any-return]


# ------------------------------------------------------------------ the profile key


def test_every_shipped_profile_plays_no_limit_and_a_table_names_its_structure() -> None:
    for name in ("de-charitable", "rrop-cash", "tda-tournament"):
        profile = load_profile(name)
        assert (profile.betting_structure, profile.betting_cap) == (Structure.NO_LIMIT, 4)
    nested = load_profile("rrop-cash").with_overrides(
        {"betting": {"structure": "fixed_limit", "cap": 5}}
    )
    assert (nested.betting_structure, nested.betting_cap) == (Structure.FIXED_LIMIT, 5)
    state = table_after(DEAL, FIXED_LIMIT)
    assert state.hand is not None
    limits = table_limits(state, state.hand)
    assert (limits.structure, limits.size, limits.base, limits.raises, limits.cap) == (
        Structure.FIXED_LIMIT,
        2,
        2,
        1,
        4,
    )


# ------------------------------------------------------------------ pot-limit


def test_rr_pl_a_pot_limit_table_refuses_more_than_the_pot_and_cites_rr_pl() -> None:
    state = table_after(DEAL, POT_LIMIT)
    m = menu(state)
    assert m is not None
    # blinds 1 and 2: call 2, then raise the pot of 5: to 7; the pad's "pot" is the most
    assert (m.structure, m.min_to, m.max_to) == (Structure.POT_LIMIT, 4, 7)
    assert dict(m.quick)["pot"] == m.max_to == 7
    assert ActionKind.ALLIN not in m.actions  # all in for 100 is more than the pot
    event = refused(state, 3, ActionKind.RAISE, 8)
    assert (event.data["reason"], event.rules) == (
        "the most a pot-limit raise is to 7, not 8",
        ("RR-PL",),
    )
    event = refused(state, 3, ActionKind.ALLIN, None)
    assert event.rules == ("RR-PL",)
    # the rules every structure shares cite none of the structure's
    assert refused(state, 3, ActionKind.RAISE, 3).rules == ()
    after, event = entered(state, 3, ActionKind.RAISE, 7)
    assert (event.type, event.data["to"], event.rules) == (
        "betting.action",
        7,
        ("DE-1548", "RR-PL"),
    )
    _, event = entered(after, 4, ActionKind.CALL)
    assert "RR-PL" not in event.rules  # a call is no bet the structure sized


def test_rr_pl_a_short_stack_may_go_all_in_below_the_pot() -> None:
    state = table_after(DEAL, POT_LIMIT, {1: 100, 2: 100, 3: 6, 4: 100})
    m = menu(state)
    assert m is not None
    assert (m.min_to, m.max_to) == (4, 6)
    assert ActionKind.ALLIN in m.actions
    _, event = entered(state, 3, ActionKind.ALLIN)
    assert (event.data["to"], event.data["all_in"], event.rules) == (6, True, ("DE-1548", "RR-PL"))


# ------------------------------------------------------------------ fixed-limit


def test_rr_br_5_6_a_fixed_limit_table_takes_only_the_streets_one_size() -> None:
    state = table_after(DEAL, FIXED_LIMIT)
    m = menu(state)
    assert m is not None
    assert (m.structure, m.min_to, m.max_to, m.quick) == (
        Structure.FIXED_LIMIT,
        4,
        4,
        (("fixed", 4),),
    )
    for amount in (3, 5, 100):
        event = refused(state, 3, ActionKind.RAISE, amount)
        assert event.data["reason"] == f"a fixed-limit raise is to 4, not {amount}"
        assert event.rules == ("RR-BR-5/6",)
    assert refused(state, 3, ActionKind.ALLIN, None).rules == ("RR-BR-5/6",)
    _, event = entered(state, 3, ActionKind.RAISE, 4)
    assert event.rules == ("DE-1548", "RR-BR-5/6")
    # from the turn the bet is twice the big blind
    steps = DEAL + act_step(3, "call") + act_step(4, "call") + act_step(1, "call")
    steps += act_step(2, "check") + step(auto="board", street="flop") + step(auto="check_round")
    turn = table_after(steps + step(auto="board", street="turn"), FIXED_LIMIT)
    m = menu(turn)
    assert m is not None
    assert (m.seat, m.min_to, m.max_to, m.quick) == (1, 4, 4, (("fixed", 4),))
    event = refused(turn, 1, ActionKind.BET, 2)
    assert (event.data["reason"], event.rules) == (
        "a fixed-limit bet is to 4, not 2",
        ("RR-BR-5/6",),
    )


def test_rr_br_5_6_an_all_in_of_half_a_bet_reopens_the_betting_and_less_is_completed() -> None:
    house = FIXED_LIMIT
    # blinds 1 and 2, the bet 2: seat 3 raises to 4, seat 4 is all in for 5 (one over: half a
    # bet), a raise: seat 3, who had acted, may raise again, to 7
    stacks = {1: 100, 2: 100, 3: 100, 4: 5}
    steps = DEAL + act_step(3, "raise", 4) + act_step(4, "allin")
    steps += act_step(1, "call") + act_step(2, "call")
    state = table_after(steps, house, stacks)
    m = menu(state)
    assert m is not None
    assert (m.seat, m.min_to, m.max_to) == (3, 7, 7)
    assert ActionKind.RAISE in m.actions
    # blinds 5 and 10, the bet 10: all in for 24 over 20 is less than half a bet: no raise;
    # the next seat completes the bet, to 30
    stacks = {1: 200, 2: 200, 3: 200, 4: 24}
    steps = DEAL + act_step(3, "raise", 20) + act_step(4, "allin")
    state = run_text(scenario_text(stacks, 4, steps, house_rules=house, blinds=(5, 10))).state
    m = menu(state)
    assert m is not None
    assert (m.seat, m.min_to, m.max_to) == (1, 30, 30)
    assert refused(state, 1, ActionKind.RAISE, 34).rules == ("RR-BR-5/6",)


def test_rr_br_3_4_a_bet_and_three_raises_then_call_or_fold_while_three_can_bet() -> None:
    steps = DEAL + act_step(3, "raise", 4) + act_step(4, "raise", 6)
    state = table_after(steps, FIXED_LIMIT)
    after, event = entered(state, 1, ActionKind.RAISE, 8)  # the big blind's bet and 3 raises
    assert event.rules == ("DE-1548", "RR-BR-5/6", "RR-BR-3/4")
    m = menu(after)
    assert m is not None
    assert (m.seat, m.actions, m.quick) == (2, (ActionKind.FOLD, ActionKind.CALL), ())
    event = refused(after, 2, ActionKind.RAISE, 10)
    assert event.data["reason"] == (
        "the betting is capped at 4 bets and raises: seat 2 may only call or fold"
    )
    assert event.rules == ("RR-BR-3/4",)
    # capped for good: a fold that leaves two does not uncap it
    capped = table_after(steps + act_step(1, "raise", 8) + act_step(2, "fold"), FIXED_LIMIT)
    assert refused(capped, 3, ActionKind.RAISE, 10).rules == ("RR-BR-3/4",)


def test_rr_br_3_4_heads_up_before_the_cap_the_raising_goes_on() -> None:
    steps = DEAL + act_step(3, "fold") + act_step(4, "fold")
    steps += act_step(1, "raise", 4) + act_step(2, "raise", 6) + act_step(1, "raise", 8)
    state = table_after(steps, FIXED_LIMIT)
    after, event = entered(state, 2, ActionKind.RAISE, 10)  # a fourth raise, heads-up
    assert (event.type, event.rules) == ("betting.action", ("DE-1548", "RR-BR-5/6"))
    after, event = entered(after, 1, ActionKind.RAISE, 12)
    assert event.type == "betting.action"


def test_rr_br_3_4_the_profile_sets_the_cap() -> None:
    house = '{ "betting.structure" = "fixed_limit", "betting.cap" = 5 }'
    steps = DEAL + act_step(3, "raise", 4) + act_step(4, "raise", 6) + act_step(1, "raise", 8)
    state = table_after(steps, house)
    after, event = entered(state, 2, ActionKind.RAISE, 10)  # a bet and four raises
    assert event.rules == ("DE-1548", "RR-BR-5/6", "RR-BR-3/4")
    event = refused(after, 3, ActionKind.RAISE, 12)
    assert event.data["reason"].startswith("the betting is capped at 5 bets and raises")


def test_rr_br_3_4_an_all_in_raise_that_reaches_the_cap_leaves_two_who_can_bet_uncapped() -> None:
    # three-handed, button 3: seat 3 raises to 4, seat 1 to 6, seat 2 all in to 8 (the cap):
    # two players who are not all in are left (RRoP 3: the limit is for a pot of three or more
    # not all in), so seat 3 may raise on between them
    stacks = {1: 100, 2: 8, 3: 100}
    steps = DEAL + act_step(3, "raise", 4) + act_step(1, "raise", 6) + act_step(2, "allin")
    state = run_text(scenario_text(stacks, 3, steps, house_rules=FIXED_LIMIT)).state
    m = menu(state)
    assert m is not None
    assert (m.seat, m.min_to) == (3, 10)
    assert ActionKind.RAISE in m.actions


# ------------------------------------------------------------------ against pokerkit

STYLES = (
    Style(fold=0.1, aggressive=0.6, all_in=0.3),  # raising wars: caps, pots, all-ins
    Style(fold=0.3, aggressive=0.3, all_in=0.1),  # folds: heads-up before the cap
)


def short_all_in_then_raised(hand: HandState, big_blind: int) -> bool:
    """A fixed-limit round where an all-in that was not a whole bet over the level was raised
    after it. RRoP, Betting and raising 6 has half a bet or more count as a bet (the next raise
    goes a whole bet over it, and reopens the betting) and less than half be completed to a
    bet; pokerkit raises a bet over any all-in and reopens for none: the two allow other
    amounts after it, and the scenarios and tests above prove RRoP's."""
    for street in Street:
        size = big_blind * (2 if street >= Street.TURN else 1)
        level = big_blind if street is Street.PREFLOP else 0
        short = False
        for record in hand.chips.actions:
            if record.street is not street or record.kind not in (ActionKind.BET, ActionKind.RAISE):
                continue
            if short:
                return True
            short = record.all_in and record.to - level != size
            level = max(level, record.to)
    return False


class Counted(AutoDealer):
    """The automatic dealer, counting what the hands reached."""

    def __init__(self, *args: Any, counters: Counter[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counters = counters

    async def random_action(self) -> None:
        state = self.run.state
        hand = state.hand
        assert hand is not None
        limits = table_limits(state, hand)
        m = menu(state)
        assert m is not None
        if limits.structure is Structure.FIXED_LIMIT and limits.cap and limits.raises >= limits.cap:
            self.counters["capped"] += 1
        past = limits.raises >= state.profile.betting_cap
        if limits.structure is Structure.FIXED_LIMIT and not limits.cap and past:
            self.counters["heads-up past the cap"] += 1
        if limits.structure is Structure.POT_LIMIT and m.max_to < hand.chips.stacks[m.seat] + (
            hand.chips.round.bets.get(m.seat, 0) if hand.chips.round else 0
        ):
            self.counters["the pot below the stack"] += 1
        await super().random_action()


def play(seed: int, house: dict[str, Any], counters: Counter[str]) -> None:
    """Two random hands at a random table of ``house``'s structure, each replayed in pokerkit."""
    rng = random.Random(seed)
    scenario = random_table(rng)
    scenario = scenario.model_copy(
        update={"scenario": scenario.scenario.model_copy(update={"house_rules": house})}
    )
    dealer = Counted(scenario, rng, STYLES[seed % len(STYLES)], counters=counters)
    blinds, ante = dealer.run.state.blinds, dealer.run.state.ante
    for _ in range(2):
        if not dealer.play_hand():
            return
        hand = dealer.run.state.last_hand
        assert hand is not None
        counters["hands"] += 1
        if house["betting.structure"] == "fixed_limit" and short_all_in_then_raised(
            hand, blinds[1]
        ):
            counters["short all-in raised (RRoP 6): not compared"] += 1
            continue
        ours = {seat: dealer.run.state.stacks[seat] for seat in hand.order}
        assert ours == pokerkit_stacks(hand, blinds, ante, house), f"seed {seed}"
        counters["compared"] += 1


POT = {"betting.structure": "pot_limit"}
FIXED = (
    {"betting.structure": "fixed_limit"},
    {"betting.structure": "fixed_limit", "betting.cap": 5},
)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_rr_pl_random_pot_limit_hands_match_pokerkits_stacks(seed: int) -> None:
    play(seed, POT, Counter())


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), house=st.sampled_from(FIXED))
def test_rr_br_3_4_rr_br_5_6_random_fixed_limit_hands_match_pokerkits_stacks(
    seed: int, house: dict[str, Any]
) -> None:
    play(seed, house, Counter())


@pytest.mark.parametrize("house", [POT, *FIXED], ids=lambda h: ",".join(map(str, h.values())))
def test_the_random_hands_reach_what_the_structures_decide(house: dict[str, Any]) -> None:
    counters: Counter[str] = Counter()
    for seed in range(60):
        play(seed, house, counters)
    print(dict(counters))
    assert counters["compared"] > counters["hands"] * 3 // 4
    if house["betting.structure"] == "pot_limit":
        assert counters["the pot below the stack"] > counters["hands"]
    else:
        assert counters["capped"] > 0
        assert counters["heads-up past the cap"] > 0
