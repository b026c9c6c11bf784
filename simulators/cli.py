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

#: What each simulator is: its one-line help, then its description.
ABOUT: dict[str, tuple[str, str]] = {
    "feig": (
        "the FEIG ID ISC.M02.M8 HF readers on an RS-485 line",
        "Simulate an RS-485 line of FEIG ID ISC.M02.M8 HF readers (ISO/IEC 15693, eight "
        "antennas each, one bus address each) on a pty, for the feig-isc driver.",
    ),
    "pn532": (
        "the PN532 NFC reader",
        "Simulate one NXP PN532 NFC module on its UART with ISO/IEC 14443 type A tags on its "
        "antenna, on a pty, for the pn532 driver and libnfc's own tools.",
    ),
    "rfid": (
        "the RFID zone reader of TSP/1",
        "Simulate the TSP/1 reference RFID reader (docs/protocols/tsp1.md): up to 32 "
        "antennas, each under the zone the driver maps it to, on a pty, for the tsp-reader driver.",
    ),
    "shuffler": (
        "the card shuffler of TSP/1",
        "Simulate a hand-forming, card-recognising shuffler speaking TSP/1 on a pty, for the "
        "tsp-shuffler driver.",
    ),
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
    sim = subparsers.add_parser(
        "sim",
        help="run a device simulator on a pty",
        description="Run one simulated device as its own process. It speaks the real device's "
        "bytes on a pseudo-terminal and prints the pty's path on the first line of standard "
        "output once it is ready; it serves until SIGINT or SIGTERM (docs/simulators.md).",
    )
    kinds = sim.add_subparsers(dest="sim_kind", metavar="KIND", required=True)
    for kind in SIMULATORS:
        text, description = ABOUT[kind]
        parser = kinds.add_parser(kind, help=text, description=description)
        _load(kind).add_arguments(parser)
        parser.set_defaults(handler=_run)


def _run(args: Any) -> int:
    # a simulator that stops answering can be asked where it is stuck: kill -USR1 <pid>
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return _load(args.sim_kind).run(args)
