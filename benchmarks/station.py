"""The dealer's station by taps: how long from a tap to the event journaled and to the screen
showing it, and what the station's process costs over ``--hands`` hands.

All real and on this machine: mosquitto, ``tablectl run`` on a virtual table (three seats, the
readers reading every card dealt, a badge reader), ``tablectl station run`` as its own process,
and Debian's chromium (Playwright, a 1280 x 800 touch screen) on the station's page. A dealer
logs in with the PIN pad and plays every hand by taps: **Start hand**, **Check** or **Call** to
the river, **Table** each hand at the showdown, **Confirm** the award's RR-SD-4 hold, **Push
award**. Each tap is timed by the page itself (station.js's performance marks): from the tap to
the station's answer, which comes once the daemon has journaled what the tap caused, and to the
first screen that shows the answer's last event (the sections put in place; the paint follows at
the next frame). The station's CPU time and memory come from /proc: its resident set at the
start and at the end, its peak, and its CPU seconds per hand and per wall second.

    .venv/bin/python benchmarks/station.py [--hands 100]

The figures and the machine's load go to benchmarks/station-results.txt (``--write``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.broker import mosquitto_available
from tests.station.rig import ANN_BADGE, PINS, served_table
from tests.station.taps import (
    SHOWS,
    start_station,
    stop_station,
    tap,
    tap_and_wait,
    tap_pin,
    until_mode,
)

CHROMIUM = Path("/usr/bin/chromium")
GOAL_P95 = 100.0  # ms, tap to screen
TICKS = os.sysconf("SC_CLK_TCK")
RESULTS = Path(__file__).with_name("station-results.txt")


@dataclass
class Timings:
    """Each tap's milliseconds to the answer (journaled) and to the screen, by what was tapped."""

    answered: dict[str, list[float]] = field(default_factory=dict)
    shown: dict[str, list[float]] = field(default_factory=dict)

    def add(self, what: str, answered: float, shown: float) -> None:
        self.answered.setdefault(what, []).append(answered)
        self.shown.setdefault(what, []).append(shown)

    def all(self, which: dict[str, list[float]]) -> list[float]:
        return [t for times in which.values() for t in times]


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


def process(pid: int) -> tuple[float, int, int]:
    """CPU seconds (user and system), resident and peak resident kB of ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICKS
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return cpu, int(status["VmRSS"].split()[0]), int(status["VmHWM"].split()[0])


def play(page: Any, timings: Timings) -> None:
    """One hand by taps, each timed."""
    until_mode(page, "start")
    timings.add("Start hand", *tap_and_wait(page, "Start hand"))
    for _ in range(200):
        now = until_mode(page, "betting", "showdown", "award", "held", "start")
        pad = page.locator("#pad")
        if now == "start":
            return
        if now == "betting":
            name = "Check" if pad.get_by_role("button", name="Check").is_enabled() else "Call"
            timings.add(name, *tap_and_wait(page, name, pad))
        elif now == "showdown":
            name = pad.locator("button.primary").first.inner_text()
            timings.add("Table", *tap_and_wait(page, name, pad))
        elif now == "held":
            timings.add("Confirm", *tap_and_wait(page, "Confirm", page.locator("#holds")))
        elif now == "award":
            timings.add("Push award", *tap_and_wait(page, "Push award", pad))
    raise RuntimeError("the hand did not end")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}, {os.cpu_count()} cores"


def report(hands: int, timings: Timings, cost: dict[str, float], took: float) -> str:
    lines = [
        f"{hands} hands by taps in {took:.0f} s, three seats, every card read (virtual table); "
        f"{load()} at the end",
        "",
        f"{'tap':<12} {'taps':>6} {'journaled p50':>14} {'p95':>7} {'screen p50':>11} {'p95':>7}",
    ]
    rows = [*sorted(timings.shown), "all"]
    for what in rows:
        answered = timings.all(timings.answered) if what == "all" else timings.answered[what]
        shown = timings.all(timings.shown) if what == "all" else timings.shown[what]
        lines.append(
            f"{what:<12} {len(shown):>6} {statistics.median(answered):>12.1f}ms "
            f"{percentile(answered, 95):>5.1f}ms {statistics.median(shown):>9.1f}ms "
            f"{percentile(shown, 95):>5.1f}ms"
        )
    p95 = percentile(timings.all(timings.shown), 95)
    verdict = "met" if p95 <= GOAL_P95 else "NOT met"
    lines += [
        "",
        f"goal: tap to screen p95 <= {GOAL_P95:.0f} ms: {verdict} ({p95:.1f} ms)",
        f"station process: RSS {cost['rss_start'] / 1024:.1f} MiB at the start, "
        f"{cost['rss_end'] / 1024:.1f} MiB after {hands} hands (peak "
        f"{cost['rss_peak'] / 1024:.1f} MiB); CPU {cost['cpu']:.2f} s in all, "
        f"{cost['cpu'] / hands * 1000:.1f} ms a hand, {cost['cpu'] / took * 100:.1f} % of a core",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--hands", type=int, default=100)
    parser.add_argument("--write", action="store_true", help=f"append the figures to {RESULTS}")
    args = parser.parse_args()
    if not mosquitto_available() or not CHROMIUM.exists():
        print("needs mosquitto and Debian's chromium", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 (dev extra)

    directory = Path(tempfile.mkdtemp(prefix="station-bench-"))
    broker, port, table = served_table(directory, stacks="{ 1 = 100000, 2 = 100000, 3 = 100000 }")
    table.daemon.start()
    url = f"http://127.0.0.1:{port}"
    timings = Timings()
    with (directory / "station.log").open("wb") as log:
        station = start_station(table.config, url, log)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=["--no-sandbox"]
                )
                context = browser.new_context(
                    viewport={"width": 1280, "height": 800}, has_touch=True
                )
                page = context.new_page()
                page.set_default_timeout(SHOWS)
                page.goto(url + "/")
                page.locator("#live-state").filter(has_text="● live").wait_for()
                table.badge(ANN_BADGE)
                page.locator("#badge").filter(has_text="Ann Example").wait_for()
                tap_pin(page, PINS["ann"])
                tap(page, "Log in")
                page.locator("#status .dealer-name").wait_for()
                cpu0, rss0, _ = process(station.pid)
                started = time.monotonic()
                for hand in range(args.hands):
                    play(page, timings)
                    if (hand + 1) % 10 == 0:
                        print(f"{hand + 1} hands", file=sys.stderr, flush=True)
                took = time.monotonic() - started
                cpu1, rss1, peak = process(station.pid)
                browser.close()
        finally:
            stop_station(station)
            table.daemon.close()
            broker.stop()
    cost = {"cpu": cpu1 - cpu0, "rss_start": rss0, "rss_end": rss1, "rss_peak": peak}
    text = report(args.hands, timings, cost, took)
    print(text)
    if args.write:
        stamp = time.strftime("%Y-%m-%d")
        with RESULTS.open("a") as results:
            results.write(f"# benchmarks/station.py --hands {args.hands} ({stamp})\n\n{text}\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
