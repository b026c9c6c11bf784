"""A real mosquitto for the tests: the Debian binary on a free port, restartable on that port."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import IO

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def mosquitto_available() -> bool:
    """True when the broker binary is installed."""
    return os.access(MOSQUITTO, os.X_OK)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout: float = 10.0) -> None:
    """Wait until something accepts connections on ``port``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on port {port}") from None
            time.sleep(0.01)


class Broker:
    """One mosquitto process with its own config and log in ``directory``."""

    def __init__(self, directory: Path, *, extra: str = "", head: str = "") -> None:
        self.directory = directory
        self.port = free_port()
        self.extra = extra
        self.head = head  # global options that must come before the first listener
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """``mqtt://127.0.0.1:PORT``."""
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start (or restart, on the same port) and wait until it accepts connections."""
        conf = self.directory / "mosquitto.conf"
        for _ in range(3):
            # As root, mosquitto drops to its own user unless told otherwise, and could then
            # not write its persistence file into the test's directory.
            user = f"user {pwd.getpwuid(os.geteuid()).pw_name}\n"
            conf.write_text(
                f"{self.head}listener {self.port} 127.0.0.1\nallow_anonymous true\n{user}"
                f"log_dest stderr\nlog_type error\nlog_type warning\n"
                f"{self.extra or 'persistence false'}\n"
            )
            self._log = (self.directory / "mosquitto.log").open("ab")
            self.proc = subprocess.Popen(
                [MOSQUITTO, "-c", str(conf)], stdout=self._log, stderr=self._log
            )
            try:
                wait_port(self.port, 5.0)
                return
            except TimeoutError:
                self.stop()
                self.port = free_port()  # lost the race for the port: take another
        raise RuntimeError("mosquitto did not start")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the broker and wait for it to exit."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None
