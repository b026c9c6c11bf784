"""The rig's child processes: started in their own session, stopped by their own pid.

A ``tablectl`` child is forked by the launcher (:mod:`simulators.rig.launcher`), which has
imported tablectl once for all of them; any other command is executed. Each child writes its
output to a log file in the rig's directory. A child that announces
readiness on its first line of standard output (the simulators print their device path) is
waited for; the rest of its output goes to the log. Stopping sends SIGTERM and, if the child does
not exit in time, SIGKILL, and always waits for it: the rig leaves no process behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import IO

from simulators.rig.launcher import LaunchedProcess, launch


class ChildError(RuntimeError):
    """A child process that did not start or exited early."""


def tablectl(*args: str) -> list[str]:
    """The command line of a ``tablectl`` verb run by this interpreter."""
    return [sys.executable, "-m", "controller.cli", *args]


class Child:
    """One child process of the rig."""

    def __init__(
        self, name: str, argv: list[str], directory: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = argv
        self.log_path = directory / f"{name}.log"
        self.env = env
        self.proc: asyncio.subprocess.Process | LaunchedProcess | None = None
        self._log: IO[bytes] | None = None
        self._copy: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """True while the process has not exited."""
        return self.proc is not None and self.proc.returncode is None

    @property
    def pid(self) -> int | None:
        """The process id (None before the start)."""
        return self.proc.pid if self.proc is not None else None

    async def start(self, *, first_line: bool = False, timeout: float = 20.0) -> str:
        """Start the process; with ``first_line``, wait for it and return it (else "")."""
        self._log = self.log_path.open("ab")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **(self.env or {})}
        prefix = tablectl()
        if self.argv[: len(prefix)] == prefix:
            self.proc = await launch(
                self.argv[len(prefix) :],
                env,
                stdout=None if first_line else self._log.fileno(),
                stderr=self._log.fileno(),
            )
        else:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE if first_line else self._log,
                stderr=self._log,
                env=env,
                start_new_session=True,  # a Ctrl-C at the terminal reaches the rig: it stops us
            )
        if not first_line:
            return ""
        assert self.proc.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                line = await self.proc.stdout.readline()
        except TimeoutError:
            await self.stop()
            raise ChildError(f"{self.name} did not start in {timeout} s: {self.tail()}") from None
        if not line:
            await self.stop()
            raise ChildError(f"{self.name} exited at start: {self.tail()}")
        self._copy = asyncio.create_task(self._copy_output(), name=f"{self.name}:output")
        return line.decode().strip()

    async def _copy_output(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        assert self._log is not None
        while chunk := await self.proc.stdout.read(65536):
            self._log.write(chunk)
            self._log.flush()

    async def stop(self, timeout: float = 10.0, sig: int = signal.SIGTERM) -> int | None:
        """Stop the process (SIGTERM, then SIGKILL after ``timeout``) and wait for it."""
        proc = self.proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)
            try:
                async with asyncio.timeout(timeout):
                    await proc.wait()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if self._copy is not None:
            with contextlib.suppress(TimeoutError):  # what the child wrote last, unless stuck
                async with asyncio.timeout(2.0):
                    await self._copy
            self._copy = None
        if self._log is not None:
            self._log.close()
            self._log = None
        return proc.returncode if proc is not None else None

    def tail(self, size: int = 3000) -> str:
        """The end of the child's log."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text[-size:]
