"""The ``tablectl`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from controller import __version__, deck_cli, demo
from controller.shell import cli as shell_cli
from simulators import cli as sim_cli
from simulators.scenario import cli as scenario_cli

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every verb."""
    parser = argparse.ArgumentParser(prog="tablectl", description="Texas Hold'em table controller.")
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    demo.add_parser(verbs)
    deck_cli.add_parser(verbs)
    scenario_cli.add_parser(verbs)
    sim_cli.add_parser(verbs)
    shell_cli.add_parsers(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except BrokenPipeError:
        # the reader went away (``tablectl … | head``): not an error worth a traceback
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
