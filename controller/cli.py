"""The ``tablectl`` command line."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from controller import __version__

Handler = Callable[[argparse.Namespace], int]

#: Each verb and the module that registers it (``add_parsers(subparsers)``), in --help order.
#: Only the module of the verb given is imported: ``tablectl run`` starts without the
#: simulators, ``tablectl sim`` without the daemon.
VERB_MODULES = {
    "demo": "simulators.demo_cli",
    "deck": "controller.deck_cli",
    "scenario": "simulators.scenario.cli",
    "sim": "simulators.cli",
    "pit": "controller.pit.cli",
    "station": "controller.station.cli",
    "run": "controller.shell.cli_run",
    "config": "controller.shell.cli_run",
    "journal": "controller.shell.cli_journal",
    "tail": "controller.shell.cli_client",
    "dealer": "controller.shell.cli_client",
    "keys": "controller.shell.cli_setup",
    "broker": "controller.shell.cli_setup",
    "version": "controller.build_identity",
}


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of ``verb`` (every verb when it is not one)."""
    parser = argparse.ArgumentParser(prog="tablectl", description="Texas Hold'em table controller.")
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    wanted = [VERB_MODULES[verb]] if verb in VERB_MODULES else list(VERB_MODULES.values())
    for name in dict.fromkeys(wanted):
        importlib.import_module(name).add_parsers(verbs)
    return parser


def asks_version(arguments: Sequence[str]) -> bool:
    """Whether ``--version`` comes before any ``--help``: argparse acts on the first of them
    and exits, and the version needs no verb's module (all of them are a second of imports)."""
    for argument in arguments:
        if argument == "--version":
            return True
        if argument in ("-h", "--help"):
            return False
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    verb = next((a for a in arguments if not a.startswith("-")), None)
    if verb is None and asks_version(arguments):
        verb = "version"  # its module alone: the cheapest, and --version prints the same
    parser = build_parser(verb)
    args = parser.parse_args(arguments)
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
