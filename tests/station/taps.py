"""Tapping the dealer's station in chromium (Playwright's sync API, a touch-screen context): the
buttons by their visible text, the PIN pad, and waiting until the screen shows what the table
did. Shared by tests/station/test_browser.py and benchmarks/station.py.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import httpx

REPO = Path(__file__).resolve().parents[2]

#: How long the screen may take to show what the table did (ms): generous, for a machine whose
#: every core is busy (the latency is measured in benchmarks/station.py, not asserted).
SHOWS = 30_000


def tap(page: Any, name: str, within: Any = None) -> None:
    """Tap the button named ``name`` (its visible text)."""
    (within or page).get_by_role("button", name=name, exact=True).tap()


def tap_pin(page: Any, pin: str) -> None:
    """Type ``pin`` on the keypad."""
    pad = page.get_by_role("group", name="Keypad")
    for digit in pin:
        tap(page, digit, pad)


def mode(page: Any) -> str:
    """What the action panel is for now (start, dealing, betting, board, showdown, award,
    held, offline)."""
    return str(page.locator("#pad").get_attribute("data-mode"))


def until_mode(page: Any, *modes: str) -> str:
    """Until the action panel is for one of ``modes``."""
    page.wait_for_function(
        "modes => modes.includes(document.getElementById('pad')?.dataset.mode)",
        arg=list(modes),
        timeout=SHOWS,
    )
    return mode(page)


def seq(page: Any) -> int:
    """The event the screen shows the table at."""
    return int(page.locator("body").get_attribute("data-seq") or 0)


#: The page's own marks of the last tap (station.js): when it was tapped, when the station
#: answered (what it caused journaled), when the screen showed the answer's last event.
TIMED = """() => {
  const marks = performance.getEntriesByType("mark");
  const tap = marks.find((m) => m.name === "station:tap");
  const answer = marks.find((m) => m.name === "station:answer");
  if (!tap || !answer) return null;
  const wanted = answer.detail && answer.detail.seq;
  if (wanted === null || wanted === undefined) return null;
  // the first screen that shows it (the live stream may bring it before the answer comes)
  const shown = marks.find((m) => m.name === "station:shown" && m.startTime >= tap.startTime
    && m.detail && m.detail.seq >= wanted);
  if (!shown) return null;
  return [answer.startTime - tap.startTime, shown.startTime - tap.startTime];
}"""


def tap_and_wait(page: Any, name: str, within: Any = None) -> tuple[float, float]:
    """Tap ``name`` and wait until the screen shows what the table did with it: the
    milliseconds from the tap to the station's answer (the events journaled) and to the screen
    showing them, as the page measured them."""
    tap(page, name, within)
    handle = page.wait_for_function(TIMED, timeout=SHOWS)
    answered, shown = handle.json_value()
    return float(answered), float(shown)


def start_station(config: Path, url: str, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """``tablectl station run --config CONFIG`` as its own process, as systemd starts it; it
    answers at ``url`` and follows the table when this returns."""
    command = ["station", "run", "--config", str(config)]
    station = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", *command], cwd=REPO, stdout=log, stderr=log
    )
    deadline = time.monotonic() + 60
    while True:
        if station.poll() is not None:
            raise RuntimeError(f"the station exited with {station.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=5).json().get("daemon") == "connected":
                return station
        except httpx.HTTPError:
            pass  # not listening yet
        if time.monotonic() > deadline:
            station.kill()
            raise RuntimeError("the station did not come up in 60 s")
        time.sleep(0.05)  # polling the station's health for the condition


def stop_station(station: subprocess.Popen[bytes]) -> int:
    """SIGTERM, as systemd stops it; its exit status."""
    station.terminate()
    try:
        return station.wait(30)
    except subprocess.TimeoutExpired:
        station.kill()
        return station.wait(30)
