"""Crosstalk arbitration: one zone per tag, whatever the neighbouring antennas hear.

An antenna hears a tag lying on its neighbour now and then, weaker. Without arbitration such a
read, once debounced, reaches the core as the card moving to the neighbour's zone. The
:class:`Arbiter` sits between a reader's per-zone presence (debounced edges from
:class:`~drivers.rfid.presence.PresenceTracker`, or the reader's own) and the core:

- the edges of one sweep are weighed together: a tag asserted on several zones is placed on the
  one that hears it strongest, and only that placement reaches the core;
- the weaker zones are kept as shadows: when the placed zone lets the tag go, the strongest
  shadow is promoted (the core sees the move), and a shadow that goes away changes nothing;
- a shadow that hears the tag clearly stronger (``margin``) for ``switch_after`` sweeps in a row
  takes it over: a card slid to a neighbour whose crosstalk keeps it alive on the old antenna
  still moves;
- a sweep without RSSI (a snapshot) keeps the current placement;
- a real move (the card heard on both antennas for a few sweeps on its way, then gone from the
  first) reaches the core as the move it is: departure from the old zone, arrival in the new.

Stale and fresh zone edges pass through unchanged. Pure: no clock, no I/O; it works on the
presence tracker's edge types, so every reader family uses it the same way.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from drivers.rfid.presence import Arrived, Departed, PresenceEdge

Z = TypeVar("Z", bound=Hashable)


@dataclass(slots=True)
class _Tag(Generic[Z]):
    zones: dict[Z, int | None] = field(default_factory=dict)
    """Every zone asserting the tag, with the strength it last heard it at (None: unknown)."""
    placed: Z | None = None
    challenger: Z | None = None
    lead: int = 0


class Arbiter(Generic[Z]):
    """One tag, one zone: the strongest antenna wins, the others are shadows."""

    def __init__(self, *, margin: int = 6, switch_after: int = 3) -> None:
        if margin < 0 or switch_after < 1:
            raise ValueError("margin must be >= 0 and switch_after >= 1")
        self.margin = margin
        self.switch_after = switch_after
        self._tags: dict[str, _Tag[Z]] = {}
        #: Arrivals kept from the core because another zone held the tag (crosstalk).
        self.shadowed = 0
        #: Placements moved to a stronger zone without the old one letting go.
        self.switched = 0

    # ------------------------------------------------------------------ views

    def present(self, zone: Z) -> frozenset[str]:
        """The tags placed in ``zone`` (what the core was told)."""
        return frozenset(uid for uid, tag in self._tags.items() if tag.placed == zone)

    def placement(self, uid: str) -> Z | None:
        """The zone a tag is placed in."""
        tag = self._tags.get(uid)
        return tag.placed if tag else None

    def shadows(self, uid: str) -> frozenset[Z]:
        """The other zones asserting a tag."""
        tag = self._tags.get(uid)
        if tag is None:
            return frozenset()
        return frozenset(z for z in tag.zones if z != tag.placed)

    # ------------------------------------------------------------------ one sweep

    def sweep(
        self,
        ts: datetime,
        edges: Iterable[PresenceEdge[Z]],
        rssi: Mapping[tuple[Z, str], int] | None = None,
    ) -> list[PresenceEdge[Z]]:
        """One sweep at ``ts``: its per-zone edges and the strengths it read ((zone, uid) →
        RSSI; None or empty: a sweep without RSSI). Returns the edges for the core, in order:
        the health edges that pass through, departures, then arrivals."""
        strengths = rssi or {}
        health: list[PresenceEdge[Z]] = []
        departed: list[PresenceEdge[Z]] = []
        touched: dict[str, None] = {}
        for edge in edges:
            if isinstance(edge, Arrived):
                tag = self._tags.setdefault(edge.uid, _Tag())
                tag.zones[edge.zone] = strengths.get((edge.zone, edge.uid))
                if tag.placed is not None and tag.placed != edge.zone:
                    self.shadowed += 1
                touched[edge.uid] = None
            elif isinstance(edge, Departed):
                gone = self._tags.get(edge.uid)
                if gone is None or edge.zone not in gone.zones:
                    continue
                del gone.zones[edge.zone]
                if gone.challenger == edge.zone:
                    gone.challenger, gone.lead = None, 0
                if gone.placed == edge.zone:
                    gone.placed = None
                    departed.append(edge)
                touched[edge.uid] = None
            else:
                health.append(edge)
        # This sweep's strengths of every tag already asserted.
        for (zone, uid), value in strengths.items():
            known = self._tags.get(uid)
            if known is not None and zone in known.zones:
                known.zones[zone] = value
                touched[uid] = None
        arrived: list[PresenceEdge[Z]] = []
        for uid in touched:
            moved = self._place(ts, uid, strengths)
            departed += [e for e in moved if isinstance(e, Departed)]
            arrived += [e for e in moved if isinstance(e, Arrived)]
            if not self._tags[uid].zones:
                del self._tags[uid]
        return [*health, *departed, *arrived]

    # ------------------------------------------------------------------ placement

    def _place(
        self, ts: datetime, uid: str, strengths: Mapping[tuple[Z, str], int]
    ) -> list[PresenceEdge[Z]]:
        tag = self._tags[uid]
        if tag.placed is None:
            best = self._strongest(tag)
            if best is None:
                return []
            tag.placed, tag.challenger, tag.lead = best, None, 0
            return [Arrived(ts, best, uid)]
        placed = tag.placed
        rival = self._strongest(tag, exclude=placed)
        if rival is None:
            tag.challenger, tag.lead = None, 0
            return []
        held = strengths.get((placed, uid))
        heard = strengths.get((rival, uid))
        if held is None or heard is None or heard < held + self.margin:
            tag.challenger, tag.lead = None, 0  # no reading, or not clearly stronger
            return []
        if tag.challenger != rival:
            tag.challenger, tag.lead = rival, 0
        tag.lead += 1
        if tag.lead < self.switch_after:
            return []
        tag.placed, tag.challenger, tag.lead = rival, None, 0
        self.switched += 1
        return [Departed(ts, placed, uid), Arrived(ts, rival, uid)]

    @staticmethod
    def _strongest(tag: _Tag[Z], exclude: Z | None = None) -> Z | None:
        """The zone hearing the tag strongest; an unknown strength ranks below any known one,
        and among equals the zone that asserted it first wins."""
        best: Z | None = None
        best_value = -2
        for zone, value in tag.zones.items():
            if zone == exclude:
                continue
            rank = -1 if value is None else value
            if rank > best_value:
                best, best_value = zone, rank
        return best
