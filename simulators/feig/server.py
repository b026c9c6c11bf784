"""Serve a simulated FEIG ID ISC reader on a pty from the asyncio event loop.

:class:`FeigSimulator` moves bytes between the pty and the pure
:class:`~simulators.feig.reader.FeigReaderModel`, and paces the answers like the real reader:
the RF time of the inventory (antenna switching, anticollision rounds), then the frame's wire
time at ``baud`` (0: unpaced). It carries out the scripted actions (tags placed, lifted, slid;
faults; unplug and replug) and runs in a ``tablectl sim feig`` process or in a test's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from simulators.feig.reader import FeigReaderModel
from simulators.pty_simulator import PtySimulator


class FeigSimulator(PtySimulator):
    """One reader on one pty."""

    def __init__(
        self,
        *,
        antennas: int = 16,
        seed: int | None = None,
        link: Path | str | None = None,
        baud: int = 115200,
        rf_timing: bool = True,
        trace: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(link=link, trace=trace)
        self.reader = FeigReaderModel(antennas=antennas, seed=seed)
        self.baud = baud
        self.rf_timing = rf_timing
        self._busy_until = 0.0
        self._sends: set[asyncio.TimerHandle] = set()
        #: The RF rates it started with (``--crosstalk``…): what ``clear`` returns to.
        self.start_rates: dict[str, float] = {}

    def _power_on(self) -> None:
        self.reader.power_on()

    def _cancel_pending(self) -> None:
        for handle in self._sends:
            handle.cancel()
        self._sends.clear()

    def _received(self, data: bytes, now: float) -> None:
        loop = self._require_loop()
        for answer in self.reader.receive(data, now):
            # One request at a time on the reader: an answer waits for the request's bytes, the
            # RF work and its own bytes on the line.
            work = answer.rf_seconds if self.rf_timing else 0.0
            wire = (len(data) + len(answer.data)) * 10 / self.baud if self.baud else 0.0
            self._busy_until = max(now, self._busy_until) + work + wire
            if self._busy_until <= now:
                self._send(answer.data)
                continue
            self._sends = {h for h in self._sends if h.when() > now}
            self._sends.add(loop.call_at(self._busy_until, self._send, answer.data))
