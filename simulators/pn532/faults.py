"""Faults a simulated PN532 module can suffer, drawn from a seeded RNG so runs replay exactly.

- **flap**: each tag independently misses an activation with probability ``rate`` (a card at the
  edge of the antenna, a hand over it).
- **stacked_miss**: with two or more tags on the antenna, an activation loses at least one of
  them with probability ``rate`` (stacked cards shadow each other).
- **corrupt**: a response frame is sent with one bit flipped with probability ``rate`` (line
  noise); the host can ask for it again with a NACK.
- **antenna**: the RF front end is broken; ``mode`` says how the module shows it:
  ``timeout`` (commands that use RF are ACKed but never answered), ``silent`` (the module stops
  answering anything, not even ACKs), ``error`` (RF commands get the error frame), or
  ``overcurrent`` (RF drivers shut down: activations find nothing, RF commands report status
  ``0x2D`` and GetGeneralStatus shows it in its error field).

Unplug and replug are not chip faults: the pty server handles them (the cable goes away).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

T = TypeVar("T")


class AntennaMode(StrEnum):
    """How a broken antenna shows on the host link."""

    TIMEOUT = "timeout"
    SILENT = "silent"
    ERROR = "error"
    OVERCURRENT = "overcurrent"


@dataclass(slots=True)
class Faults:
    """The faults currently injected into one module."""

    flap_rate: float = 0.0
    stacked_miss_rate: float = 0.0
    corrupt_rate: float = 0.0
    antenna: AntennaMode | None = None

    def clear(self) -> None:
        """Remove every fault."""
        self.flap_rate = 0.0
        self.stacked_miss_rate = 0.0
        self.corrupt_rate = 0.0
        self.antenna = None

    def describe(self) -> dict[str, object]:
        """The fault settings as JSON-ready values."""
        return {
            "flap": self.flap_rate,
            "stacked_miss": self.stacked_miss_rate,
            "corrupt": self.corrupt_rate,
            "antenna": None if self.antenna is None else self.antenna.value,
        }

    def answering(self, candidates: list[T], on_antenna: int, rng: random.Random) -> list[T]:
        """The candidates that really answer one activation, after flapping and stacking.

        ``on_antenna`` is how many tags lie on the antenna: stacking is about the physical pile,
        not about how many tags are still awake in this round of an inventory.
        """
        answering = [tag for tag in candidates if not rng.random() < self.flap_rate]
        if on_antenna >= 2 and answering and rng.random() < self.stacked_miss_rate:
            lost = rng.randint(1, max(1, len(answering) - 1))
            for tag in rng.sample(answering, lost):
                answering.remove(tag)
        return answering

    def garble(self, frame: bytes, rng: random.Random) -> bytes:
        """The frame as the line delivers it: maybe one bit flipped in its TFI or data."""
        # Bytes 5 … len-3 of a normal frame are TFI and data: a flip there breaks only the DCS.
        if len(frame) < 9 or not rng.random() < self.corrupt_rate:
            return frame
        garbled = bytearray(frame)
        garbled[rng.randrange(5, len(frame) - 2)] ^= 1 << rng.randrange(8)
        return bytes(garbled)
