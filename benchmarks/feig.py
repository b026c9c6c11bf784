"""FEIG ID ISC reader figures: tag latencies over a pty, paced as FEIG documents the reader.

Run ``.venv/bin/python benchmarks/feig.py [ROUNDS]``. The ``feig-isc`` driver and
``tablectl sim feig`` share one event loop. The simulator is the demo table's line: two
ID ISC.M02.M8 readers (COM-ADR 1 and 2) with fourteen antennas (ten seats, board, burn, muck,
shuffler input), at 115200 baud, even parity, and it paces every answer as FEIG documents the
reader (:mod:`simulators.feig.timing`): 5 ms of reaction, an ISO 15693 inventory of 163 ms an
antenna with one transponder and more with more (ID ISC.M02 manual Annex C p. 99), every
character's 11 bits on the wire. Latencies are from putting a tag down on seat 1 (or lifting
it) to the input in the driver's sink, on an empty table and on a dealt one (two cards a seat,
five on the board, three burns, ten in the muck: 38 tags). The driver sweeps every mapped
antenna of both readers each time (``scan_period_ms = 0``: the next sweep as soon as one
ends).
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
from controller.table.inputs import TagArrived, TagDeparted
from drivers.rfid.feig.driver import FeigReader
from simulators.feig.server import FeigSimulator

ROUNDS = 20
ZONES = [*(f"seat:{seat}" for seat in range(1, 11)), "board", "burn", "muck", "shuffler_in"]
DEALT = {**dict.fromkeys(range(2, 11), 2), 11: 5, 12: 3, 13: 10}


def antennas() -> list[dict[str, object]]:
    """The line's antennas 1…14: reader 1's ANT_NR 1…8, then reader 2's."""
    return [
        {"reader": 1 + (n - 1) // 8, "antenna": (n - 1) % 8 + 1, "zone": zone}
        for n, zone in enumerate(ZONES, start=1)
    ]


async def feig_rows(dealt: bool, rounds: int, directory: Path) -> list[Row]:
    sim = FeigSimulator(
        addresses=(1, 2), antennas=14, seed=1, link=directory / f"feig{dealt}", baud=115200
    )
    await sim.start()
    radio = sim.line.radio
    if dealt:
        for antenna, count in DEALT.items():
            for n in range(count):
                radio.place(bytes.fromhex(f"e0040150{antenna:04x}{n:04x}"), antenna)
    waiter = Waiter()
    options = {"port": sim.device, "antennas": antennas(), "scan_period_ms": 0}
    reader = FeigReader.from_options("bench", options)
    await reader.start(waiter.sink)
    arrive, depart = [], []
    rng = random.Random(2)
    async with reader:
        await reader.wait_online(10)
        started = time.perf_counter()
        for n in range(rounds):
            uid = f"e00401ff{n:08x}"
            start = time.perf_counter()
            radio.place(bytes.fromhex(uid), 1)
            arrive.append(await waiter.next(TagArrived, uid) - start)
            start = time.perf_counter()
            radio.remove(bytes.fromhex(uid))
            depart.append(await waiter.next(TagDeparted, uid) - start)
            await asyncio.sleep(rng.uniform(0, 1.0))  # out of step with the sweeps
        elapsed = time.perf_counter() - started
        sweeps, pages = reader.sweeps, reader.pages
    sim.stop()
    table = "38 tags" if dealt else "empty"
    setting = f"2 readers, 14 ant., {table}"
    per_sweep = f"{elapsed / max(1, sweeps) * 1000:.0f} ms/sweep, {pages} pages"
    return [
        ("put down -> TagArrived", setting, f"{_summary(arrive)} ({per_sweep})"),
        ("lifted -> TagDeparted", setting, _summary(depart)),
    ]


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        for dealt in (False, True):
            rows += await feig_rows(dealt, rounds, Path(directory))
    print(
        f"FEIG ID ISC.M02.M8 line ({sys.platform}, Python {platform.python_version()}), "
        f"115200 baud 8E1, FEIG's documented timing, {rounds} rounds, arrive_n 2 + settle 1, "
        "depart_n 3"
    )
    for row in rows:
        print(f"{row[0]:<24} {row[1]:<30} {row[2]}")


if __name__ == "__main__":
    asyncio.run(main())
