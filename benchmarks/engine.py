"""Complete hands per second: our pure core against pokerkit, on the same hands.

Hands are generated once by the automatic dealer (random tables of 2-9 seats, random legal
actions with all-ins and side pots). Then each engine plays exactly those hands, one table at a
time in this one process:

* tablectl: every input of the hand (start, shuffle, deck check, each dispensed group, each tag
  read, each action, tabling, award) applied with ``controller.table.engine.apply``, from the
  table as it was before the hand;
* pokerkit: the same hand built with ``NoLimitTexasHoldem.create_state``, hole and board cards
  dealt as ours were, the same actions, automatic showdown and pot pushing.

Times are the CPU time of this process (``time.process_time``), best of ``--repeat`` runs: on a
shared machine the wall clock also counts the time other processes had the CPU, which made the
same code measure two to four times slower from one minute to the next. Both engines are timed
the same way, so their ratio is what to compare.

Usage: ``python benchmarks/engine.py [--hands N] [--repeat R]``. Prints a table.
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.table.engine import apply
from controller.table.inputs import Input
from controller.table.state import HandState, TableState
from simulators.autoplay import AutoDealer, Style, random_table
from tests.oracle import pokerkit_stacks

STYLES = (
    Style(fold=0.12, aggressive=0.3, all_in=0.35),
    Style(fold=0.3, aggressive=0.15, all_in=0.05),
    Style(fold=0.05, aggressive=0.05, all_in=0.0),
)


@dataclass
class RecordedHand:
    """One hand: the table before it, its inputs, and the hand as our core completed it."""

    start: TableState
    inputs: list[Input]
    hand: HandState
    blinds: tuple[int, int]
    ante: int
    seats: int


def record(count: int, seed: int) -> list[RecordedHand]:
    """Play ``count`` random hands and keep what each engine needs to replay them."""
    hands: list[RecordedHand] = []
    rng = random.Random(seed)
    while len(hands) < count:
        scenario = random_table(rng)
        rules = {"odd_chip.max_per_player": 0}  # pokerkit's odd-chip convention
        scenario = scenario.model_copy(
            update={"scenario": scenario.scenario.model_copy(update={"house_rules": rules})}
        )
        dealer = AutoDealer(scenario, rng, STYLES[len(hands) % len(STYLES)])
        start = dealer.run.state
        first = len(dealer.run.inputs)
        if not dealer.play_hand():
            continue
        hand = dealer.run.state.last_hand
        assert hand is not None
        hands.append(
            RecordedHand(
                start,
                dealer.run.inputs[first:],
                hand,
                start.blinds,
                start.ante,
                len(hand.order),
            )
        )
    return hands


def run_ours(hands: list[RecordedHand]) -> float:
    """CPU seconds to play every hand through our core."""
    began = time.process_time()
    for recorded in hands:
        state = recorded.start
        for event in recorded.inputs:
            state, _ = apply(state, event)
    return time.process_time() - began


def run_pokerkit(hands: list[RecordedHand]) -> float:
    """CPU seconds to play every hand through pokerkit."""
    began = time.process_time()
    for recorded in hands:
        pokerkit_stacks(recorded.hand, recorded.blinds, recorded.ante, evaluate_once=False)
    return time.process_time() - began


def main() -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()

    hands = record(args.hands, args.seed)
    # the recorded hands are input data, not engine work: keep the collector from rescanning them
    gc.collect()
    gc.freeze()
    inputs = sum(len(h.inputs) for h in hands)
    ours = [run_ours(hands) for _ in range(args.repeat)]
    theirs = [run_pokerkit(hands) for _ in range(args.repeat)]
    best_ours, best_theirs = min(ours), min(theirs)
    print(f"# {len(hands)} hands, {statistics.mean(h.seats for h in hands):.1f} seats on average,")
    print(
        f"# {inputs} core inputs ({inputs / len(hands):.1f} a hand); "
        f"CPU time, best of {args.repeat} runs"
    )
    print(f"# Python {platform.python_version()} on {platform.machine()}")
    print()
    print(f"| {'engine':<10} | {'hands/s':>10} | {'µs/hand':>9} | {'µs/input':>9} |")
    print(f"|{'-' * 12}|{'-' * 12}|{'-' * 11}|{'-' * 11}|")
    for name, seconds in (("tablectl", best_ours), ("pokerkit", best_theirs)):
        per_input = f"{seconds / inputs * 1e6:9.2f}" if name == "tablectl" else f"{'':>9}"
        print(
            f"| {name:<10} | {len(hands) / seconds:>10,.0f} | "
            f"{seconds / len(hands) * 1e6:>9,.0f} | {per_input} |"
        )
    print()
    print(f"tablectl / pokerkit: {best_theirs / best_ours:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
