"""The rig's figures: what a dealer's act costs until the daemon has journaled it, and whole runs.

Run ``.venv/bin/python benchmarks/rig.py``. Everything runs as it does in ``tablectl demo`` and
scenario device mode: the simulators and the daemon as processes, a mosquitto of the rig's own
(when installed). Latencies are from the act (a request sent, a group asked of the keypad, a tag
put down) to the moment the input is in the daemon's journal with its events; a dealer command's
is the request's round trip over MQTT, then over the daemon's console socket.
"""

from __future__ import annotations

import asyncio
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from simulators.rig.broker import mosquitto_binary
from simulators.rig.dealer import TableDealer
from simulators.rig.demo import STYLE, demo_scenario
from simulators.rig.mirror import Mirror, open_reader
from simulators.rig.rig import Rig, RigOptions
from simulators.rig.setup import TableSetup
from simulators.scenario import device_play
from simulators.scenario.device_play import DevicePlay
from simulators.scenario.device_runner import run_files
from simulators.scenario.model import Step, load_scenario

Row = tuple[str, str, str]
SCENARIOS = Path(__file__).resolve().parents[1] / "tests" / "scenarios"
HANDS = 40


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


class Stopwatch:
    """Times the device primitives of the rig's dealer (``DevicePlay``) by name."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}
        self._saved: dict[str, Callable[..., Any]] = {}

    def __enter__(self) -> Stopwatch:
        for name in ("command", "deal_group", "feed"):
            original = getattr(DevicePlay, name)
            self._saved[name] = original
            setattr(DevicePlay, name, self._timed(name, original))
        return self

    def _timed(self, name: str, original: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def timed(play: DevicePlay, *args: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(play, *args)
            finally:
                label = f"feed {type(args[0]).__name__}" if name == "feed" else name
                self.samples.setdefault(label, []).append(time.perf_counter() - started)

        return timed

    def __exit__(self, *exc: object) -> None:
        for name, original in self._saved.items():
            setattr(DevicePlay, name, original)


async def hands(broker: str) -> tuple[list[Row], Stopwatch]:
    """Random hands by the rig's dealer, no mistakes; how fast a table plays."""
    rows: list[Row] = []
    with Stopwatch() as watch:
        async with Rig(RigOptions(broker=broker)) as rig:
            scenario = demo_scenario("rrop-cash")
            table = scenario.table
            setup = TableSetup(
                id=table.id, stacks=table.stacks, button=table.button, settle=table.settle
            )
            started = time.perf_counter()
            opened = await rig.open_table(setup)
            ready = time.perf_counter() - started
            dealer = TableDealer(scenario, random.Random(5), rate=0.0)
            dealer.style = STYLE
            mirror = Mirror(await open_reader(opened.journal))
            dealer.attach(opened, mirror)
            await dealer.settle_at_start(unapproved=False)
            began = time.perf_counter()
            while dealer.completed < HANDS and await dealer.deal_hand():
                pass
            done, seconds = dealer.completed, time.perf_counter() - began
            mirror.close()
            where = "MQTT" if opened.broker is not None else "journal"
            rows.append(
                ("first table open -> READY", "simulators and daemon started", f"{ready:.2f} s")
            )
            rows.append(
                ("hands, no mistakes", f"6 seats, {where}", f"{done / seconds:.1f} hands/s")
            )
    return rows, watch


async def console_rows() -> list[Row]:
    """A dealer command over the console socket (no broker)."""
    with Stopwatch() as watch:
        async with Rig(RigOptions(broker="none")) as rig:
            opened = await rig.open_table(TableSetup(id="B", stacks={1: 10, 2: 10}, button=1))
            scenario = demo_scenario("rrop-cash")
            dealer = TableDealer(scenario, random.Random(1), rate=0.0)
            mirror = Mirror(await open_reader(opened.journal))
            dealer.attach(opened, mirror)
            for _ in range(30):
                await dealer.feed(dealer.dealer_command(Step(dealer="misdeal", reason="bench")))
            mirror.close()
    return [("misdeal refused", "console socket round trip", _summary(watch.samples["command"]))]


async def scenario_rows(broker: str) -> list[Row]:
    """Every device-mode file of tests/scenarios, one rig and three rigs at once."""
    files = [
        p for p in sorted(SCENARIOS.glob("*.toml")) if "device" in load_scenario(p).scenario.modes
    ]
    scenarios = [load_scenario(p) for p in files]
    rows: list[Row] = []
    for jobs in (1, 3):
        started = time.perf_counter()
        errors = 0
        async for _, outcome in run_files(scenarios, RigOptions(broker=broker), jobs):
            errors += not hasattr(outcome, "envelopes")
        seconds = time.perf_counter() - started
        rows.append(
            (
                f"{len(files)} scenario files",
                f"{jobs} rig(s) at once, {errors} errors",
                f"{seconds:.1f} s",
            )
        )
    return rows


async def main() -> None:
    broker = "auto" if mosquitto_binary() else "none"
    rows, watch = await hands(broker)
    labels = {
        "command": "dealer command (MQTT)",
        "deal_group": "keypad group -> journaled",
        "feed TagArrived": "tag down -> journaled",
    }
    for key, label in labels.items():
        if key in watch.samples:
            rows.append((label, f"{len(watch.samples[key])} samples", _summary(watch.samples[key])))
    rows += await console_rows()
    rows += await scenario_rows(broker)
    cpus = os.cpu_count()
    print(f"Rig benchmarks ({sys.platform}, Python {platform.python_version()}, {cpus} CPUs)")
    for row in rows:
        print(f"{row[0]:<28} {row[1]:<34} {row[2]}")


if __name__ == "__main__":
    device_play.WAIT = 30.0
    asyncio.run(main())
