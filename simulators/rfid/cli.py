"""``tablectl sim rfid``: the TSP/1 reference reader on a pty, as its own process.

Prints the pty path on the first line of standard output once the device (and the control
socket, if any) is ready, then serves until SIGINT or SIGTERM. Point the ``tsp-reader`` driver at
it with ``port = PATH``. The commands of ``--control`` and ``--scenario`` are described in
``docs/simulators.md``.

``tablectl sim rfid deal`` and ``tablectl sim rfid place`` do not run a reader: they put cards on
a running one, as a dealer's hands do (:mod:`simulators.rfid.hands`).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from pathlib import Path

from controller.uids import UidError, uid_to_bytes
from simulators.errors import ScenarioError
from simulators.pty import PtyCable
from simulators.pty_cli import run_until_interrupted, serve_until_signalled
from simulators.rfid import hands
from simulators.rfid.commands import COMMANDS, Command, TagsCommand
from simulators.rfid.model import ReaderConfig, ReaderModel
from simulators.rfid.server import ReaderPtyServer
from simulators.schedule import Scenario


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's options."""
    add = parser.add_argument
    add("--link", type=Path, metavar="PATH", help="symlink PATH to the pty (re-pointed on replug)")
    add("--control", type=Path, metavar="PATH", help="Unix socket for JSON-line control commands")
    add("--scenario", type=Path, metavar="FILE", help="TOML file of tags and timed commands")
    add("--seed", type=int, metavar="N", help="RNG seed (overrides the scenario's)")
    add("--antennas", type=int, default=16, metavar="N", help="antennas of the reader (1-32)")
    add("--serial", default="RDR-0001", help="serial number IDENTIFY reports")
    add(
        "--tag",
        action="append",
        default=[],
        metavar="ANTENNA:UID",
        help="a tag lying on an antenna at start (repeatable)",
    )
    add("--max-queue", type=int, default=64, metavar="N", help="events the reader holds")
    add("--baud", type=int, default=115200, help="pace output at this rate (0: no pacing)")
    add("--chunk", type=int, default=64, help="largest write, in bytes")
    # optional sub-actions: without one, ``tablectl sim rfid [options]`` runs the simulator
    hands.add_parsers(parser)


def _initial_tags(args: argparse.Namespace, scenario: Scenario[Command]) -> list[tuple[int, bytes]]:
    tags = []
    for command in scenario.initial:
        assert isinstance(command, TagsCommand)
        for antenna, uids in command.tags.items():
            if antenna >= args.antennas:
                raise ValueError(f"tags: the reader has antennas 0 to {args.antennas - 1}")
            tags += [(antenna, bytes.fromhex(uid)) for uid in uids]
    for text in args.tag:
        antenna, sep, uid = text.partition(":")
        if not sep or not antenna.isdigit() or int(antenna) >= args.antennas:
            below = args.antennas
            raise ValueError(f"--tag {text!r}: expected ANTENNA:UID with ANTENNA below {below}")
        tags.append((int(antenna), uid_to_bytes(uid)))
    return tags


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit 2 for bad options or a bad scenario, 1 if the pty, the
    link or the control socket cannot be made."""
    try:
        if not 1 <= args.antennas <= 32:
            raise ValueError("--antennas must be 1 to 32")
        scenario = COMMANDS.load_scenario(args.scenario) if args.scenario else Scenario()
        tags = _initial_tags(args, scenario)
    except (ScenarioError, UidError, ValueError) as exc:
        print(f"tablectl sim rfid: {exc}", file=sys.stderr)
        return 2
    return run_until_interrupted("rfid", _serve(args, scenario, tags))


async def _serve(
    args: argparse.Namespace, scenario: Scenario[Command], tags: list[tuple[int, bytes]]
) -> None:
    loop = asyncio.get_running_loop()
    seed = args.seed if args.seed is not None else scenario.seed
    rng = random.Random(seed)
    config = ReaderConfig(n_antennas=args.antennas, serial=args.serial, max_queue=args.max_queue)
    model = ReaderModel(config, rng, loop.time())
    server = ReaderPtyServer(model, PtyCable(args.link), baud=args.baud, chunk=args.chunk, rng=rng)
    for antenna, uid in tags:
        model.place(antenna, [uid])
    await serve_until_signalled(server, control=args.control, steps=scenario.steps)
