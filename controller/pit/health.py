"""What this pit process has lost, and since when: the one account ``/healthz`` and the console
both read.

Three parts can be lost: the **broker** (the ingest's MQTT connection: the ingest reports each
connection made and each one lost or refused), the **store** (every call of a
:class:`~controller.pit.worker.StoreWorker` reports whether the database answered, and the
service probes it every few seconds, faster while it is lost, so a return is seen without a
request) and, in a process that serves the console, the **changes** of the other pit processes
(:class:`~controller.pit.changes.ChangeFeed`'s listening connection: without it, what another
process commits shows on this one's pages only at the next ``[web] live_reread``).
A part is lost from the first failure until the next success, and ``since`` is that
first failure (or the process's start, for a broker never reached): a failure repeated while
lost does not move it.

The console shows live only when nothing is lost: a page names each lost part in a banner, and
its live stream is told of every change (:mod:`controller.pit.console.streams`), so the
indicator flips without a reload.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Part = Literal["broker", "store", "changes"]
PARTS: tuple[Part, ...] = ("broker", "store", "changes")

#: Seconds between two probes of the store while it answers …
PROBE_UP = 5.0
#: … and while it is lost (its return is shown within this).
PROBE_LOST = 1.0
#: Seconds a probe waits for the store before it counts it lost (a database that hangs rather
#: than refuses: the probe's thread stays blocked, but the console says so).
PROBE_TIMEOUT = 5.0


@dataclass(frozen=True)
class Lost:
    """A part this process has lost: since when, why, and whether it was ever reached."""

    part: Part
    since: float  # Unix time
    reason: str
    reached: bool  # False: never reached since the process started
    because_of_store: bool = False  # the broker connection dropped on purpose: the store is lost


class PitHealth:
    """The broker's and the store's state in this process, and when each was lost."""

    def __init__(
        self,
        *,
        broker_connected: bool = False,
        follows_changes: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock
        self.started = clock()
        self.version = 0  # moves at every change
        self._lost: dict[Part, Lost] = {}
        self._reached: set[Part] = {"store"}  # the service opened the store before anything
        if broker_connected:  # a process that reads no broker: there is none to lose
            self._reached.add("broker")
        else:
            self._lost["broker"] = Lost("broker", self.started, "not connected yet", False)
        if follows_changes:  # the console's pages follow the other processes' commits
            self._lost["changes"] = Lost("changes", self.started, "not listening yet", False)
        self._waiters: set[asyncio.Event] = set()

    @property
    def live(self) -> bool:
        """Whether the process is connected to the broker and its store answers."""
        return not self._lost

    def ok(self, part: Part) -> bool:
        """Whether ``part`` is not lost."""
        return part not in self._lost

    def lost(self) -> list[Lost]:
        """The parts lost now, the store first (a broker dropped because of it is left out:
        the store is what to fix), the other processes' changes last (left out while the store
        is lost: they are heard through it)."""
        store = self._lost.get("store")
        out = [store] if store is not None else []
        broker = self._lost.get("broker")
        if broker is not None and not (store is not None and broker.because_of_store):
            out.append(broker)
        changes = self._lost.get("changes")
        if changes is not None and store is None:
            out.append(changes)
        return out

    def up(self, part: Part) -> None:
        """``part`` answered."""
        self._reached.add(part)
        if self._lost.pop(part, None) is not None:
            self._changed()

    def down(self, part: Part, reason: str, *, because_of_store: bool = False) -> None:
        """``part`` failed: lost from now, unless it was lost already (then only the reason is
        brought up to date)."""
        reason = (reason or "no reason given").strip().splitlines()[0][:200]
        before = self._lost.get(part)
        if before is None:
            self._lost[part] = Lost(
                part, self.clock(), reason, part in self._reached, because_of_store
            )
            self._changed()
        elif before.reason != reason or before.because_of_store != because_of_store:
            self._lost[part] = Lost(part, before.since, reason, before.reached, because_of_store)
            self._changed()

    def _changed(self) -> None:
        self.version += 1
        for waiter in self._waiters:
            waiter.set()

    def watch(self, waiter: asyncio.Event) -> None:
        """Set ``waiter`` at every change from now on (until :meth:`unwatch`)."""
        self._waiters.add(waiter)

    def unwatch(self, waiter: asyncio.Event) -> None:
        """Stop setting ``waiter``."""
        self._waiters.discard(waiter)


def describe(exc: BaseException | None) -> str:
    """An error as a reason a person reads (its type when it says nothing)."""
    if exc is None:
        return "the connection ended"
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__
