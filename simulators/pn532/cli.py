"""``tablectl sim pn532``: one simulated PN532 module on a pty, as its own process.

Prints the pty path on the first line of standard output once the device and the control socket
are ready, then serves until SIGINT or SIGTERM. Point libnfc at it with
``LIBNFC_DEFAULT_DEVICE=pn532_uart:PATH`` or the driver with ``port = PATH``.
"""

from __future__ import annotations

import argparse
import sys

from controller.uids import UidError, uid_to_bytes
from simulators.errors import ScenarioError
from simulators.pn532.commands import COMMANDS, TagsCommand, uid_bytes
from simulators.pn532.server import Pn532Simulator
from simulators.pty_cli import (
    add_common_arguments,
    run_until_interrupted,
    serve_until_signalled,
    stderr_trace,
)
from simulators.schedule import Scenario


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's options."""
    add_common_arguments(parser, seed_help="RNG seed for faults (overrides the scenario's)")
    add = parser.add_argument
    add("--tag", action="append", default=[], metavar="UID", help="a tag on the antenna at start")


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit status 2 for bad options or a bad scenario, 1 if the
    pty, the link or the control socket cannot be made."""
    try:
        scenario = COMMANDS.load_scenario(args.scenario) if args.scenario else Scenario()
        start = [uid for c in scenario.initial if isinstance(c, TagsCommand) for uid in c.tags]
        tags = [*uid_bytes(start), *(uid_to_bytes(text) for text in args.tag)]
    except (ScenarioError, UidError) as exc:
        print(f"tablectl sim pn532: {exc}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else scenario.seed
    sim = Pn532Simulator(seed=seed, link=args.link, tags=tags, trace=stderr_trace(args.trace))
    return run_until_interrupted(
        "pn532",
        serve_until_signalled(sim, control=args.control, steps=scenario.steps),
    )
