"""``tablectl demo`` shows the dealer's station: it prints the station's URL, serves the pages
there while it plays, and its automatic dealer's commands go through the station's API, so every
event a dealer's command caused names the demo's dealer (``auto``) as the station signs for it,
while the floor's rulings and the dealer's deliberate mistakes come over the rig's console."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: What the dealer taps at the station.
TAPPED = {"hand.started", "betting.action", "showdown.hand.tabled", "pot.awarded"}


def test_the_demo_serves_the_station_and_its_dealer_plays_through_it(tmp_path: Path) -> None:
    args = ["--hands", "3", "--seed", "3", "--broker", "none", "--json", "--irregularities", "0.5"]
    with (tmp_path / "events.jsonl").open("wb") as out:
        demo = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "demo", *args],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
        )
    try:
        assert demo.stderr is not None
        said = []
        for line in demo.stderr:  # the demo's notes, until the station's
            said.append(line)
            if "dealer's station" in line:
                break
        found = re.search(r"# the dealer's station: (http://127\.0\.0\.1:\d+/) ", "".join(said))
        assert found, "".join(said)
        url = found.group(1)
        # served while the demo plays: the log-in page and the health of its link to the table
        health = httpx.get(url + "healthz", timeout=30).json()
        assert health.pop("live") >= 0  # the automatic dealer plays through the API, unwatched
        assert health == {"status": "ok", "table": "DEMO", "daemon": "connected"}
        page = httpx.get(url, timeout=30)
        assert 'data-page="login"' in page.text  # this client is nobody: it may only look
        rest = demo.stderr.read()
        assert demo.wait(500) == 0, rest
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        if demo.stderr is not None:
            demo.stderr.close()
    assert "# 3 hands completed" in rest
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    tapped = [e for e in events if e["type"] in TAPPED and e.get("by") is not None]
    assert {e["type"] for e in tapped} == TAPPED
    assert all(e["by"] == {"person": "auto", "role": "dealer"} for e in tapped)
    # a hold the floor rules on was first called to the floor from the station (seed 3 makes
    # one: a mistake of the dealer's held for the floor)
    ruled = [e for e in events if e["type"] == "hand.resume" and e["by"]["role"] == "floor"]
    assert ruled
    called = [e for e in events if e["type"] == "floor.called"]
    assert {e["data"]["hold"] for e in called} >= {e["data"]["hold"] for e in ruled}
    assert all(e["by"] == {"person": "auto", "role": "dealer"} for e in called)
