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

from simulators.pn532.faults import AntennaMode
from simulators.pn532.module import Pn532Module
from simulators.pty_simulator import PtySimulator

RETRY_PERIOD_S = 0.05
"""How often a command that is still polling (endless retries, InAutoPoll) looks again."""


class Pn532Simulator(PtySimulator):
    """One PN532 module on one pty."""

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
