"""What the simulated reader's antennas hear: tags, RSSI, crosstalk, stacks and anticollision.

Pure and seeded, so a run replays exactly. Each antenna (1…N) holds tags in the order they were
put down; each tag has a strength on its own antenna (RSSI 55…80, a little noise on every read).
One inventory of an antenna:

- a tag of a stack beyond the second answers only sometimes (``stacked_miss``: the chance the
  third card put down on an antenna, and each one after it, is not read in one inventory); on
  the antennas in ``spread`` (the board: its cards lie side by side) nothing stacks;
- ``flap``: any tag misses a read now and then;
- ``crosstalk``: a tag is also heard by a neighbour antenna (the number below or above) at a
  lower RSSI (12…24 less);
- a tag being slid from one antenna to another is heard on both for a few inventories, fading on
  the one it leaves and growing on the one it reaches;
- the answers are collected with ISO/IEC 15693's 16-slot anticollision: each tag answers in the
  slot its UID's next four bits name; a slot with two answers is a collision, resolved by another
  round with that slot's bits as the mask. The rounds and slots count toward the RF time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import StrEnum

SLOT_EMPTY_S = 0.0003
"""An empty slot: the reader's EOF and nothing heard."""
SLOT_ANSWER_S = 0.0016
"""A slot with an answer (a 64-bit UID response at 26.48 kbit/s, and the EOF)."""
ROUND_REQUEST_S = 0.0010
"""An inventory request on the air."""
SWITCH_S = 0.0005
"""The multiplexer switching to the next antenna and the field settling."""


class AntennaFault(StrEnum):
    """A broken antenna, as the multiplexer diagnostic shows it."""

    OPEN = "open"
    SHORT = "short"
    POWER = "power"


@dataclass(slots=True)
class Slide:
    """A tag on its way from one antenna to another: heard on both for a few inventories."""

    source: int
    target: int
    inventories: int
    done: int = 0


@dataclass(slots=True)
class Heard:
    """One tag as one antenna heard it in one inventory."""

    uid: bytes
    antenna: int
    rssi: int


@dataclass(slots=True)
class Radio:
    """The antennas, the tags on them and the RF faults."""

    antennas: int
    rng: random.Random = field(default_factory=random.Random)
    flap: float = 0.0
    crosstalk: float = 0.0
    stacked_miss: float = 0.0
    noise: int = 2
    """A read's RSSI strays this much either way from the tag's strength."""
    spread: set[int] = field(default_factory=set)
    faults: dict[int, AntennaFault] = field(default_factory=dict)
    #: antenna → the UIDs on it, in the order they were put down (the bottom of the stack first).
    tags: dict[int, list[bytes]] = field(default_factory=dict)
    strength: dict[bytes, int] = field(default_factory=dict)
    slides: dict[bytes, Slide] = field(default_factory=dict)
    crosstalk_reads: int = 0
    stacked_misses: int = 0
    collisions: int = 0

    # ------------------------------------------------------------------ the table

    def where(self, uid: bytes) -> int | None:
        """The antenna a tag lies on."""
        for antenna, uids in self.tags.items():
            if uid in uids:
                return antenna
        return None

    def place(self, uid: bytes, antenna: int) -> None:
        """Put a tag down on an antenna (on top of its stack), lifting it from where it lay."""
        self.check_antenna(antenna)
        self.remove(uid)
        self.tags.setdefault(antenna, []).append(uid)
        self.strength[uid] = self.rng.randint(55, 80)

    def remove(self, uid: bytes) -> None:
        """Lift a tag off the table."""
        self.slides.pop(uid, None)
        for uids in self.tags.values():
            if uid in uids:
                uids.remove(uid)

    def slide(self, uid: bytes, antenna: int, inventories: int) -> None:
        """Slide a tag to another antenna: heard on both for ``inventories``, then there."""
        self.check_antenna(antenna)
        source = self.where(uid)
        if source is None or source == antenna or inventories < 1:
            self.place(uid, antenna)
            return
        self.slides[uid] = Slide(source, antenna, inventories)

    def check_antenna(self, antenna: int) -> None:
        """Refuse an antenna the reader does not have."""
        if not 1 <= antenna <= self.antennas:
            raise ValueError(f"antenna {antenna} is not 1…{self.antennas}")

    # ------------------------------------------------------------------ one inventory

    def inventory(self, selected: list[int]) -> tuple[list[Heard], float]:
        """Every tag heard on the selected antennas, antenna by antenna, and the RF time."""
        heard: list[Heard] = []
        seconds = 0.0
        for antenna in selected:
            seconds += SWITCH_S
            if antenna in self.faults or antenna > self.antennas:
                continue
            answering = self._answering(antenna)
            seconds += self._anticollision([h.uid for h in answering])
            heard += answering
        self._advance_slides()
        return heard, seconds

    def _answering(self, antenna: int) -> list[Heard]:
        rng = self.rng
        out: list[Heard] = []
        stacks = antenna not in self.spread
        for depth, uid in enumerate(self.tags.get(antenna, [])):
            if stacks and depth >= 2 and rng.random() < self.stacked_miss:
                self.stacked_misses += 1
                continue
            if rng.random() < self.flap:
                continue
            rssi = self._strength(uid)
            slide = self.slides.get(uid)
            if slide is not None:
                rssi -= round(24 * (slide.done + 1) / (slide.inventories + 1))
            out.append(Heard(uid, antenna, _byte(rssi)))
        for uid, slide in self.slides.items():
            if slide.target == antenna:
                grown = round(24 * (slide.inventories - slide.done) / (slide.inventories + 1))
                out.append(Heard(uid, antenna, _byte(self._strength(uid) - grown)))
        for neighbour in (antenna - 1, antenna + 1):
            for uid in self.tags.get(neighbour, []):
                if self.crosstalk and rng.random() < self.crosstalk:
                    self.crosstalk_reads += 1
                    weaker = self._strength(uid) - rng.randint(12, 24)
                    out.append(Heard(uid, antenna, _byte(weaker)))
        seen: set[bytes] = set()
        unique = []
        for item in out:  # one answer per tag and antenna, whatever the reasons to hear it
            if item.uid not in seen:
                seen.add(item.uid)
                unique.append(item)
        return unique

    def _strength(self, uid: bytes) -> int:
        return self.strength.get(uid, 65) + self.rng.randint(-self.noise, self.noise)

    def _anticollision(self, uids: list[bytes]) -> float:
        """The RF time of finding ``uids`` with 16-slot rounds (a collided slot: a new round)."""
        seconds = 0.0
        pending: list[tuple[int, list[int]]] = [(0, [int.from_bytes(u, "big") for u in uids])]
        while pending:
            depth, group = pending.pop()
            seconds += ROUND_REQUEST_S
            slots: dict[int, list[int]] = {}
            for uid in group:
                slots.setdefault(uid >> (4 * depth) & 0xF, []).append(uid)
            seconds += (16 - len(slots)) * SLOT_EMPTY_S + len(slots) * SLOT_ANSWER_S
            for members in slots.values():
                if len(members) > 1 and depth < 15:
                    self.collisions += 1
                    pending.append((depth + 1, members))
        return seconds

    def _advance_slides(self) -> None:
        for uid, slide in list(self.slides.items()):
            slide.done += 1
            if slide.done >= slide.inventories:
                del self.slides[uid]
                strength = self.strength.get(uid)
                self.place(uid, slide.target)
                if strength is not None:
                    self.strength[uid] = strength


def _byte(value: int) -> int:
    return max(0, min(255, value))
