"""Crosstalk arbitration: one zone per tag, whatever the neighbouring antennas hear.

An antenna hears a tag lying on its neighbour now and then, weaker. Without arbitration such a
read, once debounced, reaches the core as the card moving to the neighbour's zone. The
:class:`Arbiter` sits between a reader's per-zone presence (debounced edges from
:class:`~drivers.rfid.presence.PresenceTracker`, or the reader's own) and the core, and tells
the core one zone per tag:

- it keeps a **score** per tag and zone: the RSSI heard, averaged over the sweeps with a miss
  counting as nothing (``smoothing``), so a zone that hears a card every sweep outweighs one
  that hears it one sweep in ten, however the last two reads went;
- the edges of one sweep are weighed together: a tag asserted on several zones is placed on the
  one with the best score, and only that placement reaches the core. The other zones asserting
  it are **shadows**; a shadow that goes away is no news;
- a tag is placed only where no other zone (asserting it or not, e.g. the zone that just let it
  go, or one whose debounce has not caught up) scores better, nor heard it louder (``margin``)
  in the last ``RECENT`` sweeps: a stacked card missed for a few sweeps while a neighbour hears
  it faintly is not moved there, and a card put down where a neighbour happened to hear it
  first waits for its own zone;
- when the placed zone lets the tag go, the best shadow is **promoted** (the core sees the
  move) as soon as it scores best; a real move (the card heard on both antennas for a few sweeps
  on its way, then gone from the first) therefore reaches the core as the move it is;
- a shadow scoring better by ``margin`` for ``switch_after`` sweeps in a row takes the tag over
  (a card slid onto a neighbour whose crosstalk keeps it alive on the old antenna still moves);
- a sweep without RSSI (a snapshot) keeps the current placement; a sweep that read some zones
  only (``swept``: a reader of several on the line failed, or a zone was not due) leaves the
  others' scores as they were: not read is not "not heard";
- ``settle`` sweeps (0 by default) hold a new tag's first placement, so that a card put down on
  a deep pile, missed by its own antenna in the sweeps that its neighbour heard it, is weighed
  on more readings (each arrival is that many sweeps later).

A reader that reports its arrivals one event at a time with the RSSI of that arrival only (the
TSP/1 reader) passes ``complete=False`` and the number of the sweep that made the arrival: a
zone's score is then the RSSI of its arrival, and a louder arrival of the sweep that placed the
tag takes it over at once, as if both had come together.

Stale and fresh zone edges pass through unchanged. Pure: no clock, no I/O; it works on the
presence tracker's edge types, so every reader family uses it the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from drivers.rfid.presence import Arrived, Departed, PresenceEdge

Z = TypeVar("Z", bound=Hashable)

RECENT = 6
"""Sweeps a reading counts as recent, to weigh a tag not placed yet."""
FORGET_BELOW = 1.0
"""A score this small, of a zone not asserting the tag, is forgotten."""


@dataclass(slots=True)
class _Tag(Generic[Z]):
    asserted: set[Z] = field(default_factory=set)
    """The zones whose presence asserts the tag."""
    score: dict[Z, float] = field(default_factory=dict)
    recent: list[tuple[int, Z, int]] = field(default_factory=list)
    """The readings of the last ``RECENT`` sweeps: (sweep, zone, RSSI)."""
    placed: Z | None = None
    placed_in: int | None = None
    """The reader's sweep that placed it, when the reader numbers its sweeps."""
    challenger: Z | None = None
    lead: int = 0
    seen_for: int = 0
    """Sweeps with RSSI since the tag was first asserted, while it has not been placed yet."""


class Arbiter(Generic[Z]):
    """One tag, one zone: the best-heard antenna wins, the others are shadows."""

    def __init__(
        self,
        *,
        margin: float = 6.0,
        switch_after: int = 3,
        smoothing: float = 0.1,
        settle: int = 0,
    ) -> None:
        if margin < 0 or switch_after < 1 or not 0 < smoothing <= 1 or settle < 0:
            raise ValueError(
                "margin must be >= 0, switch_after >= 1, smoothing in (0, 1], settle >= 0"
            )
        self.margin = margin
        self.settle = settle
        self.switch_after = switch_after
        self.smoothing = smoothing
        self._tags: dict[str, _Tag[Z]] = {}
        self._sweeps = 0
        #: Arrivals kept from the core because another zone held the tag (crosstalk).
        self.shadowed = 0
        #: Placements moved to a better zone without the old one letting go.
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
        return frozenset(tag.asserted - {tag.placed}) if tag else frozenset()

    # ------------------------------------------------------------------ one sweep

    def sweep(
        self,
        ts: datetime,
        edges: Iterable[PresenceEdge[Z]],
        rssi: Mapping[tuple[Z, str], int] | None = None,
        *,
        complete: bool = True,
        sweep_id: int | None = None,
        swept: Collection[Z] | None = None,
    ) -> list[PresenceEdge[Z]]:
        """One sweep at ``ts``: its per-zone edges and the strengths it read.

        ``rssi`` maps (zone, uid) to the RSSI read (larger is stronger); None or empty is a sweep
        without RSSI. ``complete``: it lists everything the sweep heard (a tag and zone missing
        from it were not heard); otherwise only the arrivals' own readings (``sweep_id`` then
        names the reader's sweep). ``swept`` names the zones this sweep read when it read only some
        (None: all). Returns the edges for the core, in order: the health edges that pass
        through, departures, then arrivals.
        """
        strengths = rssi or {}
        self._sweeps += 1
        health: list[PresenceEdge[Z]] = []
        departed: list[PresenceEdge[Z]] = []
        touched: dict[str, None] = {}
        arriving: set[tuple[Z, str]] = set()
        for edge in edges:
            if isinstance(edge, Arrived):
                arriving.add((edge.zone, edge.uid))
                tag = self._tags.setdefault(edge.uid, _Tag())
                tag.asserted.add(edge.zone)
                if tag.placed is not None and tag.placed != edge.zone:
                    self.shadowed += 1
                touched[edge.uid] = None
            elif isinstance(edge, Departed):
                gone = self._tags.get(edge.uid)
                if gone is None or edge.zone not in gone.asserted:
                    continue
                gone.asserted.discard(edge.zone)
                if not complete:
                    gone.score.pop(edge.zone, None)  # no later reading would ever lower it
                if gone.challenger == edge.zone:
                    gone.challenger, gone.lead = None, 0
                if gone.placed == edge.zone:
                    gone.placed = None
                    departed.append(edge)
                if not gone.asserted:
                    gone.seen_for = 0  # off the table: put down again, it is a new card
                touched[edge.uid] = None
            else:
                health.append(edge)
        if strengths:
            touched.update(dict.fromkeys(self._score(strengths, complete, swept)))
        touched.update(dict.fromkeys(u for u, t in self._tags.items() if t.placed is None))
        arrived: list[PresenceEdge[Z]] = []
        for uid in touched:
            known = self._tags.get(uid)
            if known is None:
                continue
            moved = self._place(ts, uid, known, arriving, sweep_id, bool(strengths))
            departed += [e for e in moved if isinstance(e, Departed)]
            arrived += [e for e in moved if isinstance(e, Arrived)]
            if not known.asserted and not (complete and known.score):
                del self._tags[uid]
        return [*health, *departed, *arrived]

    # ------------------------------------------------------------------ scores

    def _score(
        self,
        strengths: Mapping[tuple[Z, str], int],
        complete: bool,
        swept: Collection[Z] | None = None,
    ) -> list[str]:
        """Fold this sweep's readings into the scores; the tags whose scores changed."""
        heard: dict[str, dict[Z, int]] = {}
        for (zone, uid), value in strengths.items():
            heard.setdefault(uid, {})[zone] = value
        if not complete:
            for uid, zones in heard.items():
                tag = self._tags.setdefault(uid, _Tag())
                tag.score.update({zone: float(value) for zone, value in zones.items()})
            return list(heard)
        a, now_sweep, oldest = self.smoothing, self._sweeps, self._sweeps - RECENT
        for uid in heard.keys() - self._tags.keys():
            self._tags[uid] = _Tag()  # heard, not (yet) asserted anywhere: a score to keep
        for uid, tag in self._tags.items():
            now = heard.get(uid, {})
            for zone in tag.score.keys() | now.keys():
                if swept is not None and zone not in swept and zone not in now:
                    continue  # not read this sweep: its score stands
                tag.score[zone] = (1 - a) * tag.score.get(zone, 0.0) + a * now.get(zone, 0)
            tag.recent = [r for r in tag.recent if r[0] > oldest]
            tag.recent += [(now_sweep, zone, value) for zone, value in now.items()]
            for zone in [z for z, s in tag.score.items() if s < FORGET_BELOW]:
                if zone not in tag.asserted:
                    del tag.score[zone]
        for uid in [u for u, t in self._tags.items() if not t.asserted and not t.score]:
            del self._tags[uid]
        return list(self._tags)

    def _louder_lately(self, tag: _Tag[Z], zone: Z) -> bool:
        """Another zone's reading of the last sweeps beats ``zone``'s loudest by ``margin``."""
        own = max((v for _, z, v in tag.recent if z == zone), default=None)
        if own is None:
            return False
        return any(z != zone and v > own + self.margin for _, z, v in tag.recent)

    def _best(self, tag: _Tag[Z], among: Iterable[Z]) -> Z | None:
        """The zone of ``among`` with the best score; an unscored zone ranks last, and among
        equals the one first asserted."""
        best: Z | None = None
        best_score = 0.0
        for zone in among:
            score = tag.score.get(zone, float("-inf"))
            if best is None or score > best_score:
                best, best_score = zone, score
        return best

    # ------------------------------------------------------------------ placement

    def _place(
        self,
        ts: datetime,
        uid: str,
        tag: _Tag[Z],
        arriving: set[tuple[Z, str]],
        sweep_id: int | None,
        with_rssi: bool,
    ) -> list[PresenceEdge[Z]]:
        if not tag.asserted:
            return []
        best = self._best(tag, tag.asserted)
        assert best is not None
        if tag.placed is None:
            if with_rssi and tag.seen_for < self.settle:
                tag.seen_for += 1
                return []  # a new card: one sweep more to hear where it really lies
            anywhere = self._best(tag, [*tag.asserted, *tag.score])
            if anywhere is not None and anywhere not in tag.asserted:
                return []  # another zone hears it better: wait for it (or for it to fade)
            if self._louder_lately(tag, best):
                return []  # its own zone, missing it lately, heard it louder: wait for it
            tag.placed, tag.placed_in, tag.challenger, tag.lead = best, sweep_id, None, 0
            tag.seen_for = self.settle  # placed once: a later promotion does not wait again
            return [Arrived(ts, best, uid)]
        if best == tag.placed or not with_rssi:
            tag.challenger, tag.lead = None, 0
            return []
        held = tag.score.get(tag.placed, float("-inf"))
        heard = tag.score.get(best, float("-inf"))
        if sweep_id is not None and tag.placed_in == sweep_id and (best, uid) in arriving:
            return self._switch(ts, tag, uid, best)  # a louder arrival of the same sweep
        if heard < held + self.margin:
            tag.challenger, tag.lead = None, 0
            return []
        if tag.challenger != best:
            tag.challenger, tag.lead = best, 0
        tag.lead += 1
        if tag.lead < self.switch_after:
            return []
        return self._switch(ts, tag, uid, best)

    def _switch(self, ts: datetime, tag: _Tag[Z], uid: str, zone: Z) -> list[PresenceEdge[Z]]:
        placed = tag.placed
        assert placed is not None
        tag.placed, tag.challenger, tag.lead = zone, None, 0
        self.switched += 1
        return [Departed(ts, placed, uid), Arrived(ts, zone, uid)]
