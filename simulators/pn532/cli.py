"""``tablectl sim pn532``: one simulated PN532 module on a pty, as its own process.

Prints the pty path on the first line of standard output once the device and the control socket
are ready, then serves until SIGINT or SIGTERM. Point libnfc at it with
``LIBNFC_DEFAULT_DEVICE=pn532_uart:PATH`` or the driver with ``port = PATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from controller.uids import UidError, uid_to_bytes
from simulators.errors import ScenarioError
from simulators.pn532 import control
from simulators.pn532.scenario import Pn532Scenario, load_scenario
from simulators.pn532.server import Pn532Simulator


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's options."""
    add = parser.add_argument
    add("--link", type=Path, metavar="PATH", help="symlink PATH to the pty (re-pointed on replug)")
    add("--scenario", type=Path, metavar="FILE", help="TOML file of timed tags and faults")
    add("--control", type=Path, metavar="PATH", help="Unix socket for JSON-line control requests")
    add("--seed", type=int, metavar="N", help="RNG seed for faults (overrides the scenario's)")
    add("--tag", action="append", default=[], metavar="UID", help="a tag on the antenna at start")
    add("--trace", action="store_true", help="log every byte exchanged to standard error")


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit status 2 for bad options or a bad scenario, 1 if the
    pty, the link or the control socket cannot be made."""
    try:
        scenario = load_scenario(args.scenario) if args.scenario else Pn532Scenario()
        tags = [*scenario.tags, *(uid_to_bytes(text) for text in args.tag)]
    except (ScenarioError, UidError) as exc:
        print(f"tablectl sim pn532: {exc}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else scenario.seed
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(args, scenario, seed, tags))
    except OSError as exc:  # no room for the link or the control socket, no ptys left…
        print(f"tablectl sim pn532: {exc}", file=sys.stderr)
        return 1
    return 0


async def _serve(
    args: argparse.Namespace, scenario: Pn532Scenario, seed: int | None, tags: list[bytes]
) -> None:
    def trace(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    sim = Pn532Simulator(seed=seed, link=args.link, tags=tags, trace=trace if args.trace else None)
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


async def _play(sim: Pn532Simulator, scenario: Pn532Scenario, start: float) -> None:
    loop = asyncio.get_running_loop()
    for at, command in scenario.steps:
        await asyncio.sleep(max(0.0, start + at - loop.time()))
        control.apply(sim, command)
