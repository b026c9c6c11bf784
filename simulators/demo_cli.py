"""``tablectl demo``: watch an automatic dealer play hands, irregularities included.

By default the whole table runs on this machine: the shuffler and reader simulators and the
daemon as processes, publishing to a broker (``--broker URL``, a mosquitto of its own when the
binary is installed, or none: the journal alone). An automatic dealer plays random hands at a
six-seat table through the devices and the dealer console, and now and then makes one of the
catalogue's mistakes (an exposed card, a premature board card, a card of another deck, the
shuffler's lid opened…) so the rules can be seen at work. On a terminal the table is drawn live
from the surveillance stream (seats, stacks, the button, hole cards, the board, the pot, the
devices' health and the event stream with its rule IDs); otherwise, or with ``--json``, every
event is printed as a line. With ``--hands N`` it stops after N completed hands and exits 0;
without, it plays until Ctrl-C. ``--core`` plays straight into the pure core instead (no
processes), as fast as it can.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

#: The default pace when a person watches the live view: slow enough to follow each move.
WATCHED_PACE = 0.3
WATCHED_PACE_CORE = 0.15


def pace_of(args: argparse.Namespace, core: bool) -> float:
    """Seconds between moves: as asked, or slow enough to watch when the view is drawn live
    (with or without ``--hands``), else none."""
    if args.pace is not None:
        return max(0.0, float(args.pace))
    watched = sys.stdout.isatty() and not args.json
    return (WATCHED_PACE_CORE if core else WATCHED_PACE) if watched else 0.0


def add_parsers(subparsers: Any) -> None:
    """Register the ``demo`` verb."""
    demo = subparsers.add_parser(
        "demo",
        help="watch an automatic dealer play hands on simulated devices",
        description=__doc__.split("\n\n")[1].replace("``", "") if __doc__ else None,
    )
    demo.add_argument("--hands", type=int, default=0, help="stop after N hands (default: never)")
    demo.add_argument("--seed", type=int, default=None, help="seed for a reproducible session")
    demo.add_argument("--profile", default="rrop-cash", help="rules profile (config/profiles)")
    demo.add_argument(
        "--irregularities", type=float, default=0.2, help="share of hands with a mistake"
    )
    demo.add_argument(
        "--broker",
        default="auto",
        metavar="URL",
        help="mqtt://host:port, or none (default: a mosquitto of its own when installed)",
    )
    demo.add_argument("--json", action="store_true", help="print event envelopes as JSON lines")
    demo.add_argument(
        "--keep", type=Path, default=None, metavar="DIR", help="keep the journal and logs in DIR"
    )
    demo.add_argument("--core", action="store_true", help="the pure core only (no devices)")
    demo.add_argument(
        "--reader",
        choices=("tsp", "feig"),
        default="tsp",
        help="the reader under the table: the TSP/1 reader, or a FEIG ID ISC reader whose "
        "antennas hear their neighbours' cards one sweep in ten (default: tsp)",
    )
    demo.add_argument(
        "--pace",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds between the dealer's moves (--core: between events); default: "
        f"{WATCHED_PACE} ({WATCHED_PACE_CORE} with --core) when the table is drawn live on a "
        "terminal, else 0, as fast as the table goes",
    )
    demo.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Play hands and show their events."""
    if args.core:
        from simulators.core_demo import run_core_demo  # noqa: PLC0415 (the verb loads its own)

        return run_core_demo(args, pace_of(args, core=True))
    import asyncio  # noqa: PLC0415

    from simulators.rig.demo import DemoOptions, run_demo  # noqa: PLC0415

    options = DemoOptions(
        hands=args.hands,
        seed=args.seed,
        profile=args.profile,
        irregularities=args.irregularities,
        broker=args.broker,
        json=args.json,
        keep=args.keep,
        pace=pace_of(args, core=False),
        reader=args.reader,
    )
    try:
        return asyncio.run(run_demo(options))
    except KeyboardInterrupt:
        return 0  # Ctrl-C: every process was stopped on the way out
