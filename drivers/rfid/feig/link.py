"""Request/response exchanges with the ID ISC readers on one byte stream.

One request at a time on the line (:class:`~drivers.request_link.RequestLink`), whichever reader
it is for: flush what is left of earlier answers, wait out the starting delay (5 ms of silence
before a frame, ID ISC.M02 manual p. 17), send the frame, wait for the answer with the request's
control byte from the reader it was sent to. No answer in time is
:class:`~drivers.errors.LinkTimeoutError`; an answer whose CRC fails is :class:`BadFrameError`
(the caller decides whether to ask again); a port that went away is
:class:`~drivers.errors.LinkLostError`. Answers come in standard or advanced frames alike: the
decoder tells them apart by their first byte, as FEIG's own host library does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from drivers.errors import DeviceError
from drivers.request_link import LinkCounters, RequestLink
from drivers.rfid.feig.frames import BROADCAST, STARTING_DELAY, Frame, FrameDecoder, Garbage


class BadFrameError(DeviceError):
    """An answer arrived but failed its CRC."""


@dataclass(slots=True)
class FeigLinkCounters(LinkCounters):
    """The link's counters, and the requests sent and answers that failed their CRC."""

    requests: int = 0
    bad_frames: int = 0
    foreign_frames: int = 0
    """Answers from a reader other than the one asked (a broadcast on a shared line)."""


class FeigLink(RequestLink[Frame | Garbage, FeigLinkCounters]):
    """The host side of the line; also the protocol its transport feeds."""

    def __init__(
        self,
        write: Callable[[bytes], None] | None = None,
        *,
        timeout: float,
        starting_delay: float = STARTING_DELAY,
    ) -> None:
        super().__init__(
            write,
            # The host flushes before every request, so a partial answer never lingers: the data
            # timeout is the readers' to keep (a host's read times are not the bytes' own).
            decoder=FrameDecoder(answers=True),
            garbage=Garbage,
            corrupt=lambda reason: reason == "crc",
            counters=FeigLinkCounters(),
        )
        self.timeout = timeout
        self.starting_delay = starting_delay
        self._quiet_since = 0.0

    def data_received(self, data: bytes) -> None:
        """Bytes from the line: the silence before the next request starts after them."""
        self._quiet_since = asyncio.get_running_loop().time()
        super().data_received(data)

    async def call(self, request: bytes, *, timeout: float | None = None) -> Frame:
        """Send one request frame; return the answer to its control byte from its reader."""
        loop = asyncio.get_running_loop()
        wait = self._quiet_since + self.starting_delay - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        self._flush()
        advanced = request[0] == 0x02
        address = request[3] if advanced else request[1]
        command = request[4] if advanced else request[2]
        self._send(request)
        self.counters.requests += 1
        deadline = loop.time() + (self.timeout if timeout is None else timeout)
        while True:
            item = await self._next(deadline, f"no answer to 0x{command:02x}")
            if isinstance(item, Garbage):
                self.counters.bad_frames += 1
                raise BadFrameError(f"the answer to 0x{command:02x} failed its CRC")
            if item.command != command:
                self.counters.stale_frames += 1  # the late answer to an abandoned request
                continue
            if address not in (BROADCAST, item.address):
                self.counters.foreign_frames += 1
                continue
            return item
