"""What the ``tablectl sim`` commands of the pty simulators share: a simulator as its own process.

:func:`serve_until_signalled` serves any of them (a :class:`PtySimulator` or a TSP/1
:class:`TspPtyServer`): the pty path on the first line of standard output once the device and
the control socket are ready, the scenario's timed commands played from the start, until SIGINT
or SIGTERM. :func:`run_until_interrupted` runs it (but for ``shuffler``): exit status 1 when the
pty, the link or the control socket cannot be made. For a :class:`PtySimulator` (``pn532``,
``feig``), the common options too (``--link``, ``--scenario``, ``--control``, ``--seed``,
``--trace``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from simulators.control_server import control_channel
from simulators.pty_simulator import PtySimulator
from simulators.schedule import play_steps
from simulators.tsp_pty import TspPtyServer


def add_common_arguments(parser: argparse.ArgumentParser, *, seed_help: str) -> None:
    """The options every pty simulator takes."""
    add = parser.add_argument
    add("--link", type=Path, metavar="PATH", help="symlink PATH to the pty (re-pointed on replug)")
    add("--scenario", type=Path, metavar="FILE", help="TOML file of timed tags and faults")
    add("--control", type=Path, metavar="PATH", help="Unix socket for JSON-line control requests")
    add("--seed", type=int, metavar="N", help=seed_help)
    add("--trace", action="store_true", help="log every byte exchanged to standard error")


def stderr_trace(enabled: bool) -> Callable[[str], None] | None:
    """What ``--trace`` asks for: every byte exchanged, logged to standard error."""

    def trace(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return trace if enabled else None


def run_until_interrupted(name: str, serving: Coroutine[Any, Any, None]) -> int:
    """Run ``serving`` until interrupted; 0, or 1 with a one-line error if an OSError ended it."""
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serving)
    except OSError as exc:  # no room for the link or the control socket, no ptys left…
        print(f"tablectl sim {name}: {exc}", file=sys.stderr)
        return 1
    return 0


async def serve_until_signalled(
    sim: PtySimulator | TspPtyServer[Any],
    *,
    control: Path | None,
    steps: Sequence[tuple[float, Any]],
) -> None:
    """Serve ``sim`` (and its control socket) and play ``steps`` until SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with sim, control_channel(sim.handle, control):
        print(sim.path, flush=True)
        script = asyncio.create_task(play_steps(steps, sim.reply, loop.time()))
        try:
            await stop.wait()
        finally:
            script.cancel()
