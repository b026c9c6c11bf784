"""The host's view of one reader's zones, kept from edge events and reconciled by snapshots.

The reader debounces (``arrive_n`` / ``depart_n``) and sends clean edges, in order, acknowledged;
so the view normally just follows them. Edges can still go missing: a reader drops edge events
when its queue overflows while the host is away, loses its queue in a power cut, or sends an event
the host cannot decode. Snapshots repair all of that: each lists, per antenna, exactly the tags
the reader asserts, and :meth:`ReaderView.snapshot` turns the difference into the edges the host
missed. An edge that merely repeats what the view holds (a duplicate after a power cut) changes
nothing and produces nothing.

A zone whose antenna is faulty is **stale**: the host keeps what it believed, invents no
departures, and ignores snapshot entries that are not trustworthy (faulty, still settling, or
truncated). The zone is fresh again when the antenna reports it works, or when a snapshot lists it
with a good status (which also reconciles it).

Pure: no clock, no I/O. It speaks the presence tracker's edge types
(:mod:`drivers.rfid.presence`), so both reader families report the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from controller.table.inputs import Zone
from drivers.rfid.presence import Arrived, Departed, PresenceEdge, ZoneFresh, ZoneStale


class ReaderView:
    """What each zone of one reader holds, as far as the host knows."""

    def __init__(self) -> None:
        self._present: dict[Zone, set[str]] = {}
        self._stale: dict[Zone, str] = {}
        #: Edges a snapshot had to supply because the edge events never arrived.
        self.repaired_arrivals = 0
        self.repaired_departures = 0

    def present(self, zone: Zone) -> frozenset[str]:
        """The tags the host believes are in ``zone``."""
        return frozenset(self._present.get(zone, ()))

    def zones(self) -> dict[Zone, frozenset[str]]:
        """Every zone holding at least one tag."""
        return {zone: frozenset(uids) for zone, uids in self._present.items() if uids}

    def stale(self, zone: Zone) -> bool:
        """True while the zone's antenna is faulty."""
        return zone in self._stale

    def stale_zones(self) -> dict[Zone, str]:
        """The stale zones and why."""
        return dict(self._stale)

    # ------------------------------------------------------------------ edge events

    def arrived(self, ts: datetime, zone: Zone, uid: str) -> list[PresenceEdge[Zone]]:
        """The reader asserted ``uid`` in ``zone``."""
        uids = self._present.setdefault(zone, set())
        if uid in uids:
            return []
        uids.add(uid)
        return [Arrived(ts, zone, uid)]

    def departed(self, ts: datetime, zone: Zone, uid: str) -> list[PresenceEdge[Zone]]:
        """The reader released ``uid`` from ``zone``."""
        uids = self._present.get(zone)
        if uids is None or uid not in uids:
            return []
        uids.discard(uid)
        return [Departed(ts, zone, uid)]

    def antenna_fault(self, ts: datetime, zone: Zone, reason: str) -> list[PresenceEdge[Zone]]:
        """The zone's antenna broke: stale, and nothing in it departs."""
        if zone in self._stale:
            self._stale[zone] = reason
            return []
        self._stale[zone] = reason
        return [ZoneStale(ts, zone, 1, reason)]

    def antenna_ok(self, ts: datetime, zone: Zone) -> list[PresenceEdge[Zone]]:
        """The zone's antenna works again: its edges can be trusted from now on."""
        if self._stale.pop(zone, None) is None:
            return []
        return [ZoneFresh(ts, zone)]

    # ------------------------------------------------------------------ snapshots

    def snapshot(
        self, ts: datetime, listed: Mapping[Zone, frozenset[str] | None]
    ) -> list[PresenceEdge[Zone]]:
        """Reconcile with a snapshot: ``listed`` maps each zone it covers to the tags the reader
        asserts there, or None where the entry cannot be trusted (then nothing changes).

        Returns the edges that bring the view in line (departures first, then arrivals, each
        sorted), preceded by ``ZoneFresh`` for a stale zone listed as good.
        """
        edges: list[PresenceEdge[Zone]] = []
        for zone, uids in listed.items():
            if uids is None:
                continue
            edges += self.antenna_ok(ts, zone)
            held = self._present.setdefault(zone, set())
            gone = sorted(held - uids)
            new = sorted(uids - held)
            held.difference_update(gone)
            held.update(new)
            self.repaired_departures += len(gone)
            self.repaired_arrivals += len(new)
            edges += [Departed(ts, zone, uid) for uid in gone]
            edges += [Arrived(ts, zone, uid) for uid in new]
        return edges
