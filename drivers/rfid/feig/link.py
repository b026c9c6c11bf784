"""Request/response exchanges with one ID ISC reader over its byte stream.

One request at a time: flush what is left of earlier answers, send the frame, wait for the
answer with the request's command byte. No answer in time is
:class:`~drivers.errors.LinkTimeoutError`; an answer whose CRC fails is :class:`BadFrameError`
(the caller decides whether to ask again); a port that went away is :class:`LinkLostError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from drivers.errors import DeviceError, DeviceUnavailableError, LinkTimeoutError
from drivers.rfid.feig.protocol import Frame, FrameDecoder, Garbage


class LinkLostError(DeviceUnavailableError):
    """The port failed or went away: the connection is over."""


class BadFrameError(DeviceError):
    """An answer arrived but failed its CRC."""


@dataclass(slots=True)
class LinkCounters:
    """What happened on the link, for health details and benchmarks."""

    requests: int = 0
    timeouts: int = 0
    bad_frames: int = 0
    garbage_bytes: int = 0
    stale_frames: int = 0


class _Lost:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc


class FeigLink:
    """The host side of the link; also the protocol its transport feeds."""

    def __init__(self, write: Callable[[bytes], None] | None = None, *, timeout: float) -> None:
        self.write = write
        self.timeout = timeout
        self.counters = LinkCounters()
        self._decoder = FrameDecoder(responses=True)
        self._items: asyncio.Queue[Frame | Garbage | _Lost] = asyncio.Queue()
        self._lost: Exception | None = None

    def data_received(self, data: bytes) -> None:
        """Bytes from the reader: decode and queue."""
        for item in self._decoder.feed(data):
            self._items.put_nowait(item)

    def connection_lost(self, exc: Exception | None) -> None:
        """The port is gone: the exchange in progress, and every later one, fails."""
        self._lost = exc or OSError("the port was closed")
        self._items.put_nowait(_Lost(self._lost))

    async def call(self, request: bytes) -> Frame:
        """Send one request frame; return the answer to its command."""
        if self._lost is not None:
            raise LinkLostError(str(self._lost))
        if self.write is None:
            raise LinkLostError("not connected")
        self._flush()
        command = request[2]
        self.counters.requests += 1
        self.write(request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                async with asyncio.timeout(remaining):
                    item = await self._items.get()
            except TimeoutError:
                self.counters.timeouts += 1
                raise LinkTimeoutError(f"no answer to 0x{command:02x}") from None
            if isinstance(item, _Lost):
                raise LinkLostError(str(item.exc))
            if isinstance(item, Garbage):
                self.counters.garbage_bytes += item.size
                if item.reason == "crc":
                    self.counters.bad_frames += 1
                    raise BadFrameError(f"the answer to 0x{command:02x} failed its CRC")
                continue
            if item.command != command:
                self.counters.stale_frames += 1  # the late answer to an abandoned request
                continue
            return item

    def _flush(self) -> None:
        """Like a host flushing its input before a request: leftovers are not answers."""
        self.counters.garbage_bytes += self._decoder.pending
        self._decoder.reset()
        while not self._items.empty():
            item = self._items.get_nowait()
            if isinstance(item, _Lost):
                raise LinkLostError(str(item.exc))
            self.counters.stale_frames += 1
