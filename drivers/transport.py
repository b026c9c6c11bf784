"""What a driver needs from a byte transport, whatever carries the bytes.

A serial port (:class:`~drivers.serial_transport.SerialTransport`), USB vendor bulk endpoints
(:class:`~drivers.usb_transport.UsbBulkTransport`) or anything else that moves a byte stream:
the transport calls ``on_data`` with whatever it read (any chunking: a read is not a frame) and
``on_lost`` once when the device goes away, both on the event loop; ``write`` never blocks. A
driver opens its transport through a :data:`TransportOpener`, so one driver class serves every
medium.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

DataCallback = Callable[[bytes], None]
LostCallback = Callable[[Exception | None], None]


class ByteTransport(Protocol):
    """An open byte stream to a device."""

    def write(self, data: bytes) -> None:
        """Queue bytes for the device, in order, without blocking."""

    def close(self) -> None:
        """Stop reading and writing and release the device."""

    async def wait_closed(self) -> None:
        """Wait until the device is released (threads joined, handles closed)."""


#: Opens a transport that feeds ``on_data`` and reports ``on_lost``.
TransportOpener = Callable[[DataCallback, LostCallback], Awaitable[ByteTransport]]
