"""``tablectl sim shuffler``: a TSP/1 card shuffler on a pty, as its own process.

Prints the device path once it is ready (then the control socket, if any, is listening too).
Faults come from a scenario file (``--scenario``) or at run time from the control channel
(``--control``); both are described in ``docs/simulators.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from pathlib import Path

from controller.cards import parse_card
from drivers.shuffler.codes import Capability
from simulators.errors import ScenarioError
from simulators.pty import PtyCable
from simulators.pty_cli import serve_until_signalled
from simulators.shuffler.bias import Bias, parse_bias
from simulators.shuffler.commands import COMMANDS
from simulators.shuffler.firmware import default_firmware
from simulators.shuffler.model import DEFAULT_CAPS, DeviceConfig, ShufflerModel
from simulators.shuffler.server import SimulatorServer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's options."""
    parser.add_argument("--link", type=Path, help="make PATH a symlink to the pty")
    parser.add_argument("--control", type=Path, help="listen for JSON-line commands on PATH")
    parser.add_argument("--scenario", type=Path, help="TOML fault schedule")
    deck = parser.add_mutually_exclusive_group()
    deck.add_argument("--seed", type=int, help="shuffle reproducibly from this seed")
    deck.add_argument("--order", help="deck order top first, e.g. As,Kd,7h (rest canonical)")
    parser.add_argument(
        "--bias",
        type=_bias,
        help="shuffle badly on purpose: riffles=N (N riffle shuffles of the last deck) and/or "
        "stuck=POSITION (that position's card stays); with --seed, reproducibly",
    )
    parser.add_argument("--firmware", type=Path, help="firmware image (default: approved one)")
    parser.add_argument(
        "--unapproved", action="store_true", help="run a patched, unapproved firmware image"
    )
    parser.add_argument(
        "--no-live", action="store_true", help="no LIVE_CARD_IDS capability (always withhold)"
    )
    parser.add_argument(
        "--no-time-sync", action="store_true", help="no TIME_SYNC capability (no settable clock)"
    )
    parser.add_argument("--serial", default="SIM-0001", help="device serial number")
    parser.add_argument("--shuffle-time", type=float, default=0.5, help="seconds per shuffle")
    parser.add_argument("--baud", type=int, default=115200, help="pace output (0: no pacing)")
    parser.add_argument("--chunk", type=int, default=64, help="largest write, in bytes")
    parser.add_argument("--rng-seed", type=int, help="seed for boot ids and fault rolls")


def _bias(text: str) -> Bias:
    try:
        return parse_bias(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_model(args: argparse.Namespace, rng: random.Random, now: float) -> ShufflerModel:
    """The device model the options describe."""
    image = (args.firmware or default_firmware()).read_bytes()
    if args.unapproved:
        image += b"\npatched build, not approved\n"
    order = None
    if args.order and args.bias:
        raise ValueError("--bias shuffles the deck taken back: it cannot go with --order")
    if args.order:
        order = tuple(parse_card(text) for text in args.order.split(",") if text.strip())
    caps = DEFAULT_CAPS & ~Capability.LIVE_CARD_IDS if args.no_live else DEFAULT_CAPS
    if args.no_time_sync:
        caps &= ~Capability.TIME_SYNC
    config = DeviceConfig(
        firmware=image,
        serial=args.serial,
        caps=caps,
        seed=args.seed,
        order=order,
        shuffle_time=args.shuffle_time,
        bias=args.bias,
    )
    return ShufflerModel(config, rng, now)


async def _main(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    rng = random.Random(args.rng_seed)
    steps = COMMANDS.load_scenario(args.scenario).steps if args.scenario else ()
    model = build_model(args, rng, loop.time())
    server = SimulatorServer(model, PtyCable(args.link), baud=args.baud, chunk=args.chunk, rng=rng)
    await serve_until_signalled(server, control=args.control, steps=steps)
    return 0


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM or SIGINT."""
    try:
        return asyncio.run(_main(args))
    except (ScenarioError, OSError, ValueError) as exc:
        print(f"tablectl sim shuffler: {exc}", file=sys.stderr)
        return 2
