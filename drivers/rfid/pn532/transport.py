"""A serial port on the asyncio event loop, without ever blocking it.

pyserial opens and configures the port (raw 8N1, baud rate, exclusive lock); after that the file
descriptor is non-blocking and driven by ``loop.add_reader`` / ``loop.add_writer``. Received
bytes go to a protocol's ``data_received``; a read or write error, or end of file, means the
device is gone (a USB adapter pulled, a simulator's pty closed) and ends in ``connection_lost``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from typing import Protocol

import serial

READ_SIZE = 4096


class StreamProtocol(Protocol):
    """Who receives what a serial stream reads."""

    def data_received(self, data: bytes) -> None:
        """Bytes arrived."""

    def connection_lost(self, exc: Exception) -> None:
        """The port failed or went away; no more data will come."""


class SerialStream:
    """An open serial port feeding a protocol."""

    def __init__(self, port: serial.Serial, protocol: StreamProtocol) -> None:
        self._port = port
        self._fd = port.fileno()
        self._protocol = protocol
        self._loop = asyncio.get_running_loop()
        self._pending = bytearray()
        self._closed = False
        os.set_blocking(self._fd, False)
        self._loop.add_reader(self._fd, self._on_readable)

    @classmethod
    async def open(
        cls, path: str, protocol: StreamProtocol, baudrate: int = 115200
    ) -> SerialStream:
        """Open ``path``; raises OSError or serial.SerialException if it cannot be opened."""

        def open_port() -> serial.Serial:
            return serial.Serial(path, baudrate=baudrate, timeout=0, exclusive=True)

        # Opening a real adapter can take a moment (USB, exclusive lock): keep it off the loop.
        port = await asyncio.to_thread(open_port)
        return cls(port, protocol)

    @property
    def closed(self) -> bool:
        """True once closed or lost."""
        return self._closed

    def write(self, data: bytes) -> None:
        """Queue bytes for the device; they go out as fast as the port takes them."""
        if self._closed:
            raise ConnectionError("the serial port is closed")
        if self._pending:
            self._pending += data
            return
        written = self._write_now(data)
        if written is not None and written < len(data):
            self._pending += data[written:]
            self._loop.add_writer(self._fd, self._on_writable)

    def close(self) -> None:
        """Stop reading and writing and close the port."""
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        # If the device is already gone there is nothing left to release.
        with contextlib.suppress(OSError, serial.SerialException):
            self._port.close()

    def _write_now(self, data: bytes | bytearray) -> int | None:
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            self._lost(exc)
            return None

    def _on_writable(self) -> None:
        written = self._write_now(self._pending)
        if written is None:
            return
        del self._pending[:written]
        if not self._pending:
            self._loop.remove_writer(self._fd)

    def _on_readable(self) -> None:
        try:
            data = os.read(self._fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError as exc:
            self._lost(exc)
            return
        if not data:
            self._lost(OSError(errno.EIO, "end of file: the device went away"))
            return
        self._protocol.data_received(data)

    def _lost(self, exc: Exception) -> None:
        if self._closed:
            return
        self.close()
        self._protocol.connection_lost(exc)
