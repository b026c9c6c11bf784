"""The device end of a pseudo-terminal, for simulators of serial devices.

A simulator owns the master; the driver under test opens the slave path with pyserial exactly as
it would open ``/dev/ttyUSB0``. The slave is put in raw mode before its path is published, or the
line discipline would echo and translate bytes written before the driver configures the port. The
simulator keeps its own slave descriptor open, so reading the master never fails with EIO while
the driver is between connections.

Closing the pty is how a simulator "unplugs the cable": the driver's reads fail as they do when a
USB serial adapter is pulled. Reopening creates a new pty and re-points the symlink, the way udev
re-points ``/dev/serial/by-id/…`` when the device comes back.
"""

from __future__ import annotations

import contextlib
import os
import tty
from pathlib import Path


class PtyPort:
    """A raw pty whose master the simulator reads and writes."""

    def __init__(self, link: Path | None = None) -> None:
        self.link = link
        self._master: int | None = None
        self._slave: int | None = None
        self.path: str | None = None

    @property
    def is_open(self) -> bool:
        """True between :meth:`open` and :meth:`close`."""
        return self._master is not None

    @property
    def master_fd(self) -> int:
        """The master file descriptor (non-blocking); raise if the pty is closed."""
        if self._master is None:
            raise RuntimeError("the pty is closed (unplugged)")
        return self._master

    def open(self) -> str:
        """Create the pty (raw, non-blocking master), point the symlink at it, return its path."""
        master, slave = os.openpty()
        tty.setraw(slave)
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self.path = os.ttyname(slave)
        if self.link is not None:
            self._point_link(self.path)
        return self.path

    def close(self) -> None:
        """Close both ends: the driver holding the slave sees a hang-up."""
        for fd in (self._master, self._slave):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._slave = None

    def reopen(self) -> str:
        """Close (if open) and open a new pty; the symlink follows."""
        self.close()
        return self.open()

    def remove_link(self) -> None:
        """Remove the symlink if it still points at this pty."""
        if self.link is None or self.path is None:
            return
        with contextlib.suppress(OSError):
            if os.readlink(self.link) == self.path:
                self.link.unlink()

    def write(self, data: bytes) -> int:
        """Write what the slave's input queue takes; return the count (0 if it is full)."""
        try:
            return os.write(self.master_fd, data)
        except BlockingIOError:
            return 0

    def read(self, size: int = 4096) -> bytes:
        """Read what the driver wrote (empty when there is nothing)."""
        try:
            return os.read(self.master_fd, size)
        except BlockingIOError:
            return b""

    def _point_link(self, target: str) -> None:
        assert self.link is not None
        # Replace atomically, so a driver resolving the link never finds it missing.
        temporary = self.link.with_name(f".{self.link.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        temporary.symlink_to(target)
        os.replace(temporary, self.link)
