"""Serve a simulated PN532 module on a pty from the asyncio event loop.

:class:`Pn532Simulator` moves bytes between the pty and the pure :class:`Pn532Module`, wakes the
module up when a running command may complete (a tag placed, a retry period passed, an InAutoPoll
deadline), and carries out the scripted actions: tags placed and lifted, faults, unplug, replug.
It runs in a ``tablectl sim pn532`` process, or inside a test's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType

from simulators.pn532.faults import AntennaMode
from simulators.pn532.module import Pn532Module
from simulators.pty import PtyCable

RETRY_PERIOD_S = 0.05
"""How often a command that is still polling (endless retries, InAutoPoll) looks again."""


class Pn532Simulator:
    """One PN532 module on one pty."""

    def __init__(
        self,
        *,
        seed: int | None = None,
        link: Path | str | None = None,
        tags: Iterable[bytes] = (),
        trace: Callable[[str], None] | None = None,
    ) -> None:
        self.module = Pn532Module(seed=seed)
        self.cable = PtyCable(link)
        self._trace = trace
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.unplugs = 0
        for uid in tags:
            self.module.antenna.place(uid)

    @property
    def device(self) -> str:
        """The path a driver should open: the symlink if one was asked for, else the pty."""
        return self.cable.device

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

    async def __aenter__(self) -> Pn532Simulator:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

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

    def unplug(self) -> None:
        """Pull the cable: the pty closes and the symlink disappears; the chip loses power."""
        if self.cable.plugged:
            self.unplugs += 1
        self._unplug()

    def replug(self) -> str:
        """Plug the cable back: a fresh pty, the symlink re-pointed, the chip freshly powered."""
        if not self.cable.plugged:
            self.module.power_on()
            self._plug()
        return self.device

    # ----------------------------------------------------------------- byte pump

    def _plug(self) -> None:
        loop = self._require_loop()
        self.cable.plug()
        loop.add_reader(self.cable.master_fd, self._on_readable)
        self._log(f"plugged {self.cable.path}")

    def _unplug(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
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
        self._send(self.module.receive(data, self._require_loop().time()))
        self._schedule()

    def _kick(self) -> None:
        if self._loop is None or not self.cable.plugged:
            return
        self._send(self.module.advance(self._loop.time()))
        self._schedule()

    def _send(self, data: bytes) -> None:
        if data and self.cable.plugged:
            self._log(f"-> {data.hex(' ')}")
            self.cable.write(data)

    def _schedule(self) -> None:
        """Look again while a command is still polling, and at its deadline."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.module.busy_with is None or self._loop is None:
            return
        when = self._loop.time() + RETRY_PERIOD_S
        deadline = self.module.next_deadline
        if deadline is not None:
            when = min(when, deadline)
        self._timer = self._loop.call_at(when, self._kick)

    def _log(self, line: str) -> None:
        if self._trace is not None:
            self._trace(line)
