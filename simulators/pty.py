"""A simulated serial cable: a pseudo-terminal whose slave side a driver opens like a real port.

The simulator keeps the master side. The slave is put in raw mode before its path is published
(otherwise the line discipline echoes and translates bytes), and the simulator holds its own
slave descriptor open so that reading the master does not fail while no driver is connected.

Unplugging closes both ends: the driver's reads and writes fail the way they do when a USB serial
adapter is pulled, and the symlink disappears like a udev link. Replugging opens a fresh pty (a
new ``/dev/pts/N``) and points the symlink at it, so a driver configured with the symlink finds
the device again.
"""

from __future__ import annotations

import contextlib
import os
import tty
from pathlib import Path


class PtyCable:
    """One pty pair with an optional stable symlink."""

    def __init__(self, link: Path | str | None = None) -> None:
        self.link = Path(link) if link is not None else None
        self._master: int | None = None
        self._slave: int | None = None
        self._path: str | None = None

    @property
    def plugged(self) -> bool:
        """True while the pty exists."""
        return self._master is not None

    @property
    def master_fd(self) -> int:
        """The simulator's end (non-blocking)."""
        if self._master is None:
            raise RuntimeError("the pty is unplugged")
        return self._master

    @property
    def path(self) -> str:
        """The slave device path a driver opens (``/dev/pts/N``)."""
        if self._path is None:
            raise RuntimeError("the pty is unplugged")
        return self._path

    @property
    def device(self) -> str:
        """What a driver should be configured with: the symlink if there is one."""
        return str(self.link) if self.link is not None else self.path

    def plug(self) -> str:
        """Open the pty (raw mode), point the symlink at it, return the slave path."""
        if self._master is not None:
            return self.path
        master, slave = os.openpty()
        try:
            tty.setraw(slave)
            os.set_blocking(master, False)
            path = os.ttyname(slave)
            if self.link is not None:
                # Replace atomically so a driver never sees a missing or half-made link.
                temporary = self.link.with_name(f".{self.link.name}.{os.getpid()}")
                with contextlib.suppress(FileNotFoundError):
                    temporary.unlink()
                temporary.symlink_to(path)
                temporary.replace(self.link)
        except BaseException:
            os.close(master)
            os.close(slave)
            raise
        self._master, self._slave, self._path = master, slave, path
        return path

    def unplug(self) -> None:
        """Close both ends and remove the symlink (if it still points at this pty)."""
        if self.link is not None and self._path is not None:
            with contextlib.suppress(OSError):
                if os.readlink(self.link) == self._path:
                    self.link.unlink()
        for fd in (self._master, self._slave):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._slave = self._path = None

    def replug(self) -> str:
        """Unplug, then plug into a fresh pty; returns the new slave path."""
        self.unplug()
        return self.plug()

    def read(self, size: int = 4096) -> bytes:
        """Whatever the driver wrote (``b""`` when nothing is waiting)."""
        try:
            return os.read(self.master_fd, size)
        except BlockingIOError:
            return b""

    def write(self, data: bytes) -> int:
        """Send bytes to the driver; returns how many the pty took (a full pty drops the rest)."""
        try:
            return os.write(self.master_fd, data)
        except BlockingIOError:
            return 0

    def __enter__(self) -> PtyCable:
        self.plug()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.unplug()
