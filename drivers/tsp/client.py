"""Runs a :class:`~drivers.tsp.link.HostLink` on asyncio over a byte transport.

The client owns no transport: :meth:`LinkClient.attach` connects it to one (a
:class:`~drivers.serial_transport.SerialTransport`, or anything with ``write``), and the transport
calls :meth:`LinkClient.data_received` and :meth:`LinkClient.connection_lost`. The link itself, and
so the session and event de-duplication, outlive a transport: after a replug the device's
retransmitted events are still recognised.

Requests are serialised (TSP/1 allows one outstanding) and awaited; events and session changes are
queued in arrival order for one consumer, which acknowledges each with :meth:`LinkClient.done`.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from drivers.errors import DeviceUnavailableError, LinkTimeoutError
from drivers.tsp.frame import Frame
from drivers.tsp.link import (
    EventReceived,
    HostLink,
    RequestFailed,
    ResponseReceived,
    SessionChanged,
)


class ByteWriter(Protocol):
    """What the client needs from a transport."""

    def write(self, data: bytes) -> None:
        """Send bytes, in order, without blocking."""


class LinkClient:
    """Requests, events and timers of one TSP/1 host link on the running event loop."""

    def __init__(self, link: HostLink) -> None:
        self.link = link
        self._loop = asyncio.get_running_loop()
        self._transport: ByteWriter | None = None
        self._lock = asyncio.Lock()
        self._reply: asyncio.Future[Frame] | None = None
        self._reply_seq: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._incoming: asyncio.Queue[EventReceived | SessionChanged] = asyncio.Queue()
        self._lost: asyncio.Future[Exception | None] = self._loop.create_future()

    # ------------------------------------------------------------------ transport side

    def attach(self, transport: ByteWriter) -> None:
        """Start using a freshly opened transport."""
        self.link.reset_transport()
        self._drain_outputs()
        self._transport = transport
        self._lost = self._loop.create_future()
        # Events queued but never handed to the application are abandoned: the device
        # retransmits them. Session changes are kept, so no reboot goes unreported.
        kept: list[EventReceived | SessionChanged] = []
        while not self._incoming.empty():
            item = self._incoming.get_nowait()
            if isinstance(item, EventReceived):
                self.link.abandon_event(item.boot_id, item.frame.seq)
            else:
                kept.append(item)
        for item in kept:
            self._incoming.put_nowait(item)

    def data_received(self, data: bytes) -> None:
        """Bytes from the transport."""
        self.link.receive(data, self._loop.time())
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        """The transport is gone (hang-up, unplug, closed)."""
        self._transport = None
        if self._reply is not None and not self._reply.done():
            self._reply.set_exception(DeviceUnavailableError(f"link lost: {exc}"))
        self.link.cancel_request()
        if not self._lost.done():
            self._lost.set_result(exc)

    async def wait_lost(self) -> Exception | None:
        """Wait until the transport is lost; return the error that ended it."""
        return await asyncio.shield(self._lost)

    # ------------------------------------------------------------------ application side

    async def request(self, msg_type: int, payload: bytes = b"") -> Frame:
        """Send a request and return its response frame (which may be an ERROR frame).

        Raise :class:`LinkTimeoutError` when every retransmission went unanswered and
        :class:`DeviceUnavailableError` when the transport is lost meanwhile.
        """
        async with self._lock:
            if self._transport is None:
                raise DeviceUnavailableError("link is not connected")
            reply: asyncio.Future[Frame] = self._loop.create_future()
            self._reply = reply
            self._reply_seq = self.link.request(msg_type, payload, self._loop.time())
            self._flush()
            try:
                return await reply
            finally:
                self._reply = None
                self._reply_seq = None
                if self.link.busy and reply.cancelled():
                    self.link.cancel_request()

    async def next_incoming(self) -> EventReceived | SessionChanged:
        """The next event or session change, in arrival order."""
        return await self._incoming.get()

    def done(self, item: EventReceived) -> None:
        """The application has handled ``item``: acknowledge it to the device."""
        self.link.event_done(item.boot_id, item.frame.seq)
        self._flush()

    def abandon(self, item: EventReceived) -> None:
        """The application could not handle ``item``: the device will send it again."""
        self.link.abandon_event(item.boot_id, item.frame.seq)

    def detach(self) -> None:
        """The owner closed the transport: fail a waiting request and stop the timer."""
        self.connection_lost(None)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # ------------------------------------------------------------------ internals

    def _flush(self) -> None:
        data = self.link.take_output()
        if data and self._transport is not None:
            self._transport.write(data)
        self._drain_outputs()
        self._schedule()

    def _drain_outputs(self) -> None:
        for item in self.link.take_events():
            if isinstance(item, ResponseReceived | RequestFailed):
                reply = self._reply
                if reply is None or item.request_seq != self._reply_seq or reply.done():
                    continue  # an answer nobody waits for any more (cancelled or superseded)
                if isinstance(item, ResponseReceived):
                    reply.set_result(item.frame)
                else:
                    reply.set_exception(
                        LinkTimeoutError(
                            f"request {item.type:#04x} unanswered after {item.attempts} tries"
                        )
                    )
            else:
                self._incoming.put_nowait(item)

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.link.next_deadline()
        if deadline is not None:
            self._timer = self._loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.link.tick(self._loop.time())
        self._flush()
