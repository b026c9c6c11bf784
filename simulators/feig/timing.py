"""How long a simulated ID ISC reader takes, from FEIG's documented timings.

* An ISO 15693 inventory of one antenna takes what the ID ISC.M02 manual (H21010-1e-ID-B,
  Annex C p. 99) charts for 16 time slots and 1-of-4 coding: 163 ms for one transponder, 195 ms
  for five, 610 ms for sixteen (read off the chart; it includes the answer at 38400 baud). The
  chart starts at one transponder: an antenna with none takes the 163 ms too. Between the charted
  points the time is interpolated, beyond sixteen extrapolated along the last segment. An
  ID ISC.M02.M8 inventories the antennas ANT_SEL selects one after another.
* An RF reset keeps the field off for 15 ms and answers after it (M02 §6.6 p. 51).
* The reader answers no sooner than 5 ms after a request (the reaction time, M02 §3.1 p. 17).
* A character on the line is a start bit, 8 data bits, the parity bit if any and a stop bit
  (M02 p. 17; CFG1 TRANS-FORM).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Final

INVENTORY_CHART: Final = ((1, 0.163), (5, 0.195), (16, 0.610))
"""(transponders, seconds) from M02 Annex C p. 99."""
RF_RESET: Final = 0.015
REACTION: Final = 0.005


def inventory_seconds(transponders: int) -> float:
    """One antenna's inventory with ``transponders`` answering."""
    points = INVENTORY_CHART
    if transponders <= points[0][0]:
        return points[0][1]
    for (n0, t0), (n1, t1) in pairwise(points):
        if transponders <= n1:
            return t0 + (t1 - t0) * (transponders - n0) / (n1 - n0)
    (n0, t0), (n1, t1) = points[-2], points[-1]
    return t1 + (t1 - t0) * (transponders - n1) / (n1 - n0)


def character_bits(parity: str) -> int:
    """Bits a character takes on the line."""
    return 10 if parity == "none" else 11


def wire_seconds(size: int, baud: int, parity: str = "even") -> float:
    """The time ``size`` bytes take at ``baud`` (0: no pacing)."""
    return size * character_bits(parity) / baud if baud else 0.0
