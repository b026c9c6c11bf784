"""SHF-RAND: the shuffler randomness audit's alarm rule against the simulated shuffler, fair and
biased: how often a fair shuffler raises a false alarm, and after how many decks each bias is
caught (the figures docs/reports.md gives).

Every deck is one the simulated shuffler shuffled and revealed through its own requests
(``simulators/shuffler/revealed.py``: START_SHUFFLE, the shuffle's time, REVEAL_DECK), fair or
with a ``--bias`` (simulators/shuffler/bias.py), each run from its own ``--seed``; the rule is
``controller/pit/reports/audit_rule.py``'s, the pit's: every ``--every`` decks the last
``--window`` are tested and the alarm is up while a Bonferroni-corrected p-value is below
``--alpha``. Printed:

1. each test's p-values for a fair shuffler at the fewest decks it takes: how often they fall
   below 0.05, 0.01 and 0.001 (a calibrated test: about as often);
2. ``--runs`` fair shufflers of ``--decks`` decks each: the runs with an alarm at levels from
   0.01 to 1e-6, and the Bonferroni bound over the checks (``checks × alpha``, which holds
   whatever the correlation between overlapping windows);
3. each bias, ``--biased-runs`` shufflers: the decks dealt before the first alarm at ``--alpha``
   (fewest, median, most; none within ``--limit`` decks is said) and the tests that raised it;
4. with ``--spans N``: each bias over ``--decks`` decks at once, as a report over that span
   tests them (no window): the median corrected p-value of each test, and in how many of ``N``
   shufflers the report fails it at ``--alpha``;
5. what a deck and a check cost.

    .venv/bin/python benchmarks/shuffler_audit.py [--runs 100] [--decks 10000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter
from collections.abc import Iterator

from controller.pit.reports import randomness as rnd
from controller.pit.reports.audit_rule import ALPHA, EVERY, WINDOW, Rule, follow
from simulators.shuffler.bias import Bias, parse_bias
from simulators.shuffler.revealed import revealed_decks

LEVELS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
MODES = (
    "riffles=3",
    "riffles=4",
    "riffles=5",
    "riffles=6",
    "riffles=7",
    "riffles=8",
    "stuck=1",
    "stuck=26",
)


def run_seed(base: int, run: int) -> int:
    """The simulator's ``--seed`` of run ``run``: its k-th deck is shuffled from seed + k, so the
    runs' seeds are 2^24 apart and no two runs share a deck's seed."""
    return (base << 40) + (run << 24)


def fair_decks(count: int, rng: random.Random) -> Iterator[bytes]:
    """Uniform decks, quickly (the calibration's many short runs)."""
    deck = list(range(rnd.DECK))
    for _ in range(count):
        rng.shuffle(deck)
        yield bytes(deck)


def calibration(reps: int, seed: int) -> None:
    print(f"1. each test's p-values for a fair shuffler at the fewest decks it takes ({reps} runs)")
    print()
    print("| test | decks | p < 0.05 | p < 0.01 | p < 0.001 | mean p |")
    print("|---|---:|---:|---:|---:|---:|")
    rng = random.Random(seed)
    fewest = (rnd.POSITION_DECKS, rnd.CHANGE_PAIRS + 1, rnd.SUIT_DECKS)
    for index, (test, decks) in enumerate(zip(rnd.TESTS, fewest, strict=True)):
        ps = []
        for _ in range(reps):
            check = rnd.checks(rnd.tally(fair_decks(decks, rng)))[index]
            assert check.p_value is not None
            ps.append(check.p_value)
        shares = [sum(p < level for p in ps) / reps for level in (0.05, 0.01, 0.001)]
        print(
            f"| {test} | {decks} | {shares[0]:.3f} | {shares[1]:.3f} | {shares[2]:.4f} | "
            f"{statistics.fmean(ps):.3f} |"
        )
    print()


def fair_runs(args: argparse.Namespace, rule: Rule) -> None:
    runs, decks = args.runs, args.decks
    print(
        f"2. {runs} fair shufflers, {decks:,} decks each (runs 0…{runs - 1} of --seed "
        f"{args.seed}), window {rule.window}, a check every {rule.every} decks"
    )
    print()
    lowest: list[float] = []
    by_test: dict[str, list[float]] = {t: [] for t in rnd.TESTS}
    checks_per_run = 0
    repeats = 0
    started = time.process_time()
    for run in range(runs):
        low = 1.0
        test_low = dict.fromkeys(rnd.TESTS, 1.0)
        count = 0
        for _, result in follow(revealed_decks(decks, seed=run_seed(args.seed, run)), rule):
            count += 1
            repeats += result.repeats
            for check in result.checks:
                if check.corrected is not None:
                    test_low[check.test] = min(test_low[check.test], check.corrected)
                    low = min(low, check.corrected)
        checks_per_run = count
        lowest.append(low)
        for test, value in test_low.items():
            by_test[test].append(value)
    seconds = time.process_time() - started
    print(
        "| alpha | runs with an alarm | share | positions | changes | suits | bound "
        "(checks × alpha) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for level in LEVELS:
        hit = sum(low < level for low in lowest)
        tests = [sum(v < level for v in by_test[t]) for t in rnd.TESTS]
        bound = min(1.0, checks_per_run * level)
        print(
            f"| {level:g} | {hit} of {runs} | {hit / runs:.3f} | {tests[0]} | {tests[1]} | "
            f"{tests[2]} | {bound:.4f} |"
        )
    print()
    print(
        f"checks a run: {checks_per_run}; repeated orders: {repeats}; the smallest corrected "
        f"p-value of each run: median {statistics.median(lowest):.3g}, smallest "
        f"{min(lowest):.3g} (run {lowest.index(min(lowest))})"
    )
    print(f"CPU: {seconds:.0f} s ({seconds / (runs * decks) * 1e6:.0f} µs a deck, all in)")
    print()


def biased_runs(args: argparse.Namespace, rule: Rule) -> None:
    runs = args.biased_runs
    print(
        f"3. biased shufflers, {runs} each (runs 0…{runs - 1} of --seed {args.seed}): decks "
        f"dealt when the alarm is first raised at alpha {rule.alpha:g} (window {rule.window}, "
        f"a check every {rule.every})"
    )
    print()
    print("| bias | fewest | median | most | not within | raised by |")
    print("|---|---:|---:|---:|---:|---|")
    for mode in args.modes:
        bias: Bias = parse_bias(mode)
        caught: list[int] = []
        missed = 0
        raised: Counter[str] = Counter()
        for run in range(runs):
            for dealt, result in follow(
                revealed_decks(args.limit, seed=run_seed(args.seed, run), bias=bias), rule
            ):
                if result.alarm:
                    caught.append(dealt)
                    raised.update(c.test for c in result.failed)
                    if result.repeats:
                        raised["repeats"] += 1
                    break
            else:
                missed += 1
        if caught:
            row = f"{min(caught)} | {statistics.median(caught):.0f} | {max(caught)}"
        else:
            row = "– | – | –"
        named = ", ".join(f"{t} {n}" for t, n in raised.most_common())
        print(f"| {mode} | {row} | {missed} (of {args.limit:,}) | {named} |")
    print()


def spans(args: argparse.Namespace, rule: Rule) -> None:
    runs, decks = args.spans, args.decks
    print(
        f"4. each bias over {decks:,} decks at once, as a report over that span tests them "
        f"({runs} shufflers each, runs 0…{runs - 1} of --seed {args.seed}): the median "
        f"corrected p-value of each test, and the shufflers failed at alpha {rule.alpha:g}"
    )
    print()
    print("| bias | positions | changes | suits | failed |")
    print("|---|---:|---:|---:|---:|")
    for mode in ("fair", *args.modes):
        bias = None if mode == "fair" else parse_bias(mode)
        medians: dict[str, list[float]] = {t: [] for t in rnd.TESTS}
        failed = 0
        for run in range(runs):
            t = rnd.tally(revealed_decks(decks, seed=run_seed(args.seed, run), bias=bias))
            result = rnd.verdict(t, rule.alpha)
            failed += bool(result.failed)
            for check in result.checks:
                assert check.corrected is not None
                medians[check.test].append(check.corrected)
        cells = " | ".join(f"{statistics.median(medians[t]):.2g}" for t in rnd.TESTS)
        print(f"| {mode} | {cells} | {failed} of {runs} |")
    print()


def costs(seed: int) -> None:
    decks = list(fair_decks(2000, random.Random(seed)))
    started = time.perf_counter()
    t = rnd.tally(decks)
    per_deck = (time.perf_counter() - started) / len(decks)
    started = time.perf_counter()
    for _ in range(20):
        rnd.checks(t)
    per_check = (time.perf_counter() - started) / 20
    stored = t.to_bytes()
    started = time.perf_counter()
    for _ in range(200):
        rnd.Tally.from_bytes(stored)
    per_read = (time.perf_counter() - started) / 200
    print("5. costs")
    print()
    print(f"a deck tallied: {per_deck * 1e6:.0f} µs; the three tests of a tally: "
          f"{per_check * 1e3:.1f} ms; a stored tally: {len(stored):,} bytes, read back in "
          f"{per_read * 1e6:.0f} µs")  # fmt: skip


def main(args: argparse.Namespace) -> None:
    rule = Rule(args.alpha, args.window, args.every)
    if args.calibration:
        calibration(args.calibration, args.seed)
    if args.runs:
        fair_runs(args, rule)
    if args.biased_runs:
        biased_runs(args, rule)
    if args.spans:
        spans(args, rule)
    costs(args.seed)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="fair shufflers")
    parser.add_argument("--decks", type=int, default=10_000, help="decks of each fair shuffler")
    parser.add_argument("--biased-runs", type=int, default=20, help="shufflers of each bias")
    parser.add_argument("--limit", type=int, default=20_000, help="decks a biased run goes to")
    parser.add_argument("--modes", nargs="*", default=list(MODES), help="the biases")
    parser.add_argument("--calibration", type=int, default=2000, help="runs of each test")
    parser.add_argument("--spans", type=int, default=0, help="shufflers of each bias at once")
    parser.add_argument("--alpha", type=float, default=ALPHA)
    parser.add_argument("--window", type=int, default=WINDOW)
    parser.add_argument("--every", type=int, default=EVERY)
    parser.add_argument("--seed", type=int, default=1)
    main(parser.parse_args())
