"""The bench: the shuffler and reader simulators the rig's tables run on, reused between tables.

A :class:`Bench` is ``tablectl sim shuffler`` and ``tablectl sim rfid`` (16 antennas), or
``tablectl sim feig`` (two ID ISC.M02.M8 readers on one line, 14 antennas, crosstalk on), each a
process on a pty with its control socket, their output unpaced. When a table closes the bench is
tidied while its daemon still runs (every tag lifted, the faults cleared, the lid closed), and
the next table gets it only if both simulators still run, are plugged in and hold no event for a
host; anything else (an unapproved firmware, a cable left out) gets a fresh bench.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from pathlib import Path

from controller.table.inputs import Zone
from simulators.control_client import ControlClient, ControlError
from simulators.rig.children import Child, ChildError, tablectl
from simulators.rig.errors import RigError
from simulators.rig.setup import (
    ANTENNAS,
    FEIG_READERS,
    FIRST_ANTENNA,
    ZONE_ANTENNA,
    ReaderKind,
)
from simulators.rig.world import ShufflerUnit, TableTags


class Bench:
    """The simulators: a TSP/1 shuffler and a TSP/1 reader, each a process of its own."""

    def __init__(
        self,
        directory: Path,
        shuffle_time: float,
        *,
        unapproved: bool = False,
        reader: ReaderKind = "tsp",
        crosstalk: float = 0.1,
    ) -> None:
        self.directory = directory
        self.unapproved = unapproved
        self.reader = reader
        self.sockets = Path(tempfile.mkdtemp(prefix="bench"))
        self.shuffler_control = ControlClient(self.sockets / "shuffler.ctl")
        self.reader_control = ControlClient(self.sockets / "reader.ctl")
        shuffler_args = [
            "sim", "shuffler",
            "--link", str(self.sockets / "shuffler.tty"),
            "--control", str(self.shuffler_control.path),
            "--shuffle-time", str(shuffle_time),
            "--baud", "0",
        ]  # fmt: skip
        if unapproved:
            shuffler_args.append("--unapproved")
        reader_args = [
            "sim", "rfid",
            "--link", str(self.sockets / "reader.tty"),
            "--control", str(self.reader_control.path),
            "--antennas", "16",
            "--baud", "0",
        ]  # fmt: skip
        if reader == "feig":
            # Two FEIG readers under the table on one line (14 antennas, the board's cards side
            # by side), their antennas hearing their neighbours' cards now and then.
            reader_args = [
                "sim", "feig",
                "--link", str(self.sockets / "reader.tty"),
                "--control", str(self.reader_control.path),
                "--readers", ",".join(str(a) for a in FEIG_READERS),
                "--antennas", str(len(ANTENNAS)),
                "--baud", "0", "--no-rf-timing",
                "--crosstalk", str(crosstalk),
                "--spread", str(ZONE_ANTENNA[Zone.parse("board")] + FIRST_ANTENNA["feig"]),
            ]  # fmt: skip
        self.shuffler_sim = Child("shuffler", tablectl(*shuffler_args), directory)
        self.reader_sim = Child("reader", tablectl(*reader_args), directory)
        self.shuffler = ShufflerUnit(self.shuffler_control)
        self.tags = TableTags(self.reader_control, FIRST_ANTENNA[reader])
        self.spoiled = False  # a table left it in a state a tidy-up cannot undo

    async def start(self, timeout: float) -> None:
        """Start both simulators; return once they serve their ptys and control sockets."""
        try:
            await asyncio.gather(
                self.shuffler_sim.start(first_line=True, timeout=timeout),
                self.reader_sim.start(first_line=True, timeout=timeout),
            )
        except ChildError as exc:
            await self.stop()
            raise RigError(str(exc)) from None
        await self.shuffler_control.connect()
        await self.reader_control.connect()

    async def tidy(self) -> None:
        """Lift every tag, undo the faults, clear the deck-check order: ready for a table."""
        try:
            await self.tags.reset()
            await self.reader_control.send({"clear": "all"})
            for command in ({"clear": "all"}, {"fault": "lid_close"}, {"deck_check": "ok"}):
                await self.shuffler_control.send(command)
            self.shuffler.raised.clear()
        except (ControlError, OSError):
            self.spoiled = True

    async def settled(self, timeout: float = 2.0) -> bool:
        """Wait until the reader asserts no tag and neither simulator holds an event for the
        host (the daemon took everything the tidy-up caused); False if that did not happen."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            try:
                shuffler = await self.shuffler_control.status()
                reader = await self.reader_control.status()
            except (ControlError, OSError):
                return False
            asserted = any(a.get("asserted") for a in reader.get("antennas", {}).values())
            if (
                not asserted
                and not reader.get("queued_events")
                and not shuffler.get("queued_events")
            ):
                return True
            await asyncio.sleep(0.01)  # polling the simulators, with a deadline
        return False

    async def reusable(self) -> bool:
        """Whether the next table can use this bench: running, plugged in, nothing queued."""
        if self.spoiled or not (self.shuffler_sim.running and self.reader_sim.running):
            return False
        try:
            shuffler = await self.shuffler_control.status()
            reader = await self.reader_control.status()
        except (ControlError, OSError):
            return False
        return bool(
            shuffler.get("plugged")
            and reader.get("plugged")
            and not shuffler.get("queued_events")
            and not reader.get("queued_events")
        )

    async def stop(self) -> None:
        """Stop both simulators."""
        for control in (self.shuffler_control, self.reader_control):
            with contextlib.suppress(Exception):
                await control.close()
        await asyncio.gather(self.shuffler_sim.stop(), self.reader_sim.stop())
        shutil.rmtree(self.sockets, ignore_errors=True)
