"""What a wake of an idle asyncio event loop costs this machine: the CPU of a process whose
only work is a timer firing N times a second (the loop's epoll wait, its timer heap, the
kernel's hrtimer and the context switches), per wake and as a share of a core.

The pit wakes as little as it can because of this figure (docs/pit.md, "Ingest"): at 300 µs a
wake, ten a second are 0.3 % of a core, more than a floor's share of events costs to store.

    .venv/bin/python benchmarks/loop_wake.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time


async def tick(hz: float) -> None:
    while True:
        await asyncio.sleep(1 / hz)


async def measure(seconds: float) -> list[tuple[int, float, float]]:
    rows = []
    for hz in (0, 1, 10, 20, 50, 100):
        tickers = [asyncio.create_task(tick(hz))] if hz else []
        await asyncio.sleep(0.5)
        cpu = time.process_time()
        await asyncio.sleep(seconds)
        used = time.process_time() - cpu
        for ticker in tickers:
            ticker.cancel()
        per_wake = used / (hz * seconds) * 1e6 if hz else float("nan")
        rows.append((hz, 100 * used / seconds, per_wake))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    rows = asyncio.run(measure(args.seconds))
    print(
        f"an idle asyncio loop woken N times a second, {args.seconds:g} s each "
        f"(load average {os.getloadavg()[0]:.1f})\n"
    )
    print("| wakes a second | CPU, % of a core | µs a wake |")
    print("|---:|---:|---:|")
    for hz, share, per_wake in rows:
        print(f"| {hz} | {share:.3f} | {per_wake:.0f} |")


if __name__ == "__main__":
    main()
