"""What every TSP/1 driver's session does the same way: requests that may be refused, and
handing device events to the application one at a time.

:func:`call` sends a request and raises :class:`~drivers.errors.DeviceCommandError` when the
device answers ERROR (:class:`~drivers.errors.AlreadyDoneError` when the code is
``ALREADY_DONE``). :class:`EventPump` takes the link's events and session changes in arrival
order and hands each event to the driver's handler; the event is acknowledged to the device only
after the handler returned, and left unacknowledged (so the device sends it again) when the
handler failed or the session ended under it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from drivers.errors import AlreadyDoneError, DeviceCommandError
from drivers.tsp.client import LinkClient
from drivers.tsp.common import ErrorCode, ErrorResponse
from drivers.tsp.frame import TYPE_ERROR
from drivers.tsp.link import EventReceived, SessionChanged
from drivers.tsp.payload import PayloadError


async def call(client: LinkClient, msg_type: int, payload: bytes = b"", name: str = "") -> bytes:
    """Send a request; return the response payload, or raise DeviceCommandError on ERROR."""
    frame = await client.request(msg_type, payload)
    if frame.type == TYPE_ERROR:
        try:
            error = ErrorResponse.decode(frame.payload)
        except PayloadError:
            error = ErrorResponse(0, "(malformed ERROR payload)")
        # The code alone says whether the device already did it: never the detail's words.
        refused = AlreadyDoneError if error.code == ErrorCode.ALREADY_DONE else DeviceCommandError
        raise refused(name or f"request {msg_type:#04x}", int(error.code), error.name, error.detail)
    return frame.payload


EventHandler = Callable[[EventReceived], Awaitable[None]]
SessionHandler = Callable[[SessionChanged], Awaitable[None]]


class EventPump:
    """Feeds one link client's events to a handler, acknowledging each once it is handled."""

    def __init__(
        self,
        client: LinkClient,
        on_event: EventHandler,
        on_session: SessionHandler,
        gate: asyncio.Event | None = None,
    ) -> None:
        self.client = client
        self._on_event = on_event
        self._on_session = on_session
        self._gate = gate
        self._handling: asyncio.Future[None] | None = None

    async def run(self) -> None:
        """Hand over events until cancelled; returns only by raising (the handler failed).

        With a ``gate``, events wait until it is set: an unapproved device's events are not
        trusted, and stay unacknowledged.
        """
        while True:
            item = await self.client.next_incoming()
            if isinstance(item, SessionChanged):
                await self._on_session(item)
                continue
            if self._gate is not None:
                try:
                    await self._gate.wait()
                except asyncio.CancelledError:
                    self.client.abandon(item)
                    raise
            self._handling = asyncio.ensure_future(self._handle(item))
            await asyncio.shield(self._handling)
            self._handling = None

    async def _handle(self, item: EventReceived) -> None:
        try:
            await self._on_event(item)
        except BaseException:
            self.client.abandon(item)
            raise
        self.client.done(item)

    async def finish(self) -> None:
        """After cancelling :meth:`run`: let an event half-way into the handler finish.

        Acknowledging it later marks it done, so its retransmission after a reconnect is
        recognised instead of delivered twice.
        """
        handling, self._handling = self._handling, None
        if handling is not None:
            # Waited for, not awaited: a handler that failed ended the session already.
            await asyncio.wait({handling})
            if not handling.cancelled():
                handling.exception()  # seen: asyncio would report it as never retrieved
