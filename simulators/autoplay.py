"""An automatic dealer: plays whole random hands.

It uses the scenario runner's primitives and macros (shuffle, dispense, reads) and picks random
but legal betting actions, including all-ins that make side pots. It is seeded, so a run is
reproducible. :class:`AutoDealing` is the dealer's logic, for any table; :class:`AutoDealer`
plays it into the pure core, synchronously (the differential tests and the engine benchmark use
it); the rig's dealer plays it on the devices.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from controller.game.betting import options
from controller.rules.actions import table_limits
from controller.table.decoder import record_of
from controller.table.event_types import CommandRejected
from controller.table.inputs import Action, ActionKind, Muck, RunItTwice, StartHand, TableHand
from controller.table.state import HandState, Phase
from controller.table.streets import Street
from simulators.scenario.core_runner import CoreRunner, run_at_once
from simulators.scenario.model import Scenario, ScenarioMeta, TableSpec
from simulators.scenario.steps import StepPlayer


@dataclass(frozen=True)
class Style:
    """How the random players behave (probabilities per decision)."""

    fold: float = 0.15
    aggressive: float = 0.25
    all_in: float = 0.2  # share of aggressive actions that shove
    muck_loser: float = 0.0  # chance a hand is mucked at showdown instead of tabled


def random_table(rng: random.Random, profile: str = "rrop-cash") -> Scenario:
    """A random table: 2–9 seats among 10, stacks from very short to deep, small blinds."""
    count = rng.randint(2, 9)
    seats = sorted(rng.sample(range(1, 11), count))
    small = rng.choice([1, 1, 2, 5])
    big = small * 2
    stacks = {
        s: rng.choice([rng.randint(1, 10 * big), rng.randint(20 * big, 200 * big)]) for s in seats
    }
    ante = rng.choice([0, 0, 0, 1, small])
    return Scenario(
        scenario=ScenarioMeta(name="random", profile=profile),
        table=TableSpec(
            id="R", stacks=stacks, button=rng.choice(seats), blinds=(small, big), ante=ante
        ),
    )


class AutoDealing(StepPlayer):
    """A scenario player that makes up its steps: whole random hands."""

    def __init__(self, scenario: Scenario, rng: random.Random, style: Style = Style()) -> None:
        super().__init__(scenario)
        self.rng = rng
        self.style = style
        self.asked = ""  # the hand whose players were asked to run it twice

    async def deal_hand(self) -> bool:
        """Play one complete hand; False when fewer than two seats have chips."""
        if sum(1 for c in self.run.state.stacks.values() if c > 0) < 2:
            return False
        await self.feed(self.start_command())
        await self.shuffle("ok", None, None, self.rng.randrange(1 << 30))
        await self.deal_hole()
        for _ in range(1000):
            hand = self.run.state.hand
            if hand is None:
                return True
            await self.next_move(hand)
        raise RuntimeError("the automatic dealer could not finish the hand")

    def start_command(self) -> StartHand:
        """The ``start_hand`` of the next hand (a dealer that straddles says so here)."""
        return StartHand(self.tick())

    async def next_move(self, hand: HandState) -> None:
        """Do whatever the hand is waiting for."""
        if hand.irregular.holds:
            raise RuntimeError(f"the hand is held: {hand.irregular.holds[0]}")
        if hand.phase is Phase.BETTING:
            await self.random_action()
        elif hand.phase is Phase.BOARD:
            all_in = sum(1 for s in hand.live if hand.chips.stacks[s] > 0) <= 1
            if self.run.state.profile.run_twice_allowed and all_in and self.asked != hand.hand_id:
                # the players decide once, when the betting ends (RUN-TWICE)
                self.asked = hand.hand_id
                if self.rng.random() < 0.5:
                    await self.feed(RunItTwice(self.tick()))
            await self.deal_street(Street(hand.street + 1).label)
        elif hand.phase is Phase.SHOWDOWN:
            await self.resolve_showdown()
        elif hand.phase is Phase.AWARD:
            await self.push_award()
        else:
            raise RuntimeError(f"the automatic dealer is stuck in {hand.phase}")

    async def random_action(self) -> None:
        """One legal random action by the seat to act."""
        hand = self.run.state.hand
        assert hand is not None
        assert hand.chips.round is not None
        limits = table_limits(self.run.state, hand)  # the table's betting structure
        opts = options(hand.chips.round, hand.chips.stacks, hand.chips.folded, limits)
        assert opts is not None
        roll = self.rng.random()
        style = self.style
        if opts.to_call and roll < style.fold:
            action = Action(self.tick(), opts.seat, ActionKind.FOLD)
        elif opts.can_raise and roll < style.fold + style.aggressive:
            if self.rng.random() < style.all_in:
                to = opts.max_to
            else:
                to = self.rng.randint(
                    opts.min_to, max(opts.min_to, (opts.min_to + opts.max_to) // 3)
                )
            kind = ActionKind.BET if hand.chips.round.current == 0 else ActionKind.RAISE
            action = Action(self.tick(), opts.seat, kind, to)
        elif opts.can_check:
            action = Action(self.tick(), opts.seat, ActionKind.CHECK)
        else:
            action = Action(self.tick(), opts.seat, ActionKind.CALL)
        events = await self.feed(action)
        if isinstance(record_of(events[0]), CommandRejected):
            raise RuntimeError(f"legal action rejected: {action}: {events[0].data}")

    async def resolve_showdown(self) -> None:
        """Table or muck each live hand in showdown order."""
        hand = self.run.state.hand
        assert hand is not None
        for seat in hand.showdown.order:
            current = self.run.state.hand
            if current is None or current.phase is not Phase.SHOWDOWN:
                return
            if len(current.live) > 1 and self.rng.random() < self.style.muck_loser:
                await self.feed(Muck(self.tick(), seat))
            else:
                await self.feed(TableHand(self.tick(), seat))


class AutoDealer(CoreRunner, AutoDealing):
    """The automatic dealer at the pure core."""

    def play_hand(self) -> bool:
        """Play one complete hand; False when fewer than two seats have chips."""
        return run_at_once(self.deal_hand())
