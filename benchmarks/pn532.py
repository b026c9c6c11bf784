"""PN532 reader figures: codec and tracker throughput, poll rate, latencies, libnfc run time.

Run ``.venv/bin/python benchmarks/pn532.py``. The driver and the simulator share one event loop
and one core here, so poll rates are a lower bound for the driver alone; a real module at
115200 baud adds about 1 ms of wire time per frame and its own RF time per activation.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from controller.table.inputs import DeviceHealthChanged, Health, TagArrived, TagDeparted
from drivers.rfid.pn532.driver import Pn532Reader
from drivers.rfid.pn532.frames import FrameDecoder, encode_information
from drivers.rfid.presence import Debounce, PresenceTracker
from simulators.pn532.server import Pn532Simulator

Row = tuple[str, str, str]
TWO_TARGETS = bytes.fromhex(
    "4b02" + "01004400" + "0704a1b2c3d4e580" + "02004400" + "0704112233445566"
)


def timed(function: Callable[[], object], repeat: int = 5) -> float:
    """Best wall time of ``repeat`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def codec_rows() -> list[Row]:
    frame = encode_information(0xD5, TWO_TARGETS)
    stream = frame * 20_000
    rows = []
    for chunk in (1, 16, 4096):
        pieces = [stream[i : i + chunk] for i in range(0, len(stream), chunk)]

        def decode(pieces: list[bytes] = pieces) -> None:
            decoder = FrameDecoder()
            for piece in pieces:
                decoder.feed(piece)

        seconds = timed(decode, repeat=3)
        rate = f"{20_000 / seconds:,.0f} frames/s ({len(stream) / seconds / 1e6:.1f} MB/s)"
        rows.append(("decode 2-target answers", f"{chunk}-byte chunks", rate))
    seconds = timed(lambda: [encode_information(0xD4, b"\x4a\x02\x00") for _ in range(20_000)])
    rows.append(("encode InListPassiveTarget", "", f"{20_000 / seconds:,.0f} frames/s"))
    return rows


def tracker_rows() -> list[Row]:
    zones = [f"seat:{n}" for n in range(1, 11)] + ["board", "muck"]
    tags = {zone: {f"04{i:02x}{n:010x}" for n in range(2)} for i, zone in enumerate(zones)}
    t0 = datetime(2025, 1, 1, tzinfo=UTC)

    def run() -> None:
        tracker: PresenceTracker[str] = PresenceTracker(Debounce())
        for step in range(2_000):
            ts = t0 + timedelta(milliseconds=step)
            for zone in zones:
                tracker.seen(ts, zone, tags[zone] if step % 50 < 40 else ())

    seconds = timed(run, repeat=3)
    polls = 2_000 * len(zones)
    return [("presence tracker", "12 zones x 2 tags", f"{polls / seconds:,.0f} polls/s")]


async def poll_rate(directory: Path, modules: int, tags: int) -> float:
    """Good polls per second per module, polling back to back."""
    sims = []
    for index in range(modules):
        sim = Pn532Simulator(seed=index, link=directory / f"rate{modules}-{tags}-{index}")
        sim.place(bytes.fromhex(f"04{index:02x}{n:010x}") for n in range(tags))
        await sim.start()
        sims.append(sim)
    zones = [f"seat:{n + 1}" for n in range(modules)]
    options = {"modules": [{"port": s.device, "zone": z} for s, z in zip(sims, zones, strict=True)]}
    reader = Pn532Reader.from_options("bench", {**options, "poll_interval": 0.000_001})
    rates = []
    async with reader:
        await asyncio.sleep(0.5)  # warm up: connect, configure, settle
        for _ in range(3):  # best of three windows: pty hand-offs go through a kernel work queue
            before = sum(m.polls for m in reader.modules)
            start = time.perf_counter()
            await asyncio.sleep(0.7)
            done = sum(m.polls for m in reader.modules) - before
            rates.append(done / (time.perf_counter() - start) / modules)
    for sim in sims:
        sim.stop()
    return max(rates)


async def latencies(directory: Path, trials: int = 30) -> dict[str, list[float]]:
    """Place-to-arrival and lift-to-departure times at the default debounce and 50 ms polls."""
    sim = Pn532Simulator(seed=7, link=directory / "latency")
    await sim.start()
    reader = Pn532Reader.from_options(
        "bench", {"modules": [{"port": sim.device, "zone": "board"}], "poll_interval": 0.05}
    )
    out: dict[str, list[float]] = {"arrive": [], "depart": [], "replug": []}
    uid = bytes.fromhex("04a1b2c3d4e580")

    async def wait(kind: type, start: float) -> float:
        while True:
            event = await reader.next_event()
            if isinstance(event, kind) and (
                not isinstance(event, DeviceHealthChanged) or event.health is Health.ONLINE
            ):
                return time.perf_counter() - start

    async with reader:
        await wait(DeviceHealthChanged, time.perf_counter())
        for _ in range(trials):
            start = time.perf_counter()
            sim.place([uid])
            out["arrive"].append(await wait(TagArrived, start))
            start = time.perf_counter()
            sim.remove([uid])
            out["depart"].append(await wait(TagDeparted, start))
        for _ in range(5):
            sim.unplug()
            start = time.perf_counter()
            sim.replug()
            out["replug"].append(await wait(DeviceHealthChanged, start))
    sim.stop()
    return out


def nfc_list_seconds(directory: Path) -> float | None:
    if shutil.which("nfc-list") is None:
        return None
    link = directory / "libnfc"
    command = [sys.executable, "-m", "controller.cli", "sim", "pn532", "--link", str(link)]
    command += ["--tag", "04a1b2c3d4e580", "--tag", "04112233445566", "--tag", "deadbeef"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as sim:
        assert sim.stdout is not None
        sim.stdout.readline()
        env = {
            **os.environ,
            "LIBNFC_DEFAULT_DEVICE": f"pn532_uart:{link}",
            "LIBNFC_AUTO_SCAN": "false",
        }
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run(["nfc-list"], env=env, capture_output=True, check=True, timeout=60)
            runs.append(time.perf_counter() - start)
        sim.terminate()
    return min(runs)


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(values) * 1e3:.0f} ms, p95 {p95 * 1e3:.0f} ms"


async def driver_rows(directory: Path) -> list[Row]:
    rows = []
    for modules, tags in ((1, 0), (1, 2), (1, 5), (4, 2)):
        rate = await poll_rate(directory, modules, tags)
        rows.append(
            ("poll rate per module", f"{modules} module(s), {tags} tags", f"{rate:,.0f} polls/s")
        )
    lat = await latencies(directory)
    rows.append(("place -> TagArrived", "50 ms polls, arrive_n 2", ms(lat["arrive"])))
    rows.append(("lift -> TagDeparted", "50 ms polls, depart_n 3", ms(lat["depart"])))
    rows.append(("replug -> online", "reconnect_min 0.2 s", ms(lat["replug"])))
    return rows


def main() -> None:
    rows = codec_rows() + tracker_rows()
    with tempfile.TemporaryDirectory() as tmp:
        rows += asyncio.run(driver_rows(Path(tmp)))
        seconds = nfc_list_seconds(Path(tmp))
    rows.append(
        (
            "nfc-list, 3 tags",
            "libnfc 1.8 vs simulator",
            "not installed" if seconds is None else f"{seconds * 1e3:.0f} ms",
        )
    )
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    print(
        f"PN532 benchmarks ({sys.platform}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)"
    )
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
