"""Serve a simulated PN532 module on a pty from the asyncio event loop.

:class:`Pn532Simulator` moves bytes between the pty and the pure :class:`Pn532Module`, wakes the
module up when a running command may complete (a tag placed, a retry period passed, an InAutoPoll
deadline), and carries out the scripted actions: tags placed and lifted, faults, unplug, replug.
Its commands (:mod:`simulators.pn532.commands`) come from the control channel (``--control``)
and the scenario's timed steps; ``docs/simulators.md`` lists them. It runs in a
``tablectl sim pn532`` process, or inside a test's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from simulators.command_vocabulary import PlaceCommand, RemoveCommand, StatusCommand
from simulators.pn532.commands import (
    COMMANDS,
    ClearCommand,
    Command,
    FaultCommand,
    TagsCommand,
    uid_bytes,
)
from simulators.pn532.faults import AntennaMode
from simulators.pn532.module import Pn532Module
from simulators.pty_simulator import PtySimulator

RETRY_PERIOD_S = 0.05
"""How often a command that is still polling (endless retries, InAutoPoll) looks again."""


class Pn532Simulator(PtySimulator):
    """One PN532 module on one pty."""

    COMMANDS = COMMANDS

    def __init__(
        self,
        *,
        seed: int | None = None,
        link: Path | str | None = None,
        tags: Iterable[bytes] = (),
        trace: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(link=link, trace=trace)
        self.module = Pn532Module(seed=seed)
        self._timer: asyncio.TimerHandle | None = None
        for uid in tags:
            self.module.antenna.place(uid)

    # ----------------------------------------------------------------- scripted actions

    def place(self, uids: Iterable[bytes]) -> None:
        """Put tags on the antenna."""
        for uid in uids:
            self.module.antenna.place(uid)
        self._kick()

    def remove(self, uids: Iterable[bytes]) -> None:
        """Lift tags off the antenna."""
        for uid in uids:
            self.module.antenna.remove(uid)
        self._kick()

    def set_tags(self, uids: Iterable[bytes]) -> None:
        """Make the antenna hold exactly these tags."""
        wanted = list(uids)
        for uid in self.module.antenna.uids:
            if uid not in wanted:
                self.module.antenna.remove(uid)
        self.place(wanted)

    def set_flap(self, rate: float) -> None:
        """Each tag misses an activation with this probability."""
        self.module.faults.flap_rate = rate
        self._kick()

    def set_stacked_miss(self, rate: float) -> None:
        """With two or more tags, an activation loses some of them with this probability."""
        self.module.faults.stacked_miss_rate = rate
        self._kick()

    def set_corrupt(self, rate: float) -> None:
        """Each response frame is sent with a bit flipped with this probability."""
        self.module.faults.corrupt_rate = rate

    def set_antenna(self, mode: AntennaMode | None) -> None:
        """Break the antenna (or repair it with ``None``)."""
        self.module.faults.antenna = mode
        self._kick()

    # ----------------------------------------------------------------- commands

    def apply(self, command: Command) -> dict[str, Any]:
        """Carry out a validated command; return the reply's fields."""
        if isinstance(command, PlaceCommand):
            self.place(uid_bytes(command.place))
        elif isinstance(command, RemoveCommand):
            self.remove(uid_bytes(command.remove))
        elif isinstance(command, TagsCommand):
            self.set_tags(uid_bytes(command.tags))
        elif isinstance(command, FaultCommand):
            self._fault(command)
        elif isinstance(command, ClearCommand):
            self._clear(command.clear)
        elif isinstance(command, StatusCommand):
            return self.status()
        return {"tags": [uid.hex() for uid in self.module.antenna.uids]}

    def _fault(self, command: FaultCommand) -> None:
        rate = command.rate or 0.0
        if command.fault == "flap":
            self.set_flap(rate)
        elif command.fault == "stacked_miss":
            self.set_stacked_miss(rate)
        elif command.fault == "corrupt":
            self.set_corrupt(rate)
        elif command.fault == "antenna":
            self.set_antenna(command.mode)
        elif command.fault == "unplug":
            self.unplug()
        else:
            self.replug()

    def _clear(self, name: str) -> None:
        if name in ("flap", "all"):
            self.set_flap(0.0)
        if name in ("stacked_miss", "all"):
            self.set_stacked_miss(0.0)
        if name in ("corrupt", "all"):
            self.set_corrupt(0.0)
        if name in ("antenna", "all"):
            self.set_antenna(None)

    def status(self) -> dict[str, Any]:
        """What the simulator shows to a curious test or operator."""
        module = self.module
        stats = module.stats
        return {
            "device": self.device,
            "path": self.path,
            "plugged": self.plugged,
            "asleep": module.asleep,
            "sam_mode": module.chip.sam_mode,
            "tags": [uid.hex() for uid in module.antenna.uids],
            "faults": module.faults.describe(),
            "commands": {f"{code:02x}": count for code, count in sorted(stats.commands.items())},
            "aborts": stats.aborts,
            "nacks": stats.nacks,
            "errors_sent": stats.errors_sent,
            "garbage_bytes": stats.garbage_bytes,
            "wakeups": stats.wakeups,
            "unplugs": self.unplugs,
            "journal": list(stats.journal)[-64:],
        }

    # ----------------------------------------------------------------- byte pump

    def _power_on(self) -> None:
        self.module.power_on()

    def _cancel_pending(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _received(self, data: bytes, now: float) -> None:
        self._send(self.module.receive(data, now))
        self._schedule()

    def _kick(self) -> None:
        if self._loop is None or not self.cable.plugged:
            return
        self._send(self.module.advance(self._loop.time()))
        self._schedule()

    def _schedule(self) -> None:
        """Look again while a command is still polling, and at its deadline."""
        self._cancel_pending()
        if self.module.busy_with is None or self._loop is None:
            return
        when = self._loop.time() + RETRY_PERIOD_S
        deadline = self.module.next_deadline
        if deadline is not None:
            when = min(when, deadline)
        self._timer = self._loop.call_at(when, self._kick)
