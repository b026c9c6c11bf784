"""Request/response exchanges with one ID ISC reader over its byte stream.

One request at a time (:class:`~drivers.request_link.RequestLink`): flush what is left of
earlier answers, send the frame, wait for the answer with the request's command byte. No answer
in time is :class:`~drivers.errors.LinkTimeoutError`; an answer whose CRC fails is
:class:`BadFrameError` (the caller decides whether to ask again); a port that went away is
:class:`~drivers.errors.LinkLostError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from drivers.errors import DeviceError
from drivers.request_link import LinkCounters, RequestLink
from drivers.rfid.feig.protocol import Frame, FrameDecoder, Garbage


class BadFrameError(DeviceError):
    """An answer arrived but failed its CRC."""


@dataclass(slots=True)
class FeigLinkCounters(LinkCounters):
    """The link's counters, and the requests sent and answers that failed their CRC."""

    requests: int = 0
    bad_frames: int = 0


class FeigLink(RequestLink[Frame | Garbage, FeigLinkCounters]):
    """The host side of the link; also the protocol its transport feeds."""

    def __init__(self, write: Callable[[bytes], None] | None = None, *, timeout: float) -> None:
        super().__init__(
            write,
            decoder=FrameDecoder(responses=True),
            garbage=Garbage,
            corrupt=lambda reason: reason == "crc",
            counters=FeigLinkCounters(),
        )
        self.timeout = timeout

    async def call(self, request: bytes) -> Frame:
        """Send one request frame; return the answer to its command."""
        self._flush()
        command = request[2]
        self._send(request)
        self.counters.requests += 1
        deadline = asyncio.get_running_loop().time() + self.timeout
        while True:
            item = await self._next(deadline, f"no answer to 0x{command:02x}")
            if isinstance(item, Garbage):
                self.counters.bad_frames += 1
                raise BadFrameError(f"the answer to 0x{command:02x} failed its CRC")
            if item.command != command:
                self.counters.stale_frames += 1  # the late answer to an abandoned request
                continue
            return item
