"""Start ``tablectl`` children from a process that has already imported tablectl.

A rig starts a daemon and two simulators for every table it plays; each is a new interpreter
that spends about half a second of CPU importing the same modules before it does anything. The
launcher is one such interpreter, started once per rig process: it imports the daemon and the
simulators, then forks a child for each ``tablectl`` command line it is sent. A child is a real
process of its own (its own pid and session, its own standard streams, killed and waited for like
any other); it only skips the imports.

Protocol (a Unix socket; one connection per child): the client sends one JSON line
``{"argv": [...], "env": {...}, "cwd": "..."}`` with three file descriptors attached (the child's
stdin, stdout and stderr); the launcher answers ``{"pid": N}`` once the child runs and
``{"exit": CODE}`` when it has exited (CODE negative for a signal, as :mod:`subprocess` says).

The launcher is single-threaded (a fork from a process with threads could copy a held lock) and
exits when the process that started it closes its standard input (or dies), stopping the
children it still has.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib
import json
import os
import select
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from controller.cli import main as tablectl_main

#: What a child imports anyway: imported once, by the launcher, before the first fork.
PRELOAD = (
    "controller.cli",
    "controller.shell.cli",
    "controller.shell.cli_run",  # tablectl run: the daemon's verb
    "controller.shell.cli_client",  # tablectl tail and dealer
    "controller.shell.daemon",
    "drivers.shuffler.driver",  # the rig's table drives its simulators with these two
    "drivers.rfid.tsp_reader.driver",
    "simulators.cli",
    "simulators.shuffler.server",
    "simulators.rfid.server",
    "simulators.feig.cli",
    "simulators.pn532.cli",
)
_MAX_REQUEST = 1 << 20
_STOP_TIMEOUT = 10.0  # seconds for orphaned children to stop on SIGTERM before SIGKILL
_DRAIN_TIMEOUT = 5.0  # seconds for a child's output to be read once it has exited


class LauncherError(RuntimeError):
    """The launcher could not start a child."""


# ---------------------------------------------------------------------------- the launcher


def _child(request: dict[str, Any], fds: list[int], keep: list[int]) -> None:
    """In the forked child: become the command (never returns)."""
    code = 1
    try:
        for fd in keep:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        # The signals as a freshly started interpreter has them. SIGPIPE in particular stays
        # ignored (CPython ignores it at start-up, so a write to a closed socket raises
        # BrokenPipeError): were it the default, a daemon writing to a broker that has just died
        # would be killed outright, which no installed daemon ever is.
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv = [str(a) for a in request["argv"]]
        sys.argv = ["tablectl", *argv]
        try:
            code = tablectl_main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # the child's own failure: say it where its stderr goes
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _exit_code(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def serve(path: Path) -> None:
    """Run the launcher on ``path`` until standard input closes."""
    for name in PRELOAD:
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the selector
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_r, selectors.EVENT_READ, "reap")
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "stdin")
    waiting: dict[int, socket.socket] = {}  # pid → the connection told of its exit
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.data == "stdin":
                if not os.read(sys.stdin.fileno(), 4096):
                    _stop_all(waiting)
                    return
            elif key.data == "reap":
                os.read(wake_r, 4096)
                _reap(waiting)
            else:
                connection, _ = listener.accept()
                keep = [listener.fileno(), wake_r, wake_w, connection.fileno()]
                keep += [c.fileno() for c in waiting.values()]
                pid = _start(connection, keep)
                if pid is not None:
                    waiting[pid] = connection
                    _reap(waiting)  # it may have exited already


def _start(connection: socket.socket, keep: list[int]) -> int | None:
    connection.settimeout(10.0)
    fds: list[int] = []
    try:
        data, fds, _, _ = socket.recv_fds(connection, _MAX_REQUEST, 3)
        request = json.loads(data)
        if len(fds) != 3:
            raise LauncherError(f"expected 3 file descriptors, got {len(fds)}")
        if not isinstance(request, dict) or not {"argv", "env", "cwd"} <= request.keys():
            raise LauncherError("a request names argv, env and cwd")
    except (OSError, ValueError, LauncherError) as exc:
        for fd in fds:  # what came with a refused request is not kept
            os.close(fd)
        with contextlib.suppress(OSError):
            connection.sendall(json.dumps({"error": str(exc)}).encode() + b"\n")
        connection.close()
        return None
    pid = os.fork()
    if pid == 0:
        _child(request, fds, [*keep, sys.stdin.fileno()])
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):  # the client is gone: the child is still waited for
        connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pid


def _stop_all(waiting: dict[int, socket.socket]) -> None:
    """The process that started the launcher is gone without stopping its children (it was
    killed, or a test run was interrupted): stop them as it would have (SIGTERM, then SIGKILL),
    rather than leave daemons running with no one to stop them."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in list(waiting):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + _STOP_TIMEOUT
        while waiting and time.monotonic() < deadline:
            _reap(waiting)
            time.sleep(0.05)  # polling the children's exit while nothing else is left to do
        if not waiting:
            return


def _reap(waiting: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = waiting.pop(pid, None)
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.sendall(json.dumps({"exit": _exit_code(status)}).encode() + b"\n")
            connection.close()


# ---------------------------------------------------------------------------- the client


class _Server:
    """The launcher this process started (one per process, started on first use)."""

    _lock = threading.Lock()
    _instance: _Server | None = None

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="tablectl-launcher-"))
        self.path = self.directory / "socket"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "simulators.rig.launcher", str(self.path)],
            stdin=subprocess.PIPE,  # its end of life: closed when this process exits
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            self.proc.kill()
            raise LauncherError(f"the launcher did not start (exit {self.proc.wait()})")
        atexit.register(self.close)

    def close(self) -> None:
        """Stop the launcher (closing its input) and wait for it: nothing is left behind."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    @classmethod
    def get(cls) -> _Server:
        with cls._lock:
            if cls._instance is None or cls._instance.proc.poll() is not None:
                cls._instance = cls()
            return cls._instance


def _request(
    argv: list[str], env: dict[str, str], cwd: str, fds: list[int]
) -> tuple[int, socket.socket]:
    """Ask the launcher for a child with standard streams ``fds``: its pid, and the connection
    on which its exit will be told (blocking: the launcher answers as soon as it has forked)."""
    server = _Server.get()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(30.0)
        sock.connect(str(server.path))
        request = {"argv": argv, "env": env, "cwd": cwd}
        socket.send_fds(sock, [json.dumps(request).encode()], fds)
        line = b""
        while not line.endswith(b"\n"):
            chunk = sock.recv(1)
            if not chunk:
                break
            line += chunk
        answer = json.loads(line or b"{}")
        if "pid" not in answer:
            raise LauncherError(answer.get("error", "the launcher closed the connection"))
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return int(answer["pid"]), sock


def _read_exit(line: bytes) -> int:
    try:
        return int(json.loads(line)["exit"]) if line else 255
    except (ValueError, KeyError, TypeError):
        return 255


class LaunchedProcess:
    """A child started by the launcher, with the part of :class:`asyncio.subprocess.Process`
    the rig uses: ``pid``, ``returncode``, ``stdout``, ``wait``, ``send_signal``, ``kill``."""

    def __init__(
        self, pid: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdout: asyncio.StreamReader | None = None
        self._reader = reader
        self._writer = writer
        self._pipe: tuple[asyncio.BaseTransport, asyncio.Future[None]] | None = None
        self._exited = asyncio.create_task(self._watch(), name=f"launched:{pid}")

    async def _watch(self) -> None:
        try:
            self.returncode = _read_exit(await self._reader.readline())
        except OSError:
            self.returncode = 255
        finally:
            self._writer.close()

    async def wait(self) -> int:
        """Wait for the child to exit (and its output pipe to be read to its end); its exit
        code."""
        await asyncio.shield(self._exited)
        if self._pipe is not None:
            transport, closed = self._pipe
            try:  # what the child wrote before it exited is still to be read
                async with asyncio.timeout(_DRAIN_TIMEOUT):
                    await asyncio.shield(closed)
            except TimeoutError:  # a process it started holds the pipe open
                transport.close()
        assert self.returncode is not None
        return self.returncode

    async def attach_stdout(self, pipe_r: int) -> None:
        """Read the child's standard output from ``pipe_r`` into :attr:`stdout`."""
        loop = asyncio.get_running_loop()
        output = asyncio.StreamReader(limit=1 << 20)
        closed: asyncio.Future[None] = loop.create_future()

        class Protocol(asyncio.StreamReaderProtocol):
            def connection_lost(self, exc: Exception | None) -> None:
                super().connection_lost(exc)
                if not closed.done():
                    closed.set_result(None)

        transport, _ = await loop.connect_read_pipe(
            lambda: Protocol(output), os.fdopen(pipe_r, "rb", 0)
        )
        self.stdout = output
        self._pipe = (transport, closed)

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to the child (ProcessLookupError once it has been waited for)."""
        if self.returncode is not None:
            raise ProcessLookupError(self.pid)
        os.kill(self.pid, sig)

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)


async def launch(
    argv: list[str], env: dict[str, str], *, stdout: int | None, stderr: int
) -> LaunchedProcess:
    """Start ``tablectl *argv``; ``stdout`` None gives a pipe (``process.stdout``)."""
    pipe_r: int | None = None
    if stdout is None:
        pipe_r, stdout = os.pipe()
    stdin = os.open(os.devnull, os.O_RDONLY)
    try:
        pid, sock = await asyncio.to_thread(
            _request, argv, env, os.getcwd(), [stdin, stdout, stderr]
        )
    except BaseException:
        if pipe_r is not None:
            os.close(pipe_r)
        raise
    finally:
        os.close(stdin)
        if pipe_r is not None:
            os.close(stdout)
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    process = LaunchedProcess(pid, reader, writer)
    if pipe_r is not None:
        await process.attach_stdout(pipe_r)
    return process


class SpawnedProcess:
    """A child started by the launcher, for code without an event loop: the part of
    :class:`subprocess.Popen` a test harness uses (``pid``, ``returncode``, ``poll``,
    ``wait``, ``send_signal``, ``terminate``, ``kill``)."""

    def __init__(self, pid: int, sock: socket.socket, argv: list[str]) -> None:
        self.pid = pid
        self.args = argv
        self.returncode: int | None = None
        self._sock = sock

    def poll(self) -> int | None:
        """The exit code, or None while the child runs."""
        return self.wait(0) if self._exited(0) else self.returncode

    def _exited(self, timeout: float | None) -> bool:
        if self.returncode is not None:
            return True
        ready, _, _ = select.select([self._sock], [], [], timeout)
        return bool(ready)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to exit (:class:`subprocess.TimeoutExpired` after ``timeout``)."""
        if self.returncode is None:
            if not self._exited(timeout):
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            with self._sock, self._sock.makefile("rb") as answers:
                self.returncode = _read_exit(answers.readline())
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to the child, unless it has been waited for."""
        if self.returncode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)


def spawn(
    argv: list[str], env: dict[str, str], *, stdout: int, stderr: int, cwd: str | None = None
) -> SpawnedProcess:
    """Start ``tablectl *argv`` with its output on ``stdout`` and ``stderr`` (blocking)."""
    stdin = os.open(os.devnull, os.O_RDONLY)
    try:
        pid, sock = _request(argv, env, cwd or os.getcwd(), [stdin, stdout, stderr])
    finally:
        os.close(stdin)
    return SpawnedProcess(pid, sock, argv)


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
