"""``tablectl sim feig``: one simulated FEIG ID ISC reader on a pty, as its own process.

Prints the pty path on the first line of standard output once the device and the control socket
are ready, then serves until SIGINT or SIGTERM. Point the ``feig-isc`` driver at it with
``port = PATH``.
"""

from __future__ import annotations

import argparse
import sys

from simulators.errors import ScenarioError
from simulators.feig import control
from simulators.feig.scenario import FeigScenario, load_scenario
from simulators.feig.server import FeigSimulator
from simulators.pty_cli import (
    add_common_arguments,
    run_until_interrupted,
    serve_until_signalled,
    stderr_trace,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's options."""
    add_common_arguments(parser, seed_help="RNG seed (overrides the scenario's)")
    add = parser.add_argument
    add("--antennas", type=int, default=16, metavar="N", help="multiplexed antennas, 1…32")
    add(
        "--baud", type=int, default=115200, metavar="N", help="line speed to pace answers (0: none)"
    )
    add("--no-rf-timing", action="store_true", help="answer without the inventory's RF time")
    add("--crosstalk", type=float, default=0.0, metavar="RATE", help="reads on a neighbour antenna")
    add("--stacked-miss", type=float, default=0.0, metavar="RATE",
        help="chance a stack's third card and those under it are not read")  # fmt: skip
    add("--spread", type=int, action="append", default=[], metavar="ANTENNA",
        help="an antenna whose cards lie side by side, never stacked (e.g. the board)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit status 2 for bad options or a bad scenario, 1 if the pty,
    the link or the control socket cannot be made."""
    problems = []
    if not 1 <= args.antennas <= 32:
        problems.append(f"--antennas {args.antennas} is not 1…32")
    if args.baud < 0:
        problems.append("--baud must not be negative")
    for name in ("crosstalk", "stacked_miss"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            problems.append(f"--{name.replace('_', '-')} must be from 0 to 1")
    try:
        scenario = load_scenario(args.scenario) if args.scenario else FeigScenario()
    except ScenarioError as exc:
        problems.append(str(exc))
    if problems:
        print(f"tablectl sim feig: {problems[0]}", file=sys.stderr)
        return 2
    return run_until_interrupted("feig", _serve(args, scenario))


async def _serve(args: argparse.Namespace, scenario: FeigScenario) -> None:
    seed = args.seed if args.seed is not None else scenario.seed
    sim = FeigSimulator(
        antennas=args.antennas,
        seed=seed,
        link=args.link,
        baud=args.baud,
        rf_timing=not args.no_rf_timing,
        trace=stderr_trace(args.trace),
    )
    sim.start_rates = {"crosstalk": args.crosstalk, "stacked_miss": args.stacked_miss}
    sim.reader.radio.crosstalk = args.crosstalk
    sim.reader.radio.stacked_miss = args.stacked_miss
    sim.reader.radio.spread = set(args.spread)
    await serve_until_signalled(
        sim, control=args.control, handle=control.handle, steps=scenario.steps, apply=control.apply
    )
