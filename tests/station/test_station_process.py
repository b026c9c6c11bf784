"""``tablectl station run`` as its own process, as systemd would start it: it serves, follows the
table, signs for the dealer, and stops cleanly on SIGTERM; a config it cannot run with is one
line and exit status 2."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.integration.broker import Broker, free_port
from tests.station.rig import PINS, make_table

REPO = Path(__file__).resolve().parents[2]


async def test_station_run_serves_signs_and_stops_on_sigterm(
    tmp_path: Path, broker: Broker
) -> None:
    port = free_port()
    table = make_table(tmp_path / "table", broker, station=f'listen = "127.0.0.1:{port}"\n')
    table.daemon.start()
    log = (tmp_path / "station.log").open("wb")
    station = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "station", "run", "--config", str(table.config)],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            await until_healthy(client, station, tmp_path / "station.log")
            login = await client.post("/api/login", json={"dealer": "ann", "pin": PINS["ann"]})
            assert login.status_code == 200, login.text
            started = await client.post("/api/hand/start", json={})
            assert started.status_code == 200, started.text
        hand = [e for e in table.events() if e["type"] == "hand.started"]
        assert hand[0]["by"] == {"person": "ann", "role": "dealer"}
        station.send_signal(signal.SIGTERM)
        assert station.wait(30) == 0
    finally:
        if station.poll() is None:
            station.kill()
        log.close()
        table.daemon.close()


async def until_healthy(
    client: httpx.AsyncClient, station: subprocess.Popen[bytes], log: Path, timeout: float = 60
) -> None:
    """Until the station answers /healthz and reaches the table (its log on failure)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        assert station.poll() is None, log.read_text()
        try:
            if (await client.get("/healthz")).json().get("daemon") == "connected":
                return
        except httpx.HTTPError:
            pass  # not listening yet
        assert loop.time() < deadline, f"the station did not come up:\n{log.read_text()}"
        await asyncio.sleep(0.05)


def test_station_run_names_what_it_lacks(tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    config.write_text(
        '[table]\nid = "T1"\nstacks = { 1 = 100, 2 = 100 }\nbutton = 1\nblinds = [1, 2]\n'
        "[security]\nrequire_signed = false\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "station", "run", "--config", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "station.console: no console socket" in done.stdout + done.stderr
