"""FEIG ID ISC reader figures: tag latencies over a pty, paced as FEIG documents the reader.

Run ``.venv/bin/python benchmarks/feig.py [ROUNDS]``. The ``feig-isc`` driver and
``tablectl sim feig`` share one event loop. The simulator is the demo table's line: two
ID ISC.M02.M8 readers (COM-ADR 1 and 2) with fourteen antennas (seats 1-8 on reader 1; seats 9
and 10, board, burn, muck, shuffler input on reader 2), at 115200 baud, even parity, pacing every
answer as FEIG documents the reader (:mod:`simulators.feig.timing`): 5 ms of reaction, an ISO
15693 inventory of 163 ms an antenna with one transponder and more with more (ID ISC.M02 manual
Annex C p. 99), every character's 11 bits on the wire. A latency is from putting a tag down
(or lifting it) to the input in the driver's sink, on an empty table and on a dealt one (two
cards a seat, five on the board, three burns, ten in the muck: 38 tags), the driver sweeping
back to back (``scan_period_ms = 0``), with the default debounce (``arrive_n`` 2,
``crosstalk_settle`` 1, ``depart_n`` 3), for three hints from the table
(:meth:`~drivers.rfid.feig.driver.FeigReader.expect`; ``background_per_sweep`` 1: each sweep
also reads one of the other zones, in turn):

* none: every antenna every sweep (what a table without a hand, or another host, gets);
* dealing six-handed: seats 1-6 and the muck, a card put down on seat 1;
* the flop: burn, board and muck, a card put down on the board.
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
from controller.table.inputs import TagArrived, TagDeparted, Zone
from drivers.rfid.feig.driver import FeigReader
from simulators.feig.server import FeigSimulator

ROUNDS = 12
ZONES = [*(f"seat:{seat}" for seat in range(1, 11)), "board", "burn", "muck", "shuffler_in"]
DEALT = {**dict.fromkeys(range(2, 11), 2), 11: 5, 12: 3, 13: 10}
#: name → (the zones the table says the hand can change, the antenna the card is put on).
HINTS: dict[str, tuple[frozenset[Zone] | None, int]] = {
    "no hint": (None, 1),
    "dealing 6-handed": (frozenset(Zone.parse(z) for z in (*ZONES[:6], "muck")), 1),
    "the flop": (frozenset(Zone.parse(z) for z in ("burn", "board", "muck")), 11),
}


def antennas() -> list[dict[str, object]]:
    """The line's antennas 1…14: reader 1's ANT_NR 1…8, then reader 2's."""
    return [
        {"reader": 1 + (n - 1) // 8, "antenna": (n - 1) % 8 + 1, "zone": zone}
        for n, zone in enumerate(ZONES, start=1)
    ]


async def feig_rows(hint: str, dealt: bool, rounds: int, directory: Path) -> list[Row]:
    expected, antenna = HINTS[hint]
    link = directory / f"feig{len(hint)}{dealt}"
    sim = FeigSimulator(addresses=(1, 2), antennas=14, seed=1, link=link, baud=115200)
    await sim.start()
    radio = sim.line.radio
    if dealt:
        for number, count in DEALT.items():
            for n in range(count):
                radio.place(bytes.fromhex(f"e0040150{number:04x}{n:04x}"), number)
    waiter = Waiter(timeout=120.0)
    options = {"port": sim.device, "antennas": antennas(), "scan_period_ms": 0}
    reader = FeigReader.from_options("bench", options)
    reader.expect(expected)
    await reader.start(waiter.sink)
    arrive, depart = [], []
    rng = random.Random(2)
    async with reader:
        await reader.wait_online(10)
        started = time.perf_counter()
        for n in range(rounds):
            uid = f"e00401ff{n:08x}"
            start = time.perf_counter()
            radio.place(bytes.fromhex(uid), antenna)
            arrive.append(await waiter.next(TagArrived, uid) - start)
            start = time.perf_counter()
            radio.remove(bytes.fromhex(uid))
            depart.append(await waiter.next(TagDeparted, uid) - start)
            await asyncio.sleep(rng.uniform(0, 1.0))  # out of step with the sweeps
        elapsed = time.perf_counter() - started
        sweeps = reader.sweeps
    sim.stop()
    setting = f"{hint}, {'38 tags' if dealt else 'empty'}"
    per_sweep = f"{elapsed / max(1, sweeps) * 1000:.0f} ms/sweep"
    return [
        ("put down -> TagArrived", setting, f"{_summary(arrive)} ({per_sweep})"),
        ("lifted -> TagDeparted", setting, _summary(depart)),
    ]


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        for hint in HINTS:
            for dealt in (False, True):
                rows += await feig_rows(hint, dealt, rounds, Path(directory))
    print(
        f"FEIG ID ISC.M02.M8 line ({sys.platform}, Python {platform.python_version()}), 2 "
        f"readers, 14 antennas, 115200 baud 8E1, FEIG's documented timing, {rounds} rounds"
    )
    for row in rows:
        print(f"{row[0]:<24} {row[1]:<30} {row[2]}")


if __name__ == "__main__":
    asyncio.run(main())
