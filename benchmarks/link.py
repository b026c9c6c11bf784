"""TSP/1 over a real pty: request round trip and event throughput, next to the 115200-baud line.

Starts ``tablectl sim shuffler`` as its own process, connects the real driver to it and measures
(1) sequential GET_STATUS round trips and (2) how fast a burst of device events (FAULT_RAISED and
FAULT_CLEARED pairs) reaches the driver's sink, each acknowledged one at a time. It runs twice:
with the simulator pacing its output at 115200 baud (what a real UART allows) and unpaced (what
the pty, the codec and the event loop allow). Run: ``.venv/bin/python benchmarks/link.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import structlog

from controller.table.inputs import DeviceFault, DeviceFaultCleared, DeviceInput
from drivers.shuffler.driver import ShufflerDriver
from drivers.shuffler.options import ShufflerOptions
from drivers.tsp.frame import Flags, Frame
from simulators.control_client import ControlClient

BAUD = 115200
#: A GET_STATUS request and its 19-byte response, as wire bytes.
RTT_WIRE_BYTES = len(Frame(0x11, Flags.REQ, 1).to_wire()) + len(
    Frame(0x11, Flags.RSP, 1, 1, bytes(19)).to_wire()
)


async def measure(paced: bool, requests: int, events: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        link, control = Path(tmp) / "tty", Path(tmp) / "ctl"
        baud = str(BAUD if paced else 0)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "controller.cli", "sim", "shuffler",
            "--link", str(link), "--control", str(control), "--baud", baud,
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stdout is not None
        await process.stdout.readline()
        received = 0
        done = asyncio.Event()

        async def sink(item: DeviceInput) -> None:
            nonlocal received
            if isinstance(item, DeviceFault | DeviceFaultCleared):
                received += 1
                if received == events:
                    done.set()

        driver = ShufflerDriver("bench", ShufflerOptions(port=str(link), heartbeat_interval=60))
        task = asyncio.create_task(driver.supervise(sink).run())
        try:
            await driver.wait_online(timeout=20)
            rtts = []
            for _ in range(requests):
                start = time.perf_counter()
                await driver.get_status()
                rtts.append(time.perf_counter() - start)
            async with ControlClient(control) as sim:
                start = time.perf_counter()
                await sim.send({"burst": events // 2})
                await asyncio.wait_for(done.wait(), 300)
                elapsed = time.perf_counter() - start
            stats = driver.stats
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            process.terminate()
            await process.wait()
    rtts.sort()
    return {
        "rtt_median_ms": statistics.median(rtts) * 1000,
        "rtt_p95_ms": rtts[int(len(rtts) * 0.95) - 1] * 1000,
        "events_per_s": events / elapsed,
        "retransmits": stats.retransmits,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    # One event exchange: a FAULT_RAISED or FAULT_CLEARED frame one way, a link ACK the other.
    event_bytes = (
        len(Frame(0x46, Flags.EVT, 1, 0, bytes(12)).to_wire())
        + len(Frame(0x47, Flags.EVT, 1, 0, bytes(5)).to_wire())
    ) / 2
    ack_bytes = len(Frame(0x00, Flags.ACK, 0, 1).to_wire())
    line_rtt_ms = RTT_WIRE_BYTES * 10 / BAUD * 1000
    line_events = BAUD / 10 / event_bytes  # the device's direction is the bottleneck
    print(f"TSP/1 over a pty; {args.requests} GET_STATUS, {args.events} events")
    print(f"line at {BAUD} baud: round trip {line_rtt_ms:.2f} ms of wire time "
          f"({RTT_WIRE_BYTES} bytes); at most {line_events:.0f} events/s "
          f"({event_bytes:.0f} bytes each, plus a {ack_bytes}-byte ACK back)")  # fmt: skip
    print()
    print(f"{'simulator output':<22}{'RTT median':>12}{'RTT p95':>10}{'events/s':>11}"
          f"{'% of line':>11}{'retransmits':>13}")  # fmt: skip
    for paced in (True, False):
        result = asyncio.run(measure(paced, args.requests, args.events))
        label = f"paced {BAUD} baud" if paced else "unpaced"
        print(
            f"{label:<22}{result['rtt_median_ms']:>9.2f} ms{result['rtt_p95_ms']:>7.2f} ms"
            f"{result['events_per_s']:>11.0f}{100 * result['events_per_s'] / line_events:>10.0f}%"
            f"{result['retransmits']:>13.0f}"
        )


if __name__ == "__main__":
    main()
