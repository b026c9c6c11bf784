"""The ``tablectl`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from controller import __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every verb."""
    parser = argparse.ArgumentParser(prog="tablectl", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}")
    parser.add_subparsers(dest="verb", metavar="VERB")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
