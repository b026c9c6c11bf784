"""FEIG ID ISC reader figures: tag latencies over a pty, beside the TSP/1 reader's.

Run ``.venv/bin/python benchmarks/feig.py``. The ``feig-isc`` driver and ``tablectl sim feig``
share one event loop; the simulator paces its answers like the real reader: the inventory's RF
time (antenna switching, 16-slot anticollision rounds) and every frame's wire time at 115200
baud. Fourteen antennas (ten seats, board, burn, muck, shuffler input), every one inventoried
each sweep. Latencies are from putting a tag down on seat 1 (or lifting it) to the input in the
driver's sink, on an empty table and on a dealt one (two cards a seat, five on the board, three
burns, ten in the muck: 38 tags, so every inventory comes in two or three 0x94 pages). The TSP/1
rows are ``benchmarks/tsp_reader.py``'s, measured in the same run.
"""

from __future__ import annotations

import asyncio
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import structlog

from benchmarks.tsp_reader import Row, Waiter, _summary
from benchmarks.tsp_reader import pty_rows as tsp_pty_rows
from controller.table.inputs import TagArrived, TagDeparted
from drivers.rfid.feig.driver import FeigReader
from simulators.feig.server import FeigSimulator

ROUNDS = 30
ANTENNAS = {
    **{seat: f"seat:{seat}" for seat in range(1, 11)},
    11: "board",
    12: "burn",
    13: "muck",
    14: "shuffler_in",
}
DEALT = {**dict.fromkeys(range(2, 11), 2), 11: 5, 12: 3, 13: 10}


async def feig_rows(period: int, dealt: bool, directory: Path) -> list[Row]:
    sim = FeigSimulator(antennas=14, seed=1, link=directory / f"feig{period}{dealt}", baud=115200)
    await sim.start()
    radio = sim.reader.radio
    if dealt:
        for antenna, count in DEALT.items():
            for n in range(count):
                radio.place(bytes.fromhex(f"e0040150{antenna:04x}{n:04x}"), antenna)
    waiter = Waiter()
    antennas = [{"antenna": a, "zone": z} for a, z in ANTENNAS.items()]
    options = {"port": sim.device, "antennas": antennas, "scan_period_ms": period}
    reader = FeigReader.from_options("bench", options)
    await reader.start(waiter.sink)
    arrive, depart = [], []
    async with reader:
        await reader.wait_online(10)
        for n in range(ROUNDS):
            uid = f"e00401ff{n:08x}"
            start = time.perf_counter()
            radio.place(bytes.fromhex(uid), 1)
            arrive.append(await waiter.next(TagArrived, uid) - start)
            start = time.perf_counter()
            radio.remove(bytes.fromhex(uid))
            depart.append(await waiter.next(TagDeparted, uid) - start)
            await asyncio.sleep(random.uniform(0, period / 1000))  # out of step with sweeps
        sweeps, pages = reader.sweeps, reader.pages
    sim.stop()
    table = "38 tags" if dealt else "empty"
    setting = f"FEIG pty, {period} ms, 14 ant., {table}"
    per_sweep = f"{pages / max(1, sweeps):.1f} pages/sweep"
    return [
        ("put down -> TagArrived", f"{setting}", f"{_summary(arrive)} ({per_sweep})"),
        ("lifted -> TagDeparted", f"{setting}", _summary(depart)),
    ]


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        for dealt in (False, True):
            rows += await feig_rows(50, dealt, Path(directory))
        for period in (10, 50):
            rows += [
                (a, f"TSP/1 {b}", c) for a, b, c in await tsp_pty_rows(period, Path(directory))
            ]
    print(
        f"FEIG ID ISC reader benchmarks ({sys.platform}, Python {platform.python_version()}), "
        "115200 baud, arrive_n 2 + settle 1, depart_n 3"
    )
    for row in rows:
        print(f"{row[0]:<24} {row[1]:<44} {row[2]}")


if __name__ == "__main__":
    asyncio.run(main())
