"""``tablectl sim feig``: a line of simulated FEIG ID ISC.M02.M8 readers on a pty, as its own
process.

Prints the pty path on the first line of standard output once the line and the control socket
are ready, then serves until SIGINT or SIGTERM. Point the ``feig-isc`` driver at it with
``port = PATH`` and one antenna entry per zone, naming the reader's COM-ADR (``--readers``) and
its ANT_NR.
"""

from __future__ import annotations

import argparse
import sys

from simulators.errors import ScenarioError
from simulators.feig.commands import COMMANDS, Command
from simulators.feig.reader import ANTENNAS, SUPPORTED
from simulators.feig.server import FeigSimulator
from simulators.pty_cli import (
    add_common_arguments,
    run_until_interrupted,
    serve_until_signalled,
    stderr_trace,
)
from simulators.schedule import Scenario


def _addresses(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part, 0) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of COM-ADRs") from None
    return values


def _transponders(text: str) -> frozenset[str]:
    names = frozenset(part.strip() for part in text.split(","))
    unknown = sorted(names - set(SUPPORTED))
    if unknown or not names:
        known = ", ".join(SUPPORTED)
        raise argparse.ArgumentTypeError(f"{text!r}: the transponders are {known}")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's options."""
    add_common_arguments(parser, seed_help="RNG seed (overrides the scenario's)")
    add = parser.add_argument
    add("--readers", type=_addresses, default=(0,), metavar="ADR[,ADR…]",
        help="COM-ADRs of the line's readers, 8 antennas each (default: one, at 0)")  # fmt: skip
    add("--antennas", type=int, default=None, metavar="N",
        help="the line's antennas, numbered 1… across its readers (default: 8 each)")  # fmt: skip
    add(
        "--baud", type=int, default=115200, metavar="N", help="line speed to pace answers (0: none)"
    )
    add("--parity", choices=("none", "even", "odd"), default="even",
        help="the readers' CFG1 parity (FEIG ships e,8,1)")  # fmt: skip
    add("--no-rf-timing", action="store_true", help="answer without the readers' working time")
    add("--strict-baud", action="store_true",
        help="answer only a host that set the line to the readers' own baud rate")  # fmt: skip
    add("--transponders", type=_transponders, default=frozenset(SUPPORTED), metavar="LIST",
        help="what the readers read: iso15693,iso14443a (an M02.M8 as sold: iso15693)")  # fmt: skip
    add("--crosstalk", type=float, default=0.0, metavar="RATE", help="reads on a neighbour antenna")
    add("--stacked-miss", type=float, default=0.0, metavar="RATE",
        help="chance a stack's third card and those under it are not read")  # fmt: skip
    add("--spread", type=int, action="append", default=[], metavar="ANTENNA",
        help="an antenna whose cards lie side by side, never stacked (e.g. the board)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit status 2 for bad options or a bad scenario, 1 if the pty,
    the link or the control socket cannot be made."""
    problems = []
    most = ANTENNAS * len(args.readers)
    if args.antennas is not None and not 1 <= args.antennas <= most:
        readers = f"{len(args.readers)} reader{'s' if len(args.readers) > 1 else ''}"
        problems.append(
            f"--antennas {args.antennas} is not 1…{most} ({readers} of 8 antennas: "
            "--readers 1,2 puts two on the line)"
        )
    if len(set(args.readers)) != len(args.readers) or any(not 0 <= a <= 254 for a in args.readers):
        problems.append("--readers needs distinct COM-ADRs, 0…254")
    if args.baud < 0:
        problems.append("--baud must not be negative")
    for name in ("crosstalk", "stacked_miss"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            problems.append(f"--{name.replace('_', '-')} must be from 0 to 1")
    try:
        scenario = COMMANDS.load_scenario(args.scenario) if args.scenario else Scenario()
    except ScenarioError as exc:
        problems.append(str(exc))
    if problems:
        print(f"tablectl sim feig: {problems[0]}", file=sys.stderr)
        return 2
    return run_until_interrupted("feig", _serve(args, scenario))


async def _serve(args: argparse.Namespace, scenario: Scenario[Command]) -> None:
    seed = args.seed if args.seed is not None else scenario.seed
    sim = FeigSimulator(
        addresses=args.readers,
        antennas=args.antennas,
        seed=seed,
        link=args.link,
        baud=args.baud,
        parity=args.parity,
        rf_timing=not args.no_rf_timing,
        transponders=args.transponders,
        strict_baud=args.strict_baud,
        trace=stderr_trace(args.trace),
    )
    radio = sim.line.radio
    sim.start_rates = {"crosstalk": args.crosstalk, "stacked_miss": args.stacked_miss}
    radio.crosstalk = args.crosstalk
    radio.stacked_miss = args.stacked_miss
    radio.spread = set(args.spread)
    await serve_until_signalled(sim, control=args.control, steps=scenario.steps)
