"""``tablectl sim feig``: one simulated FEIG ID ISC reader on a pty, as its own process.

Prints the pty path on the first line of standard output once the device and the control socket
are ready, then serves until SIGINT or SIGTERM. Point the ``feig-isc`` driver at it with
``port = PATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from simulators.errors import ScenarioError
from simulators.feig import control
from simulators.feig.scenario import FeigScenario, load_scenario
from simulators.feig.server import FeigSimulator


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's options."""
    add = parser.add_argument
    add("--link", type=Path, metavar="PATH", help="symlink PATH to the pty (re-pointed on replug)")
    add("--scenario", type=Path, metavar="FILE", help="TOML file of timed tags and faults")
    add("--control", type=Path, metavar="PATH", help="Unix socket for JSON-line control requests")
    add("--seed", type=int, metavar="N", help="RNG seed (overrides the scenario's)")
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
    add("--trace", action="store_true", help="log every byte exchanged to standard error")


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
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(args, scenario))
    except OSError as exc:  # no room for the link or the control socket, no ptys left…
        print(f"tablectl sim feig: {exc}", file=sys.stderr)
        return 1
    return 0


async def _serve(args: argparse.Namespace, scenario: FeigScenario) -> None:
    def trace(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    seed = args.seed if args.seed is not None else scenario.seed
    sim = FeigSimulator(
        antennas=args.antennas,
        seed=seed,
        link=args.link,
        baud=args.baud,
        rf_timing=not args.no_rf_timing,
        trace=trace if args.trace else None,
    )
    sim.start_rates = {"crosstalk": args.crosstalk, "stacked_miss": args.stacked_miss}
    sim.reader.radio.crosstalk = args.crosstalk
    sim.reader.radio.stacked_miss = args.stacked_miss
    sim.reader.radio.spread = set(args.spread)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with sim:
        server = await control.serve(sim, args.control) if args.control else None
        print(sim.cable.path, flush=True)
        script = asyncio.create_task(_play(sim, scenario, loop.time()))
        try:
            await stop.wait()
        finally:
            script.cancel()
            if server is not None:
                server.close()
                with contextlib.suppress(FileNotFoundError):
                    args.control.unlink()


async def _play(sim: FeigSimulator, scenario: FeigScenario, start: float) -> None:
    loop = asyncio.get_running_loop()
    for at, command in scenario.steps:
        await asyncio.sleep(max(0.0, start + at - loop.time()))
        control.apply(sim, command)
