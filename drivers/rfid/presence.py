"""Presence tracking: per-zone poll results in, arrived/departed edges out.

A reader polls each zone (antenna) and learns either "at time t, zone Z saw exactly these UIDs"
or "the poll of zone Z failed". :class:`PresenceTracker` turns that stream into edges, with a
debounce against the two ways RF lies:

- a tag must be seen in ``arrive_n`` consecutive good polls before it *arrives*;
- an arrived tag must be missing from ``depart_n`` consecutive good polls before it *departs*,
  so a flapping read or a stacked card missed now and then does not make it leave.

A failed or timed-out poll is **not** a miss: silence never looks like cards leaving. After
``stale_after`` consecutive failures the zone is reported stale (and any half-counted sightings
or misses are forgotten, since they are old news). When polls succeed again the zone is fresh,
and its first good polls reconcile the view: tags really gone depart after ``depart_n`` good
polls, tags put down meanwhile arrive after ``arrive_n``.

The tracker is pure (no clock, no I/O): it stamps edges with the time it is given. It is shared
by every reader family.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Generic, TypeVar

Z = TypeVar("Z", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Debounce:
    """How many polls make an edge."""

    arrive_n: int = 2
    depart_n: int = 3
    stale_after: int = 3

    def __post_init__(self) -> None:
        for name in ("arrive_n", "depart_n", "stale_after"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


@dataclass(frozen=True, slots=True)
class Arrived(Generic[Z]):
    """A tag is now asserted present in a zone."""

    ts: datetime
    zone: Z
    uid: str


@dataclass(frozen=True, slots=True)
class Departed(Generic[Z]):
    """A tag is no longer present in a zone."""

    ts: datetime
    zone: Z
    uid: str


@dataclass(frozen=True, slots=True)
class ZoneStale(Generic[Z]):
    """A zone's view can no longer be trusted: its polls keep failing."""

    ts: datetime
    zone: Z
    failures: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ZoneFresh(Generic[Z]):
    """A zone's polls succeed (for the first time, or again after being stale)."""

    ts: datetime
    zone: Z


PresenceEdge = Arrived[Z] | Departed[Z] | ZoneStale[Z] | ZoneFresh[Z]


class ZoneHealth(Enum):
    """Whether a zone's view is current."""

    UNKNOWN = "unknown"
    """Never polled successfully, and not yet failed often enough to be stale."""
    FRESH = "fresh"
    STALE = "stale"


@dataclass(slots=True)
class _ZoneView:
    present: set[str] = field(default_factory=set)
    sightings: dict[str, int] = field(default_factory=dict)
    """Tags not yet asserted: how many consecutive good polls saw them."""
    misses: dict[str, int] = field(default_factory=dict)
    """Asserted tags: how many consecutive good polls missed them."""
    failures: int = 0
    health: ZoneHealth = ZoneHealth.UNKNOWN


class PresenceTracker(Generic[Z]):
    """Debounced presence of tags in zones."""

    def __init__(self, debounce: Debounce | None = None) -> None:
        self.debounce = debounce or Debounce()
        self._zones: dict[Z, _ZoneView] = {}

    def present(self, zone: Z) -> frozenset[str]:
        """The tags currently asserted in a zone."""
        view = self._zones.get(zone)
        return frozenset(view.present) if view else frozenset()

    def health(self, zone: Z) -> ZoneHealth:
        """Whether a zone's view is current."""
        view = self._zones.get(zone)
        return view.health if view else ZoneHealth.UNKNOWN

    def failures(self, zone: Z) -> int:
        """Consecutive failed polls of a zone."""
        view = self._zones.get(zone)
        return view.failures if view else 0

    def seen(self, ts: datetime, zone: Z, uids: Iterable[str]) -> list[PresenceEdge[Z]]:
        """A good poll: at ``ts`` the zone saw exactly ``uids``."""
        view = self._zones.setdefault(zone, _ZoneView())
        edges: list[PresenceEdge[Z]] = []
        view.failures = 0
        if view.health is not ZoneHealth.FRESH:
            view.health = ZoneHealth.FRESH
            edges.append(ZoneFresh(ts, zone))
        seen = set(uids)
        debounce = self.debounce

        for uid in sorted(view.present - seen):
            misses = view.misses.get(uid, 0) + 1
            if misses >= debounce.depart_n:
                view.present.discard(uid)
                view.misses.pop(uid, None)
                edges.append(Departed(ts, zone, uid))
            else:
                view.misses[uid] = misses
        for uid in [uid for uid in view.misses if uid in seen]:
            del view.misses[uid]  # seen again: its run of misses is broken

        for uid in [uid for uid in view.sightings if uid not in seen]:
            del view.sightings[uid]  # missed: its run of sightings is broken
        for uid in sorted(seen - view.present):
            sightings = view.sightings.get(uid, 0) + 1
            if sightings >= debounce.arrive_n:
                view.present.add(uid)
                view.sightings.pop(uid, None)
                edges.append(Arrived(ts, zone, uid))
            else:
                view.sightings[uid] = sightings
        return edges

    def failed(self, ts: datetime, zone: Z, reason: str = "") -> list[PresenceEdge[Z]]:
        """A poll of the zone failed or timed out: no news, and never a departure."""
        view = self._zones.setdefault(zone, _ZoneView())
        view.failures += 1
        if view.failures >= self.debounce.stale_after:
            return self._go_stale(ts, zone, view, reason)
        return []

    def lost(self, ts: datetime, zone: Z, reason: str = "") -> list[PresenceEdge[Z]]:
        """The zone's reader is gone (unplugged): stale at once, without waiting for failures."""
        view = self._zones.setdefault(zone, _ZoneView())
        view.failures = max(view.failures + 1, self.debounce.stale_after)
        return self._go_stale(ts, zone, view, reason)

    def _go_stale(
        self, ts: datetime, zone: Z, view: _ZoneView, reason: str
    ) -> list[PresenceEdge[Z]]:
        if view.health is ZoneHealth.STALE:
            return []
        view.health = ZoneHealth.STALE
        # Half-counted runs straddling an outage would mix old and new news: start them over.
        view.sightings.clear()
        view.misses.clear()
        return [ZoneStale(ts, zone, view.failures, reason)]
