"""The dealer's menu and amount checker (controller/rules/menu.py).

The menu of the seat to act, the quick sizes, pot-limit and fixed-limit arithmetic; the checker
gives the daemon's own reason (DE-1548: the action as the dealer enters it, DE-1549a: an
under-call) because both ask the same functions. Two hypothesis properties: over random hands
every entry the checker accepts the daemon accepts and every one it refuses the daemon refuses
with the same reason; and the menu's amounts are pokerkit's, no-limit, pot-limit and fixed-limit.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pokerkit import (
    Automation,
    FixedLimitTexasHoldem,
    Mode,
    NoLimitTexasHoldem,
    PotLimitPokerMixin,
    State,
    TexasHoldemMixin,
    UnfixedLimitHoldem,
)

from controller.game.betting import Structure, options
from controller.rules import actions
from controller.rules.menu import Menu, check_amount, menu
from controller.table.engine import apply
from controller.table.inputs import Action, ActionKind
from controller.table.state import TableState
from controller.table.streets import Street
from simulators.autoplay import AutoDealer, Style
from simulators.scenario.model import Scenario, ScenarioMeta, TableSpec
from simulators.scenario.primitives import EPOCH
from tests.helpers import DEAL, run_text, scenario_text, step
from tests.helpers import act as act_step

FOUR = {1: 100, 2: 100, 3: 100, 4: 100}
F, X, C, B, R, A = (
    ActionKind.FOLD,
    ActionKind.CHECK,
    ActionKind.CALL,
    ActionKind.BET,
    ActionKind.RAISE,
    ActionKind.ALLIN,
)


def state_after(
    steps: str, stacks: dict[int, int] = FOUR, blinds: tuple[int, int] = (1, 2)
) -> TableState:
    """The table after ``steps`` (button 4: small blind 1, big blind 2, seat 3 first to act)."""
    return run_text(scenario_text(stacks, 4, steps, blinds=blinds)).state


def the_menu(state: TableState, structure: Structure | None = None) -> Menu:
    found = menu(state, structure)
    assert found is not None
    return found


def daemons_reason(
    state: TableState, seat: int, kind: ActionKind, amount: int | None
) -> str | None:
    """What the daemon does with the entry: None if it takes it, else the reason it gives."""
    # at the first moment of the run: no deadline of the state has passed, as for the checker
    after, events = apply(state, Action(EPOCH, seat, kind, amount))
    first = events[0]
    if first.type == "command.rejected":
        assert after is state
        return str(first.data["reason"])
    if first.type == "irregularity.detected" and "DE-1549a" in first.rules:
        return str(first.data["reason"])
    assert first.type == "betting.action", first
    return None


# ------------------------------------------------------------------ the menu, no-limit


def test_de_1548_the_menu_of_the_first_to_act_and_of_the_big_blinds_option() -> None:
    state = state_after(DEAL)
    m = the_menu(state)
    assert (m.seat, m.actions) == (3, (F, C, R, A))
    assert (m.to_call, m.call_to, m.min_to, m.max_to) == (2, 2, 4, 100)
    # the pot is 3: half of it after the call is 2 (a raise to 4, the minimum), all of it 5
    assert m.quick == (("minimum", 4), ("pot", 7))
    assert m.structure is Structure.NO_LIMIT
    state = state_after(DEAL + act_step(3, "call") + act_step(4, "call") + act_step(1, "call"))
    m = the_menu(state)
    assert (m.seat, m.actions, m.to_call, m.min_to) == (2, (F, X, R, A), 0, 4)
    assert m.quick == (("minimum", 4), ("half pot", 6), ("pot", 10))


def test_de_1548_a_short_stack_facing_a_raise_may_call_all_in_but_not_raise() -> None:
    state = state_after(DEAL + act_step(3, "raise", 20), {1: 100, 2: 100, 3: 100, 4: 15})
    m = the_menu(state)
    assert (m.seat, m.actions) == (4, (F, C, A))
    assert (m.to_call, m.call_to, m.min_to, m.max_to, m.quick) == (15, 15, 0, 0, ())


def test_de_1548_nothing_to_choose_while_dealing_held_or_between_hands() -> None:
    assert menu(state_after("")) is None
    assert (
        menu(state_after('[[step]]\ndealer = "start_hand"\n[[step]]\nshuffler = "shuffle"\n'))
        is None
    )
    held = state_after(DEAL + step(dealer="hold", rule="SEAT-COUNT", reason="a card on the floor"))
    assert held.hand is not None
    assert held.hand.irregular.holds
    assert menu(held) is None
    reason = check_amount(held, 3, ActionKind.CALL)
    assert reason is not None
    assert reason.startswith("the hand is held (")
    assert reason == daemons_reason(held, 3, ActionKind.CALL, None)


# ------------------------------------------------------------------ the checker


@pytest.mark.parametrize(
    ("seat", "kind", "amount"),
    [
        (3, ActionKind.RAISE, 3),  # under the minimum
        (3, ActionKind.RAISE, 101),  # over the stack
        (3, ActionKind.BET, None),  # no amount
        (4, ActionKind.CALL, None),  # out of turn
        (3, ActionKind.CHECK, None),  # 2 to call
        (3, ActionKind.POST, None),  # blinds post themselves
        (7, ActionKind.FOLD, None),  # not in the hand
        (3, ActionKind.CALL, 1),  # an under-call (DE-1549a)
        (3, ActionKind.CALL, 3),  # a call to 2, not 3
        (3, ActionKind.RAISE, 4),  # legal
        (3, ActionKind.BET, 7),  # legal: a bet where there is a bet is a raise
        (3, ActionKind.ALLIN, None),  # legal
    ],
)
def test_de_1548_de_1549a_the_checker_gives_the_daemons_reason(
    seat: int, kind: ActionKind, amount: int | None
) -> None:
    state = state_after(DEAL)
    assert check_amount(state, seat, kind, amount) == daemons_reason(state, seat, kind, amount)


def test_de_1548_the_checker_between_hands_and_while_dealing() -> None:
    for state in (state_after(""), state_after(DEAL[: DEAL.index("[[step]]\nauto")])):
        assert check_amount(state, 3, ActionKind.CALL) == daemons_reason(
            state, 3, ActionKind.CALL, None
        )


# ------------------------------------------------------------------ pot-limit and fixed-limit


def test_pot_limit_the_most_is_a_raise_of_the_pot_after_the_call() -> None:
    state = state_after(DEAL)
    m = the_menu(state, Structure.POT_LIMIT)
    # blinds 1 and 2: call 2, then raise the pot of 5: to 7
    assert (m.actions, m.min_to, m.max_to, m.quick) == (
        (F, C, R),
        4,
        7,
        (("minimum", 4), ("pot", 7)),
    )
    assert check_amount(state, 3, ActionKind.RAISE, 8, Structure.POT_LIMIT) == (
        "the most a pot-limit raise is to 7, not 8"
    )
    assert check_amount(state, 3, ActionKind.RAISE, 7, Structure.POT_LIMIT) is None
    # all in for 100 is more than the pot: not on the menu, and refused
    assert check_amount(state, 3, ActionKind.ALLIN, None, Structure.POT_LIMIT) == (
        "the most a pot-limit raise is to 7, not 100"
    )


def test_fixed_limit_one_size_a_bet_and_three_raises_multiway() -> None:
    state = state_after(DEAL)
    m = the_menu(state, Structure.FIXED_LIMIT)
    assert (m.actions, m.min_to, m.max_to, m.quick) == ((F, C, R), 4, 4, (("fixed", 4),))
    assert check_amount(state, 3, ActionKind.RAISE, 5, Structure.FIXED_LIMIT) == (
        "a fixed-limit raise is to 4, not 5"
    )
    # the big blind is the bet; 4, 6 and 8 are three raises: the cap, four players can bet
    capped = state_after(
        DEAL + act_step(3, "raise", 4) + act_step(4, "raise", 6) + act_step(1, "raise", 8)
    )
    m = the_menu(capped, Structure.FIXED_LIMIT)
    assert (m.seat, m.actions, m.min_to) == (2, (F, C), 0)
    assert check_amount(capped, 2, ActionKind.RAISE, 10, Structure.FIXED_LIMIT) == (
        "the betting is capped at 4 bets and raises: seat 2 may only call or fold"
    )
    assert the_menu(capped).actions == (F, C, R, A)  # no-limit has no cap


def test_fixed_limit_heads_up_there_is_no_cap_and_the_turn_is_a_big_bet() -> None:
    two = {1: 100, 2: 100}
    # heads-up: button 2 posts the small blind; 1 the big blind
    steps = DEAL + act_step(2, "raise", 4) + act_step(1, "raise", 6) + act_step(2, "raise", 8)
    state = run_text(scenario_text(two, 2, steps)).state
    m = the_menu(state, Structure.FIXED_LIMIT)
    assert (m.seat, m.actions, m.min_to) == (1, (F, C, R), 10)
    # to the turn: the bet is twice the big blind
    steps = DEAL + act_step(2, "call") + act_step(1, "check")
    for street in ("flop", "turn"):
        steps += step(auto="board", street=street)
        if street == "flop":
            steps += act_step(1, "check") + act_step(2, "check")
    state = run_text(scenario_text(two, 2, steps)).state
    m = the_menu(state, Structure.FIXED_LIMIT)
    assert (m.seat, m.actions, m.min_to, m.max_to) == (1, (F, X, B), 4, 4)


def test_fixed_limit_capped_for_good_but_unlimited_once_heads_up_before_the_cap() -> None:
    three = {1: 100, 2: 100, 3: 100}
    # button 3: blinds 1 and 2; the cap is reached three-handed, then seat 3 folds
    steps = DEAL + act_step(3, "raise", 4) + act_step(1, "raise", 6) + act_step(2, "raise", 8)
    state = run_text(scenario_text(three, 3, steps + act_step(3, "fold"))).state
    m = the_menu(state, Structure.FIXED_LIMIT)
    assert (m.seat, m.actions) == (1, (F, C))
    # seat 3 folds first: heads-up before the cap, the raising goes on
    steps = DEAL + act_step(3, "fold") + act_step(1, "raise", 4) + act_step(2, "raise", 6)
    state = run_text(scenario_text(three, 3, steps + act_step(1, "raise", 8))).state
    m = the_menu(state, Structure.FIXED_LIMIT)
    assert (m.seat, m.actions, m.min_to) == (2, (F, C, R), 10)


def test_fixed_limit_half_a_bet_all_in_reopens_and_less_is_completed() -> None:
    stacks = {1: 200, 2: 200, 3: 200, 4: 25}
    # blinds 5 and 10: seat 3 raises to 20, seat 4 is all in for 25, half a bet: a raise
    state = state_after(
        DEAL
        + act_step(3, "raise", 20)
        + act_step(4, "allin")
        + act_step(1, "call", 25)
        + act_step(2, "call", 25),
        stacks,
        (5, 10),
    )
    m = the_menu(state, Structure.FIXED_LIMIT)
    assert (m.seat, m.actions, m.min_to) == (3, (F, C, R), 35)
    assert the_menu(state).actions == (F, C)  # no-limit: 5 is not a full raise of 10
    stacks = {1: 200, 2: 200, 3: 200, 4: 24}
    # all in for 24, less than half a bet: not a raise; seat 1 completes the bet, to 30
    state = state_after(DEAL + act_step(3, "raise", 20) + act_step(4, "allin"), stacks, (5, 10))
    m = the_menu(state, Structure.FIXED_LIMIT)
    assert (m.seat, m.actions, m.min_to, m.max_to) == (1, (F, C, R), 30, 30)


# ------------------------------------------------------------------ random hands


def probes(
    m: Menu, state: TableState, rng: random.Random
) -> list[tuple[int, ActionKind, int | None]]:
    """Entries around every edge of the menu, by the seat to act and by others."""
    hand = state.hand
    assert hand is not None
    others = [s for s in hand.order if s != m.seat] + [
        s for s in range(1, 11) if s not in hand.order
    ][:1]
    amounts = {
        None,
        0,
        m.call_to,
        m.call_to - 1,
        m.call_to + 1,
        m.min_to - 1,
        m.min_to,
        m.min_to + 1,
        m.max_to,
        m.max_to + 1,
        rng.randint(0, max(1, m.max_to * 2)),
        *(to for _, to in m.quick),
    }
    found = [(m.seat, kind, amount) for kind in ActionKind for amount in amounts]
    found += [
        (rng.choice(others), rng.choice(list(ActionKind)), rng.choice(sorted(amounts, key=str)))
        for _ in range(6)
    ]
    return found


class MenuDealer(AutoDealer):
    """An automatic dealer that plays from the menu and checks the checker at every turn."""

    checked = 0
    turns = 0

    async def random_action(self) -> None:
        self.turns += 1
        state = self.run.state
        m = menu(state)
        assert m is not None
        hand = state.hand
        assert hand is not None
        assert hand.chips.round is not None
        # the menu is the core's options, and each action on it is taken
        opts = options(hand.chips.round, hand.chips.stacks, hand.chips.folded)
        assert opts is not None
        assert (m.seat, m.to_call, m.call_to, m.min_to, m.max_to) == (
            opts.seat,
            opts.to_call,
            opts.call_to,
            opts.min_to,
            opts.max_to,
        )
        for seat, kind, amount in probes(m, state, self.rng):
            mine = check_amount(state, seat, kind, amount)
            theirs = daemons_reason(state, seat, kind, amount)
            assert mine == theirs, (seat, kind, amount, mine, theirs)
            self.checked += 1
        for kind in m.actions:
            amount = m.min_to if kind in (ActionKind.BET, ActionKind.RAISE) else None
            assert daemons_reason(state, m.seat, kind, amount) is None, kind
        kind = self.rng.choice(m.actions)
        amount = None
        if kind in (ActionKind.BET, ActionKind.RAISE):
            amount = self.rng.choice(
                [self.rng.randint(m.min_to, m.max_to), *(to for _, to in m.quick)]
            )
        elif kind is ActionKind.CALL and self.rng.random() < 0.3:
            amount = m.call_to
        events = await self.feed(Action(self.tick(), m.seat, kind, amount))
        assert events[0].type == "betting.action", events[0]


def random_table(rng: random.Random) -> Scenario:
    seats = sorted(rng.sample(range(1, 11), rng.randint(2, 7)))
    small = rng.choice([1, 2, 5])
    stacks = {
        s: rng.choice([rng.randint(1, 12 * small), rng.randint(40 * small, 300 * small)])
        for s in seats
    }
    return Scenario(
        scenario=ScenarioMeta(name="menu", profile="rrop-cash"),
        table=TableSpec(
            id="M",
            stacks=stacks,
            button=rng.choice(seats),
            blinds=(small, 2 * small),
            ante=rng.choice([0, 0, small]),
        ),
    )


@settings(max_examples=40)  # each example plays two hands and probes every turn some 150 times
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_de_1548_the_checker_and_the_daemon_agree_on_every_entry(seed: int) -> None:
    rng = random.Random(seed)
    dealer = MenuDealer(random_table(rng), rng, Style())
    for _ in range(2):
        if not dealer.play_hand():
            break
    # some tables deal hands where every seat is all in on its blinds: nobody has a turn
    assert dealer.checked > dealer.turns or not dealer.turns


# ------------------------------------------------------------------ against pokerkit


class PotLimitTexasHoldem(PotLimitPokerMixin, TexasHoldemMixin, UnfixedLimitHoldem):
    """pokerkit's hold'em with its pot-limit betting structure."""


AUTOMATIONS = (
    Automation.ANTE_POSTING,
    Automation.BET_COLLECTION,
    Automation.BLIND_OR_STRADDLE_POSTING,
    Automation.CARD_BURNING,
    Automation.HOLE_DEALING,
    Automation.BOARD_DEALING,
    Automation.HOLE_CARDS_SHOWING_OR_MUCKING,
    Automation.HAND_KILLING,
    Automation.CHIPS_PUSHING,
    Automation.CHIPS_PULLING,
)


def pokerkit_state(structure: Structure, state: TableState) -> State:
    hand = state.hand
    assert hand is not None
    small, big = state.blinds
    stacks = tuple(hand.start_stacks[s] for s in hand.order)
    args = (AUTOMATIONS, True, state.ante, (small, big))
    if structure is Structure.FIXED_LIMIT:
        return FixedLimitTexasHoldem.create_state(
            *args, big, 2 * big, stacks, len(stacks), mode=Mode.CASH_GAME
        )
    game = NoLimitTexasHoldem if structure is Structure.NO_LIMIT else PotLimitTexasHoldem
    return game(*args, big, mode=Mode.CASH_GAME)(stacks, len(stacks))


class MirroredDealer(AutoDealer):
    """Plays no-limit hands the three structures all allow, each mirrored in pokerkit; at every
    turn the menu of each structure must be pokerkit's (to call, the smallest and largest "to").

    Fixed-limit is compared while the rules agree: pokerkit caps raises heads-up too, does not
    count the big blind as the round's first bet, and counts an all-in short of a full bet as no
    raise (RRoP and TDA 47 do otherwise); a hand where the cap or such an all-in comes stops
    being compared in fixed-limit. In any structure pokerkit does not add short all-ins up
    (TDA 47 does): a hand where a raise is legal only by their sum stops being compared there."""

    compared = 0
    mirrors: dict[Structure, State]
    decided = False

    def start_command(self) -> Any:
        self.mirrors = {}
        self.decided = False
        return super().start_command()

    async def random_action(self) -> None:
        state = self.run.state
        hand = state.hand
        assert hand is not None
        rnd = hand.chips.round
        assert rnd is not None
        if not self.decided:
            self.decided = True
            self.mirrors = {s: pokerkit_state(s, state) for s in Structure}
        seat = rnd.to_act
        assert seat is not None
        if Structure.FIXED_LIMIT in self.mirrors and not self.plain(state):
            del self.mirrors[Structure.FIXED_LIMIT]
        short = short_all_in(state)
        ranges = {}
        for structure, mirror in self.mirrors.items():
            m = the_menu(state, structure)
            assert mirror.actor_index == hand.order.index(seat)
            assert mirror.checking_or_calling_amount == m.to_call
            raising = B in m.actions or R in m.actions
            ranges[structure] = (m.min_to, m.max_to) if raising else None
            if short:
                continue  # pokerkit lets a seat that acted raise over a short all-in once called
            low = mirror.min_completion_betting_or_raising_to_amount
            high = mirror.max_completion_betting_or_raising_to_amount
            assert (low, high) == ((m.min_to, m.max_to) if raising else (None, None)), structure
            self.compared += 1
        kind, amount = self.choose(state, ranges)
        events = await self.feed(Action(self.tick(), seat, kind, amount))
        assert events[0].type == "betting.action", events[0]
        for structure, mirror in list(self.mirrors.items()):
            if kind is ActionKind.FOLD:
                mirror.fold()
            elif amount is None:
                mirror.check_or_call()
            elif mirror.can_complete_bet_or_raise_to(amount):
                mirror.complete_bet_or_raise_to(amount)
            else:
                # TDA 47: short all-ins that add up to a full raise reopen the betting for a
                # seat facing at least a full raise; pokerkit looks at the last wager alone,
                # so the hand is no longer comparable in this structure
                del self.mirrors[structure]

    def choose(
        self, state: TableState, ranges: dict[Structure, Any]
    ) -> tuple[ActionKind, int | None]:
        m = the_menu(state)
        rng = self.rng
        roll = rng.random()
        if m.to_call and roll < 0.15:
            return ActionKind.FOLD, None
        shared = list(ranges.values())
        if roll < 0.55 and shared and all(r is not None for r in shared):
            low = max(r[0] for r in shared)
            high = min(r[1] for r in shared)
            if low <= high:
                kind = ActionKind.BET if B in m.actions else ActionKind.RAISE
                return kind, rng.randint(low, high)
        return (ActionKind.CALL if m.to_call else ActionKind.CHECK), None

    def plain(self, state: TableState) -> bool:
        """Fixed-limit as pokerkit plays it: no short all-in this round, no heads-up cap."""
        hand = state.hand
        assert hand is not None
        assert hand.chips.round is not None
        limits = actions.limits_for(Structure.FIXED_LIMIT, hand, state.blinds[1])
        level = state.blinds[1] if hand.street is Street.PREFLOP else 0
        for record in hand.chips.actions:
            if record.street is hand.street and record.kind in (ActionKind.BET, ActionKind.RAISE):
                if record.to - level != limits.size:
                    return False
                level = record.to
        # pokerkit counts the raises after the big blind (five bets before the flop), the
        # catalogue's sources count the blind as the bet (RRoP: a bet and three raises)
        return limits.raises < limits.cap


def short_all_in(state: TableState) -> bool:
    """An all-in short of a full raise in the open round (TDA 47), no-limit."""
    hand = state.hand
    assert hand is not None
    big = state.blinds[1]
    level = big if hand.street is Street.PREFLOP else 0
    full = big
    for record in hand.chips.actions:
        if record.street is hand.street and record.kind in (ActionKind.BET, ActionKind.RAISE):
            if record.to - level < full:
                return True
            full, level = record.to - level, record.to
    return False


@settings(max_examples=60)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_the_menu_is_pokerkits_in_no_limit_pot_limit_and_fixed_limit(seed: int) -> None:
    rng = random.Random(seed)
    dealer = MirroredDealer(random_table(rng), rng, Style())
    assert dealer.play_hand()
    assert dealer.compared or not dealer.decided  # every seat all in on its blinds: no turn
