"""``tablectl sim KIND``: run one device simulator as its own process.

Each simulator module provides ``add_arguments(parser)`` and ``run(args) -> int``; it is imported
only when chosen, so one simulator's dependencies never slow down or break another.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import signal
from typing import Any, Protocol, cast

#: simulator kind → module providing add_arguments() and run().
SIMULATORS: dict[str, str] = {
    "feig": "simulators.feig.cli",
    "pn532": "simulators.pn532.cli",
    "rfid": "simulators.rfid.cli",
    "shuffler": "simulators.shuffler",
}


class SimulatorModule(Protocol):
    """What a simulator module exposes to the command line."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the simulator's own options."""

    def run(self, args: argparse.Namespace) -> int:
        """Run until stopped; return the exit status."""


def _load(kind: str) -> SimulatorModule:
    return cast(SimulatorModule, importlib.import_module(SIMULATORS[kind]))


def add_parsers(subparsers: Any) -> None:
    """Register the ``sim`` verb and one sub-verb per simulator."""
    sim = subparsers.add_parser("sim", help="run a device simulator on a pty")
    kinds = sim.add_subparsers(dest="sim_kind", metavar="KIND", required=True)
    for kind in SIMULATORS:
        parser = kinds.add_parser(kind, help=f"the {kind} simulator")
        _load(kind).add_arguments(parser)
        parser.set_defaults(handler=_run)


def _run(args: Any) -> int:
    # a simulator that stops answering can be asked where it is stuck: kill -USR1 <pid>
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return _load(args.sim_kind).run(args)
