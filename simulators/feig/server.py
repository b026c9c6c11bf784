"""Serve a simulated line of FEIG ID ISC.M02.M8 readers on a pty from the asyncio event loop.

:class:`FeigSimulator` moves bytes between the pty and the pure
:class:`~simulators.feig.bus.FeigLine`, and paces the answers as the readers would: the request's
own time on the wire, the reader's work (5 ms of reaction, the inventory's RF time from FEIG's
chart, 15 ms for an RF reset: :mod:`simulators.feig.timing`), then the answer's bytes at the
line's baud rate and parity (0 baud: unpaced). It carries out the scripted actions (tags placed,
lifted, slid; faults; unplug and replug) and runs in a ``tablectl sim feig`` process or in a
test's loop.
"""

from __future__ import annotations

import asyncio
import termios
from collections.abc import Callable
from pathlib import Path
from typing import Any

from drivers.rfid.feig.setup import CFG_INTERFACE
from simulators.feig import control
from simulators.feig.bus import FeigLine
from simulators.feig.commands import COMMANDS, Command
from simulators.feig.timing import wire_seconds
from simulators.pty_simulator import PtySimulator

#: termios speed constants → baud, for FEIG's rates.
_SPEEDS = {getattr(termios, f"B{rate}"): rate for rate in (4800, 9600, 19200, 38400, 57600, 115200)}


def line_speed(fd: int) -> int | None:
    """The baud rate a host set a pty to (a pty carries it, unlike parity), if one of FEIG's."""
    return _SPEEDS.get(termios.tcgetattr(fd)[4])


class FeigSimulator(PtySimulator):
    """One line of readers on one pty."""

    COMMANDS = COMMANDS

    def __init__(
        self,
        *,
        addresses: tuple[int, ...] = (0,),
        antennas: int | None = None,
        seed: int | None = None,
        link: Path | str | None = None,
        baud: int = 115200,
        parity: str = "even",
        rf_timing: bool = True,
        transponders: frozenset[str] = frozenset({"iso15693", "iso14443a"}),
        strict_baud: bool = False,
        trace: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(link=link, trace=trace)
        self.line = FeigLine(addresses, antennas, seed, transponders, rf_timing)
        if baud:
            for reader in self.line.readers:
                line = reader.interface.with_line(
                    address=reader.address, baudrate=baud, parity=parity
                )
                reader.eeprom[CFG_INTERFACE] = reader.ram[CFG_INTERFACE] = line.record
                reader.running_baud = baud
        self.baud = baud
        self.parity = parity
        self.strict_baud = strict_baud
        """Answer only a host that set the pty to the readers' own baud rate."""
        self.rf_timing = rf_timing
        self._busy_until = 0.0
        self._sends: set[asyncio.TimerHandle] = set()
        #: The RF rates it started with (``--crosstalk``…): what ``clear`` returns to.
        self.start_rates: dict[str, float] = {}

    def apply(self, command: Command) -> dict[str, Any]:
        """Carry out a validated command; return the reply's fields."""
        return control.apply(self, command)

    def _power_on(self) -> None:
        self.line.power_on()

    def _cancel_pending(self) -> None:
        for handle in self._sends:
            handle.cancel()
        self._sends.clear()

    def _received(self, data: bytes, now: float) -> None:
        loop = self._require_loop()
        request_wire = wire_seconds(len(data), self.baud, self.parity)
        speed = line_speed(self.cable.master_fd) if self.strict_baud else None
        for answer in self.line.receive(data, now, speed):
            # One request at a time on the line: an answer waits for the request's bytes, the
            # reader's work and its own bytes.
            work = answer.work if self.rf_timing else 0.0
            start = max(now + request_wire, self._busy_until) + work
            end = start + wire_seconds(len(answer.data), self.baud, self.parity)
            self._busy_until = end
            self.line.answered_until = end
            self._sends = {h for h in self._sends if h.when() > now}
            self._sends.add(loop.call_at(end, self._send, answer.data))
