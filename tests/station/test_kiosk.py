"""The kiosk unit's own command line shows the station live (docs/station.md, "Kiosk set-up").

``systemd/tablectl-kiosk.service`` starts Debian's chromium in kiosk mode under cage. Here that
very ExecStart line runs, pointed at a station on a free port, with cage on wlroots' headless
backend (no screen, no GPU: the environment variables of wlroots' docs/env_vars.md) as an
unprivileged user (cage refuses to run as root). The page it loads must run its script under
the station's Content-Security-Policy and the kiosk's flags and open its live stream: the
station's ``/healthz`` counts it (``live``), and frees it when the kiosk ends.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.station.rig import Running, Table, station_running

KIOSK = Path(__file__).resolve().parents[2] / "systemd" / "tablectl-kiosk.service"
#: Where the unit's kiosk looks: the station's default ``[station] listen``.
UNIT_URL = "http://127.0.0.1:8470/"

pytestmark = [
    pytest.mark.skipif(shutil.which("cage") is None, reason="cage is not installed"),
    # cage 0.1 starts Xwayland for X11 clients, and gives up without it
    pytest.mark.skipif(shutil.which("Xwayland") is None, reason="xwayland is not installed"),
    pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed"),
]


def exec_start(unit: Path) -> list[str]:
    """The unit's ExecStart command line, its continued lines joined."""
    joined = unit.read_text().replace("\\\n", " ")
    line = next(x for x in joined.splitlines() if x.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


@contextmanager
def kiosk(url: str, home: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The unit's command, on ``url``, under cage's headless backend, until the block ends;
    ``home``: a new directory the kiosk's user can reach (its HOME; its output in kiosk.log)."""
    command = exec_start(KIOSK)
    assert command.count(UNIT_URL) == 1, command
    command[command.index(UNIT_URL)] = url
    runtime = home / "runtime"  # XDG_RUNTIME_DIR: the Wayland socket, its owner's alone
    runtime.mkdir(mode=0o700)
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        for path in (home, runtime):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        command = [
            "setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
            *command,
        ]  # fmt: skip
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
        "WLR_BACKENDS": "headless",  # no display: an output in memory
        "WLR_LIBINPUT_NO_DEVICES": "1",  # no touch panel or keyboard either
        "WLR_RENDERER": "pixman",  # no GPU
    }
    log = (home / "kiosk.log").open("wb")
    process = subprocess.Popen(
        command, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(20)
        log.close()


async def live_streams(running: Running) -> int:
    return int((await running.client.get("/healthz")).json()["live"])


async def wait_live(running: Running, wanted: int, process: subprocess.Popen[bytes]) -> None:
    async with asyncio.timeout(120):
        while await live_streams(running) != wanted:
            assert process.poll() is None or wanted == 0, f"the kiosk ended: {process.returncode}"
            await asyncio.sleep(0.2)


def test_the_unit_runs_chromium_in_kiosk_mode_under_cage_on_the_station() -> None:
    command = exec_start(KIOSK)
    assert command[:3] == ["/usr/bin/cage", "-d", "--"]
    assert command[3] == "/usr/bin/chromium"
    assert {"--kiosk", "--incognito", "--ozone-platform=wayland"} <= set(command)
    assert command[-1] == UNIT_URL


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_the_kiosk_shows_the_station_live_and_lets_go_when_it_ends(table: Table) -> None:
    # not under pytest's own temporary directory: that is its owner's alone, and the kiosk runs
    # as another user
    home = Path(tempfile.mkdtemp(prefix="tablectl-kiosk-"))
    try:
        async with station_running(table.config) as running:
            assert await live_streams(running) == 0
            with kiosk(f"{running.base}/", home) as process:
                try:
                    await wait_live(running, 1, process)
                except (TimeoutError, AssertionError):
                    print((home / "kiosk.log").read_text(errors="replace")[-4000:])
                    raise
            await wait_live(running, 0, process)
    finally:
        shutil.rmtree(home, ignore_errors=True)
