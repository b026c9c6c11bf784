"""The station's and the kiosk's systemd units (docs/station.md, "Kiosk set-up"): the station's
passes ``systemd-analyze verify`` silently and scores 2.0 or better, runs as the daemon's own
user (the console socket is that user's alone) with its key and roster as credentials; the
kiosk opens the station's page where the station listens by default, in kiosk mode."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controller.config import StationSection

SYSTEMD = Path(__file__).resolve().parents[2] / "systemd"
STATION = SYSTEMD / "tablectl-station.service"
KIOSK = SYSTEMD / "tablectl-kiosk.service"

needs_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


def rendered(tmp_path: Path) -> Path:
    """The station's unit with ExecStart pointing at this environment's tablectl."""
    tablectl = Path(sys.prefix) / "bin" / "tablectl"
    text = STATION.read_text().replace("/opt/tablectl/venv/bin/tablectl", str(tablectl))
    path = tmp_path / STATION.name
    path.write_text(text)
    return path


def lines(unit: Path) -> set[str]:
    return set(unit.read_text().splitlines())


def test_the_station_runs_as_the_daemons_user_with_its_secrets_as_credentials() -> None:
    station = lines(STATION)
    assert {
        "DynamicUser=yes",
        "User=table-controller",  # the daemon's dynamic user: its unit's name
        "After=table-controller.service",
        "LoadCredential=station.key:/etc/tablectl/station.key",
        "LoadCredential=roster.toml:/etc/tablectl/roster.toml",
        "RestartPreventExitStatus=2",
        "ExecStart=/opt/tablectl/venv/bin/tablectl station run --config /etc/tablectl/table.toml",
    } <= station
    daemon = lines(SYSTEMD / "table-controller.service")
    assert not [line for line in daemon if line.startswith("User=")]  # named after its unit
    assert "RuntimeDirectory=tablectl" in daemon  # where the console socket is


def test_the_kiosk_opens_the_stations_page_in_kiosk_mode() -> None:
    text = KIOSK.read_text()
    host, port = StationSection().listen.split(":")
    assert re.search(rf"--kiosk .*http://{re.escape(host)}:{port}/$", text, re.DOTALL | re.M)
    assert "After=tablectl-station.service" in text
    assert "Restart=always" in text
    assert "Conflicts=getty@tty1.service" in text


@needs_analyze
def test_the_station_unit_verifies_silently_and_scores_two_or_better(tmp_path: Path) -> None:
    unit = rendered(tmp_path)
    verified = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False
    )
    assert verified.returncode == 0
    assert verified.stdout + verified.stderr == ""
    security = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", str(unit)],
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", security.stdout)
    assert match, security.stdout[-500:] + security.stderr
    assert float(match.group(1)) <= 2.0
