"""An asyncio byte transport over pyserial that never blocks the event loop.

pyserial opens and configures the port (in a worker thread: opening a real serial device can
block); after that the port's file descriptor is watched with ``loop.add_reader``. Reads use
``Serial(timeout=0)``, which returns what is there. Writes go straight to the non-blocking file
descriptor with ``add_writer`` for whatever the kernel did not take: pyserial's own non-blocking
``write`` retries EAGAIN in a busy loop, which would spin the event loop while the line is full.

A hang-up (the pty master closed, a USB adapter unplugged) shows as a read error or an empty read;
the transport then closes itself and reports the loss once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import termios

import serial

from drivers.errors import DeviceUnavailableError
from drivers.transport import DataCallback, LostCallback

PTY_SLAVE_MAJORS = range(136, 144)
"""The device numbers of Unix 98 pty slaves (Linux's devices.txt: 136-143, /dev/pts/*)."""


def is_pty(path: str) -> bool:
    """Whether ``path`` (or what it links to) is a pseudo-terminal's slave."""
    try:
        return os.major(os.stat(path).st_rdev) in PTY_SLAVE_MAJORS
    except OSError:
        return False


class SerialTransport:
    """One open serial port feeding a data callback."""

    def __init__(self, port: serial.Serial, on_data: DataCallback, on_lost: LostCallback) -> None:
        self._port = port
        self._fd = port.fileno()
        self._on_data = on_data
        self._on_lost = on_lost
        self._loop = asyncio.get_running_loop()
        self._pending = bytearray()
        self._closed = False
        self.bytes_read = 0
        self.bytes_written = 0
        self._loop.add_reader(self._fd, self._readable)

    @classmethod
    async def open(
        cls,
        path: str,
        on_data: DataCallback,
        on_lost: LostCallback,
        baudrate: int = 115200,
        *,
        parity: str = serial.PARITY_NONE,
    ) -> SerialTransport:
        """Open ``path`` (8 data bits, ``parity`` as pyserial names it, 1 stop bit, no flow
        control, exclusive) and start reading.

        A pseudo-terminal (a simulator's line) carries bytes, not characters: it has no parity
        bit to set, and Linux refuses to set one again once it has dropped it. On a pty the
        parity is therefore left out."""

        def _open() -> serial.Serial:
            wanted = serial.PARITY_NONE if is_pty(path) else parity
            return serial.Serial(
                path,
                baudrate=baudrate,
                parity=wanted,
                timeout=0,
                write_timeout=0,
                exclusive=True,
            )

        try:
            port = await asyncio.to_thread(_open)
        except (serial.SerialException, OSError, ValueError, termios.error) as exc:
            raise DeviceUnavailableError(f"cannot open {path}: {exc}") from exc
        return cls(port, on_data, on_lost)

    @property
    def is_closing(self) -> bool:
        """True once closed or lost."""
        return self._closed

    def write(self, data: bytes) -> None:
        """Queue ``data``; it is written as fast as the line takes it, in order."""
        if self._closed or not data:
            return
        if self._pending:
            self._pending += data
            return
        written = self._try_write(data)
        if written is not None and written < len(data):
            self._pending += data[written:]
            self._loop.add_writer(self._fd, self._writable)

    def close(self) -> None:
        """Stop reading and writing and close the port."""
        self._shutdown()

    async def wait_closed(self) -> None:
        """Closing a serial port is immediate: nothing to wait for."""

    def _try_write(self, data: bytes) -> int | None:
        try:
            written = os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            self._lost(exc)
            return None
        self.bytes_written += written
        return written

    def _writable(self) -> None:
        written = self._try_write(bytes(self._pending))
        if written is None:
            return
        del self._pending[:written]
        if not self._pending:
            self._loop.remove_writer(self._fd)

    def _readable(self) -> None:
        try:
            data = self._port.read(4096)
        except (serial.SerialException, OSError) as exc:
            self._lost(exc)
            return
        if data:
            self.bytes_read += len(data)
            self._on_data(data)

    def _lost(self, exc: Exception | None) -> None:
        if self._closed:
            return
        self._shutdown()
        self._on_lost(exc)

    def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        self._pending.clear()
        with contextlib.suppress(OSError, serial.SerialException):
            self._port.close()
