"""The shipped unit passes ``systemd-analyze verify`` silently and scores 2.0 or better."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SYSTEMD = Path(__file__).resolve().parents[2] / "systemd"
UNIT = SYSTEMD / "table-controller.service"

needs_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


def rendered(tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at this environment's tablectl (verify checks it exists)."""
    tablectl = Path(sys.prefix) / "bin" / "tablectl"
    assert tablectl.exists()
    text = UNIT.read_text().replace("/opt/tablectl/venv/bin/tablectl", str(tablectl))
    path = tmp_path / UNIT.name
    path.write_text(text)
    return path


def test_the_unit_is_what_the_daemon_needs() -> None:
    text = UNIT.read_text()
    for line in (
        "Type=notify",
        "NotifyAccess=main",
        "WatchdogSec=20s",
        "Restart=on-failure",
        "StateDirectory=tablectl",
        "DevicePolicy=closed",
        "DeviceAllow=char-ttyUSB rw",
        "Environment=PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1",
    ):
        assert re.search(rf"^{re.escape(line)}$", text, re.MULTILINE), line
    assert "PrivateDevices=yes" not in text  # it would hide the serial ports


@needs_analyze
def test_systemd_analyze_verify_prints_nothing(tmp_path: Path) -> None:
    result = subprocess.run(
        ["systemd-analyze", "verify", str(rendered(tmp_path))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout + result.stderr == ""


@needs_analyze
def test_security_exposure_is_two_or_better(tmp_path: Path) -> None:
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", str(rendered(tmp_path))],
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout[-500:] + result.stderr
    assert float(match.group(1)) <= 2.0


def test_udev_rules_give_stable_names_and_the_units_groups() -> None:
    rules = [
        line
        for line in (SYSTEMD / "99-tablectl.rules").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert rules
    for rule in rules:
        assert 'GROUP="dialout"' in rule or 'GROUP="plugdev"' in rule
        assert 'MODE="0660"' in rule
    assert any('SYMLINK+="table/shuffler"' in rule for rule in rules)
