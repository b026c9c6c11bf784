"""The rig's launcher: children forked from a preloaded tablectl behave as executed ones."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from simulators.rig.children import Child, tablectl
from simulators.rig.launcher import LaunchedProcess, _Server, launch
from tests.rig.conftest import alive


async def test_a_launched_child_has_its_own_pid_session_streams_and_exit_code(
    tmp_path: Path,
) -> None:
    log = (tmp_path / "out.log").open("ab")
    try:
        process = await launch(["--version"], dict(os.environ), stdout=None, stderr=log.fileno())
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 20)
        assert line.startswith(b"tablectl ")
        assert await asyncio.wait_for(process.wait(), 20) == 0
        assert process.pid != os.getpid()
        bad = await launch(
            ["no-such-verb"], dict(os.environ), stdout=log.fileno(), stderr=log.fileno()
        )
        assert await asyncio.wait_for(bad.wait(), 20) == 2  # argparse's usage error
    finally:
        log.close()
    assert b"invalid choice: 'no-such-verb'" in (tmp_path / "out.log").read_bytes()


async def test_a_killed_child_reports_the_signal_in_its_own_session(tmp_path: Path) -> None:
    child = Child(
        "sim", tablectl("sim", "shuffler", "--link", str(tmp_path / "tty"), "--baud", "0"), tmp_path
    )
    await child.start(first_line=True, timeout=20)
    try:
        assert isinstance(child.proc, LaunchedProcess)
        pid = child.pid
        assert pid is not None
        assert os.getsid(pid) == pid  # a session of its own, as start_new_session gives
        assert os.readlink(f"/proc/{pid}/cwd") == os.getcwd()
    finally:
        code = await child.stop(sig=signal.SIGKILL)
    assert code == -signal.SIGKILL


def ignored_signals(pid: int) -> int:
    """The mask of the signals ``pid`` ignores (SigIgn in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no SigIgn for {pid}")


async def test_a_child_ignores_the_signals_a_fresh_interpreter_ignores(tmp_path: Path) -> None:
    """SIGPIPE above all: a forked child that took it back to the default died, silently, the
    first time it wrote to a socket whose peer had gone (a broker stopped under a daemon)."""
    fresh = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert fresh.stdout is not None
    assert fresh.stdout.readline() == b"up\n"  # its start-up, signals included, is over
    child = Child(
        "sim", tablectl("sim", "shuffler", "--link", str(tmp_path / "tty"), "--baud", "0"), tmp_path
    )
    await child.start(first_line=True, timeout=20)
    try:
        assert child.pid is not None
        # (not the whole mask: a test worker may run with SIGINT or SIGHUP ignored, which a
        # process it starts inherits and the launcher's child does not)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            assert ignored_signals(fresh.pid) & (1 << (sig - 1)), sig
            assert ignored_signals(child.pid) & (1 << (sig - 1)), sig
    finally:
        await child.stop()
        fresh.communicate(b"", timeout=20)


async def test_a_child_runs_with_the_environment_it_was_given(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "table.toml"
    env = {**os.environ, "TABLECTL_CONFIG": str(missing)}
    with (tmp_path / "err.log").open("ab") as log:
        process = await launch(["run"], env, stdout=log.fileno(), stderr=log.fileno())
        assert await asyncio.wait_for(process.wait(), 20) == 2
    assert str(missing) in (tmp_path / "err.log").read_text()


async def test_a_malformed_request_is_answered_and_the_launcher_goes_on() -> None:
    server = await asyncio.to_thread(_Server.get)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(20)
        sock.connect(str(server.path))
        sock.sendall(b"not json")
        answer = json.loads(sock.makefile("rb").readline())
    assert "error" in answer
    process = await launch(["--version"], dict(os.environ), stdout=None, stderr=2)
    assert await asyncio.wait_for(process.wait(), 20) == 0


def test_a_refused_request_keeps_none_of_the_descriptors_it_brought() -> None:
    server = _Server.get()
    pipe_r, pipe_w = os.pipe()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(20)
            sock.connect(str(server.path))
            socket.send_fds(sock, [b'{"argv": ["--version"]}'], [pipe_w, pipe_w, pipe_w])
            answer = json.loads(sock.makefile("rb").readline())
        assert answer == {"error": "a request names argv, env and cwd"}
        os.close(pipe_w)
        pipe_w = -1
        ready, _, _ = select.select([pipe_r], [], [], 20)
        assert ready  # end of file: no copy of the write end is left open in the launcher
        assert os.read(pipe_r, 1) == b""
    finally:
        os.close(pipe_r)
        if pipe_w >= 0:
            os.close(pipe_w)


def test_the_children_of_a_killed_rig_are_stopped(tmp_path: Path) -> None:
    """A rig killed with SIGKILL cannot stop its children: the launcher does, when it sees its
    parent gone, instead of leaving a daemon running that no one will stop."""
    script = (
        "import os, sys\n"
        "from simulators.rig.launcher import spawn\n"
        f"child = spawn(['sim', 'shuffler', '--link', {str(tmp_path / 'tty')!r}, '--baud', '0'],"
        " dict(os.environ), stdout=2, stderr=2)\n"
        "print(child.pid, flush=True)\n"
        "sys.stdin.read()\n"
    )
    rig = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert rig.stdout is not None
        child = int(rig.stdout.readline())
        assert alive(child)
        rig.kill()
        rig.wait()
        deadline = time.monotonic() + 30
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child)
    finally:
        if rig.poll() is None:
            rig.kill()
            rig.wait()
        for stream in (rig.stdin, rig.stdout):
            if stream is not None:
                stream.close()
