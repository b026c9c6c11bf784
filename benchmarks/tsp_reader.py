"""TSP/1 reader figures: codec throughput, and tag latencies over a pty and the fake USB backend.

Run ``.venv/bin/python benchmarks/tsp_reader.py``. The pty rows run the driver and the simulator
on one event loop (the simulator paces its output at 115200 baud, as a real serial line would);
the USB rows run the simulated reader on its own thread behind the fake pyusb backend, the
driver's bulk transfers on theirs. Latencies are from the command that puts a tag down (or lifts
it) to the input in the driver's sink.
"""

from __future__ import annotations

import asyncio
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from controller.table.inputs import DeviceInput, Health, TagArrived, TagDeparted
from drivers.rfid.tsp_reader.driver import TspReader
from drivers.rfid.tsp_reader.events import InventorySnapshot, SnapshotEntry, TagArrivedEvent
from drivers.rfid.tsp_reader.usb import TspUsbReader
from drivers.tsp.deframer import Deframer
from drivers.tsp.frame import Flags, Frame
from simulators.pty import PtyCable
from simulators.rfid.model import ReaderConfig, ReaderModel
from simulators.rfid.server import ReaderPtyServer
from simulators.rfid.usb_backend import SimulatedUsbBus

Row = tuple[str, str, str]
ANTENNAS = [{"antenna": 0, "zone": "seat:1"}, {"antenna": 1, "zone": "board"}]
ROUNDS = 30


def codec_rows() -> list[Row]:
    arrived = TagArrivedEvent(3, 1, 3, bytes.fromhex("e004010012345678"), -41, 1, 2, 3)
    entries = tuple(
        SnapshotEntry(n, 0, tuple(bytes([0xE0, n, k, 0, 0, 0, 0, 1]) for k in range(2)))
        for n in range(12)
    )
    rows = []
    for name, payload, msg_type in (
        ("TAG_ARRIVED", arrived.encode(), 0x60),
        ("SNAPSHOT 12 x 2 tags", InventorySnapshot(1, 2, entries).encode(), 0x62),
    ):
        wire = Frame(msg_type, Flags.EVT, 1, 0, payload).to_wire() * 5000
        pieces = [wire[i : i + 64] for i in range(0, len(wire), 64)]
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            deframer = Deframer()
            for piece in pieces:
                deframer.feed(piece)
            best = min(best, time.perf_counter() - start)
        rows.append((f"deframe {name}", "64-byte reads", f"{5000 / best:,.0f} frames/s"))
    return rows


class Waiter:
    """A sink that can be waited on for the next input of a kind."""

    def __init__(self, timeout: float = 10.0) -> None:
        self.events: list[DeviceInput] = []
        self.changed = asyncio.Event()
        self.timeout = timeout

    async def sink(self, item: DeviceInput) -> None:
        self.events.append(item)
        self.changed.set()

    async def next(self, kind: type, uid: str) -> float:
        async with asyncio.timeout(self.timeout):
            while True:
                for event in self.events:
                    if isinstance(event, kind) and getattr(event, "uid", None) == uid:
                        self.events.remove(event)
                        return time.perf_counter()
                self.changed.clear()
                await self.changed.wait()


async def _latencies(
    place: Callable[[dict[str, Any]], object], waiter: Waiter
) -> tuple[list[float], list[float]]:
    arrive, depart = [], []
    for n in range(ROUNDS):
        uid = f"04b0{n:010x}"
        start = time.perf_counter()
        place({"place": [uid], "antenna": 0})
        arrive.append(await waiter.next(TagArrived, uid) - start)
        start = time.perf_counter()
        place({"remove": [uid]})
        depart.append(await waiter.next(TagDeparted, uid) - start)
        await asyncio.sleep(random.uniform(0, 0.01))  # do not stay in step with the sweeps
    return arrive, depart


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms"


async def pty_rows(period: int, directory: Path) -> list[Row]:
    loop = asyncio.get_running_loop()
    rng = random.Random(1)
    model = ReaderModel(ReaderConfig(), rng, loop.time())
    server = ReaderPtyServer(model, PtyCable(directory / f"reader{period}"), rng=rng)
    server.start()
    serving = asyncio.create_task(server.serve())
    waiter = Waiter()
    options = {"port": str(server.port.device), "antennas": ANTENNAS, "scan_period_ms": period}
    reader = TspReader.from_options("bench", options)
    await reader.start(waiter.sink)
    async with reader:
        await reader.wait_online(10)
        arrive, depart = await _latencies(server.handle, waiter)
    server.stop()
    await serving
    setting = f"pty, {period} ms sweeps"
    return [
        ("put down -> TagArrived", f"{setting}, arrive_n 2", _summary(arrive)),
        ("lifted -> TagDeparted", f"{setting}, depart_n 3", _summary(depart)),
    ]


async def usb_rows(period: int) -> list[Row]:
    bus = SimulatedUsbBus()
    device = bus.add_reader("BENCH", seed=1)
    waiter = Waiter()
    options = {"serial_number": "BENCH", "antennas": ANTENNAS, "scan_period_ms": period}
    reader = TspUsbReader.from_options("bench", options, usb_backend=bus)
    await reader.start(waiter.sink)
    async with reader:
        await reader.wait_online(10)
        arrive, depart = await _latencies(device.handle, waiter)
    bus.close()
    setting = f"fake USB, {period} ms sweeps"
    return [
        ("put down -> TagArrived", f"{setting}, arrive_n 2", _summary(arrive)),
        ("lifted -> TagDeparted", f"{setting}, depart_n 3", _summary(depart)),
    ]


async def replug_rows() -> list[Row]:
    """Unplug and replug: from the replug to the driver online again."""
    bus = SimulatedUsbBus()
    device = bus.add_reader("BENCH", seed=2)
    options = {"serial_number": "BENCH", "antennas": ANTENNAS, "backoff_base": 0.05}
    reader = TspUsbReader.from_options("bench", {**options, "backoff_cap": 0.2}, usb_backend=bus)
    samples = []
    async with reader:
        await reader.wait_online(10)
        assert reader.supervisor is not None
        for _ in range(10):
            device.unplug()
            await reader.supervisor.wait_for(Health.RECONNECTING, Health.FAILED, timeout=10)
            start = time.perf_counter()
            device.replug()
            await reader.wait_online(10)
            samples.append(time.perf_counter() - start)
    bus.close()
    return [("replug -> online", "fake USB, backoff up to 0.2 s", _summary(samples))]


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    rows = codec_rows()
    with tempfile.TemporaryDirectory() as directory:
        for period in (10, 50):
            rows += await pty_rows(period, Path(directory))
            rows += await usb_rows(period)
        rows += await replug_rows()
    print(f"TSP/1 reader benchmarks ({sys.platform}, Python {platform.python_version()})")
    for row in rows:
        print(f"{row[0]:<28} {row[1]:<40} {row[2]}")


if __name__ == "__main__":
    asyncio.run(main())
