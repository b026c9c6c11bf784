"""The host side of a request/response link over a byte stream: one request at a time.

What the PN532 link (HSU) and the FEIG link (ID ISC) share: the port's bytes are decoded into
frames and garbage and queued; before a request the host flushes what is left of earlier answers
(leftovers are not answers); the answer is awaited until a deadline, skipping garbage unless it
may be the answer corrupted on the way. No answer in time is
:class:`~drivers.errors.LinkTimeoutError`; a port that went away ends the exchange in progress,
and every later one, with :class:`~drivers.errors.LinkLostError`. What a request and its answer
look like is the protocol's own (its subclass of :class:`RequestLink`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from drivers.errors import LinkLostError, LinkTimeoutError


class Garbage(Protocol):
    """What a decoder reports for bytes that were no frame."""

    @property
    def size(self) -> int:
        """How many bytes were dropped."""
        ...

    @property
    def reason(self) -> str:
        """Why (the protocol's words; a failed checksum or CRC among them)."""
        ...


ItemT = TypeVar("ItemT")
ItemT_co = TypeVar("ItemT_co", covariant=True)


class StreamDecoder(Protocol[ItemT_co]):
    """An incremental decoder of the protocol's frames."""

    @property
    def pending(self) -> int:
        """Bytes held that do not make a whole frame yet."""
        ...

    def reset(self) -> None:
        """Forget a partial frame."""

    def feed(self, data: bytes) -> Iterable[ItemT_co]:
        """Decode what ``data`` completes."""
        ...


@dataclass(slots=True)
class LinkCounters:
    """What happened on the link, for health details and benchmarks."""

    timeouts: int = 0
    garbage_bytes: int = 0
    stale_frames: int = 0


CountersT = TypeVar("CountersT", bound=LinkCounters)


class _Lost:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc


class RequestLink(Generic[ItemT, CountersT]):
    """The host side of the link; also the protocol its transport feeds.

    ``garbage`` is the decoder's garbage type and ``corrupt`` says, by its reason, whether a
    garbage report may be the awaited answer corrupted on the way (it is then handed to the
    protocol, which asks again or fails the request).
    """

    def __init__(
        self,
        write: Callable[[bytes], None] | None,
        *,
        decoder: StreamDecoder[ItemT],
        garbage: type[Garbage],
        corrupt: Callable[[str], bool],
        counters: CountersT,
    ) -> None:
        self.write = write
        self.counters = counters
        self._decoder = decoder
        self._garbage = garbage
        self._corrupt = corrupt
        self._items: asyncio.Queue[ItemT | _Lost] = asyncio.Queue()
        self._lost: Exception | None = None

    def data_received(self, data: bytes) -> None:
        """Bytes from the device: decode and queue."""
        for item in self._decoder.feed(data):
            self._items.put_nowait(item)

    def connection_lost(self, exc: Exception | None) -> None:
        """The port is gone: the exchange in progress, and every later one, fails."""
        self._lost = exc or OSError("the port was closed")
        self._items.put_nowait(_Lost(self._lost))

    def _send(self, data: bytes) -> None:
        if self._lost is not None:
            raise LinkLostError(str(self._lost))
        if self.write is None:
            raise LinkLostError("not connected")
        self.write(data)  # a transport never raises: a lost port is reported to connection_lost

    def _flush(self) -> None:
        """Like a host flushing its input before a request: leftovers are not answers."""
        self.counters.garbage_bytes += self._decoder.pending
        self._decoder.reset()
        while not self._items.empty():
            item = self._items.get_nowait()
            if isinstance(item, _Lost):
                raise LinkLostError(str(item.exc))
            if isinstance(item, self._garbage):
                self.counters.garbage_bytes += item.size
            else:
                self.counters.stale_frames += 1

    async def _next(self, deadline: float, what: str) -> ItemT:
        """The next frame, or garbage that may be a corrupted one (other garbage is skipped)."""
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                async with asyncio.timeout(remaining):
                    item = await self._items.get()
            except TimeoutError:
                self.counters.timeouts += 1
                raise LinkTimeoutError(what) from None
            if isinstance(item, _Lost):
                raise LinkLostError(str(item.exc))
            if isinstance(item, self._garbage):
                self.counters.garbage_bytes += item.size
                if not self._corrupt(item.reason):
                    continue
            return item
