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
from types import TracebackType

from simulators.feig.reader import FeigReaderModel
from simulators.pty import PtyCable


class FeigSimulator:
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
        self.reader = FeigReaderModel(antennas=antennas, seed=seed)
        self.cable = PtyCable(link)
        self.baud = baud
        self.rf_timing = rf_timing
        self._trace = trace
        self._loop: asyncio.AbstractEventLoop | None = None
        self._busy_until = 0.0
        self._sends: set[asyncio.TimerHandle] = set()
        self.unplugs = 0
        #: The RF rates it started with (``--crosstalk``…): what ``clear`` returns to.
        self.start_rates: dict[str, float] = {}

    @property
    def device(self) -> str:
        """The path a driver should open: the symlink if one was asked for, else the pty."""
        return self.cable.device

    @property
    def path(self) -> str | None:
        """The pty while plugged in, else None."""
        return self.cable.path if self.cable.plugged else None

    @property
    def plugged(self) -> bool:
        """False between :meth:`unplug` and :meth:`replug`."""
        return self.cable.plugged

    async def start(self) -> str:
        """Open the pty and start serving; returns the device path."""
        self._loop = asyncio.get_running_loop()
        self._plug()
        return self.device

    def stop(self) -> None:
        """Stop serving and close the pty."""
        self._unplug()

    async def __aenter__(self) -> FeigSimulator:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def unplug(self) -> None:
        """Pull the cable: the pty closes, the symlink goes; the reader loses power."""
        if self.cable.plugged:
            self.unplugs += 1
        self._unplug()

    def replug(self) -> str:
        """Plug the cable back: a fresh pty, the symlink re-pointed, the reader powered up."""
        if not self.cable.plugged:
            self.reader.power_on()
            self._plug()
        return self.device

    def now(self) -> float:
        """The simulator's clock (the event loop's)."""
        return self._require_loop().time()

    # ------------------------------------------------------------------ byte pump

    def _plug(self) -> None:
        loop = self._require_loop()
        self.cable.plug()
        loop.add_reader(self.cable.master_fd, self._on_readable)
        self._log(f"plugged {self.cable.path}")

    def _unplug(self) -> None:
        for handle in self._sends:
            handle.cancel()
        self._sends.clear()
        if self.cable.plugged and self._loop is not None:
            self._loop.remove_reader(self.cable.master_fd)
            self._log(f"unplugged {self.cable.path}")
        self.cable.unplug()

    def _require_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("the simulator is not started")
        return self._loop

    def _on_readable(self) -> None:
        data = self.cable.read()
        if not data:
            return
        self._log(f"<- {data.hex(' ')}")
        loop = self._require_loop()
        now = loop.time()
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

    def _send(self, data: bytes) -> None:
        if data and self.cable.plugged:
            self._log(f"-> {data.hex(' ')}")
            self.cable.write(data)

    def _log(self, line: str) -> None:
        if self._trace is not None:
            self._trace(line)
