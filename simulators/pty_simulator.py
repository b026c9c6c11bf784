"""A simulated serial device served on a pty from the asyncio event loop.

What the PN532 and FEIG simulators share: the cable (:class:`~simulators.pty.PtyCable`), start
and stop (and ``async with``), unplug and replug (a replugged device is freshly powered), and the
byte pump that hands what the driver wrote to the device model and writes its answers back. Each
simulator says what its model does with the bytes (:meth:`PtySimulator._received`), how it powers
up (:meth:`PtySimulator._power_on`), what is pending when the cable is pulled
(:meth:`PtySimulator._cancel_pending`) and what its commands do (``COMMANDS`` and ``apply``, as
every :class:`~simulators.command_vocabulary.CommandedDevice`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

from simulators.command_vocabulary import CommandedDevice
from simulators.pty import PtyCable


class PtySimulator(CommandedDevice):
    """One simulated device on one pty."""

    def __init__(
        self, *, link: Path | str | None = None, trace: Callable[[str], None] | None = None
    ) -> None:
        self.cable = PtyCable(link)
        self._trace = trace
        self._loop: asyncio.AbstractEventLoop | None = None
        self.unplugs = 0

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

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> str:
        """Open the pty and start serving; returns the device path."""
        self._loop = asyncio.get_running_loop()
        self._plug()
        return self.device

    def stop(self) -> None:
        """Stop serving and close the pty."""
        self._unplug()

    async def __aenter__(self) -> Self:
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
        """Pull the cable: the pty closes and the symlink disappears; the device loses power."""
        if self.cable.plugged:
            self.unplugs += 1
        self._unplug()

    def replug(self) -> str:
        """Plug the cable back: a fresh pty, the symlink re-pointed, the device powered up."""
        if not self.cable.plugged:
            self._power_on()
            self._plug()
        return self.device

    def now(self) -> float:
        """The simulator's clock (the event loop's)."""
        return self._require_loop().time()

    # ----------------------------------------------------------------- what a device does

    def _received(self, data: bytes, now: float) -> None:
        """The driver wrote ``data``: hand it to the model and send (or schedule) its answers."""
        raise NotImplementedError

    def _power_on(self) -> None:
        """The device is powered up again (replug): it forgets what it was doing."""
        raise NotImplementedError

    def _cancel_pending(self) -> None:
        """The cable is pulled: drop the answers and wake-ups still scheduled."""

    # ----------------------------------------------------------------- byte pump

    def _plug(self) -> None:
        loop = self._require_loop()
        self.cable.plug()
        loop.add_reader(self.cable.master_fd, self._on_readable)
        self._log(f"plugged {self.cable.path}")

    def _unplug(self) -> None:
        self._cancel_pending()
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
        self._received(data, self._require_loop().time())

    def _send(self, data: bytes) -> None:
        if data and self.cable.plugged:
            self._log(f"-> {data.hex(' ')}")
            self.cable.write(data)

    def _log(self, line: str) -> None:
        if self._trace is not None:
            self._trace(line)
