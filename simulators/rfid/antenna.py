"""One simulated antenna: the tags lying on it, how it misreads them, and its debounce.

A read of the antenna sees each tag on it, except that:

- each tag misses the read with probability ``flap_rate`` (a card at the edge of the antenna, a
  hand over it);
- when two or more tags answer, the read loses at least one of them (never all) with
  probability ``stacked_miss_rate`` (stacked cards shadow each other);
- a broken antenna (``fault``, an :class:`~drivers.rfid.tsp_reader.codes.AntennaCode`) reads
  nothing at all, and that is no news: the debounce is not fed, so nothing departs.

The debounce is the shared presence tracker (:mod:`drivers.rfid.presence`), one per antenna, so
the simulated reader asserts and releases tags exactly as the host-side trackers would.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from drivers.rfid.presence import Arrived, Debounce, Departed, PresenceTracker

_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def device_time(ms: int) -> datetime:
    """A device clock reading (ms since boot) as the tracker's timestamp."""
    return _EPOCH + timedelta(milliseconds=ms)


@dataclass(frozen=True, slots=True)
class Assignment:
    """Where an antenna lies (SET_ANTENNA_MAP)."""

    zone_kind: int
    zone_index: int
    dwell_ms: int = 10


@dataclass(slots=True)
class Antenna:
    """One antenna of the reader."""

    number: int
    tags: list[bytes] = field(default_factory=list)
    assignment: Assignment | None = None
    fault: int = 0
    fault_value: int = 0
    flap_rate: float = 0.0
    stacked_miss_rate: float = 0.0
    good_sweeps: int = 0
    """Sweeps read since the antenna was (re)configured or repaired: below the debounce it is
    still settling, and its asserted tags are not yet the whole truth."""
    overflow: int = 0
    """The tag count last reported in a ZONE_OVERFLOW (0: not overflowing)."""
    reads: int = 0
    missed_reads: int = 0
    """Reads that missed a tag lying on the antenna (flapping, stacking)."""
    tracker: PresenceTracker[int] = field(default_factory=PresenceTracker)

    @property
    def enabled(self) -> bool:
        """True when the host mapped it to a zone."""
        return self.assignment is not None

    def assign(self, assignment: Assignment | None, debounce: Debounce) -> None:
        """Map the antenna (None: disable it). A changed mapping starts its debounce afresh."""
        if assignment == self.assignment:
            return
        self.assignment = assignment
        self.reset(debounce)

    def reset(self, debounce: Debounce) -> None:
        """Forget every asserted tag and half-counted run (a new mapping, a reboot)."""
        self.tracker = PresenceTracker(debounce)
        self.good_sweeps = 0
        self.overflow = 0

    def asserted(self) -> list[bytes]:
        """The tags the reader asserts on this antenna, in UID order."""
        return sorted(bytes.fromhex(uid) for uid in self.tracker.present(self.number))

    def settled(self, debounce: Debounce) -> bool:
        """True once enough sweeps have passed for the asserted tags to be the truth."""
        return self.good_sweeps >= max(debounce.arrive_n, debounce.depart_n)

    def place(self, uid: bytes) -> None:
        """Put a tag on the antenna (a tag already there stays once)."""
        if uid not in self.tags:
            self.tags.append(uid)

    def remove(self, uid: bytes) -> bool:
        """Lift a tag off; return whether it was there."""
        if uid in self.tags:
            self.tags.remove(uid)
            return True
        return False

    def break_(self, code: int, value: int, now_ms: int) -> None:
        """The antenna fails: half-counted runs are old news once it is back."""
        self.fault, self.fault_value = code, value
        self.tracker.lost(device_time(now_ms), self.number, f"antenna fault {code}")

    def repair(self) -> None:
        """The antenna works again; it settles before its view is trusted."""
        self.fault, self.fault_value = 0, 0
        self.good_sweeps = 0

    def read(self, rng: random.Random) -> set[bytes]:
        """One read of the antenna, with flapping and stacking applied."""
        self.reads += 1
        seen = [uid for uid in self.tags if not rng.random() < self.flap_rate]
        if len(seen) >= 2 and rng.random() < self.stacked_miss_rate:
            for uid in rng.sample(seen, rng.randint(1, len(seen) - 1)):
                seen.remove(uid)
        self.missed_reads += len(self.tags) - len(seen)
        return set(seen)

    def sweep(self, now_ms: int, rng: random.Random) -> tuple[list[bytes], list[bytes]]:
        """Read the antenna once and debounce; return the tags that arrived and departed."""
        if self.fault or self.assignment is None:
            return [], []
        seen = self.read(rng)
        self.good_sweeps += 1
        edges = self.tracker.seen(device_time(now_ms), self.number, (u.hex() for u in seen))
        arrived = [bytes.fromhex(e.uid) for e in edges if isinstance(e, Arrived)]
        departed = [bytes.fromhex(e.uid) for e in edges if isinstance(e, Departed)]
        return arrived, departed
