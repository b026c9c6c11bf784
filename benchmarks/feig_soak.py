"""Crosstalk soak: the automatic dealer's hands through the FEIG reader's radio and arbiter.

Run ``.venv/bin/python benchmarks/feig_soak.py [HANDS]`` (500 by default). Every card read of
the automatic dealer (``simulators/autoplay.py``) is put down on the simulated antennas
(``simulators/feig/radio.py``): each tag is heard by each neighbouring antenna in one sweep in
ten (crosstalk 0.1), a pile's third card and those above it are missed three sweeps in ten; the
core gets what the ``feig-isc`` pipeline (presence tracker, crosstalk arbiter) makes of the
sweeps (``simulators/feig/soak.py``). The rows: without arbitration (the baseline), with it, and
with it and real moves injected (a folded hand and the losers' cards slid from the seat to the
muck, heard on both antennas for three sweeps on the way).
"""

from __future__ import annotations

import platform
import sys
import time
from collections import Counter

from simulators.feig.soak import SoakFigures, soak


def row(name: str, figures: SoakFigures, seconds: float) -> str:
    reasons = Counter(figures.irregularities).most_common(2)
    top = "; ".join(f"{n} x {reason}" for reason, n in reasons) or "-"
    moves = f"{figures.moves_reported}/{figures.moves_injected}" if figures.moves_injected else "-"
    return (
        f"{name:<26} {figures.hands:>5} {figures.sweeps:>7} {figures.crosstalk_reads:>9} "
        f"{figures.shadowed:>8} {len(figures.irregularities):>6} {figures.held_hands:>5} "
        f"{moves:>11} {figures.unsettled:>9} {seconds:>6.1f}s  {top}"
    )


def main() -> None:
    hands = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    print(
        f"FEIG crosstalk soak ({sys.platform}, Python {platform.python_version()}): {hands} "
        "hands, crosstalk 0.1 a neighbour a sweep, stacked miss 0.3, arrive_n 2, depart_n 3"
    )
    print(
        f"{'':<26} {'hands':>5} {'sweeps':>7} {'crosstalk':>9} {'shadowed':>8} {'irreg.':>6} "
        f"{'held':>5} {'moves seen':>11} {'unsettled':>9} {'time':>7}  irregularities"
    )
    for name, options in (
        ("no arbitration", {"arbitrate": False}),
        ("arbitrated", {}),
        ("arbitrated, real moves", {"slide_moves": True}),
    ):
        start = time.perf_counter()
        figures = soak(hands, **options)
        print(row(name, figures, time.perf_counter() - start))


if __name__ == "__main__":
    main()
