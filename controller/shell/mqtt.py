"""The MQTT link: connect, birth and Last Will, retained state, requests, and the drainer.

Every MQTT call of the daemon is in this module and its parts, over :mod:`controller.mqtt`. One
connection at a time, made fresh for each attempt (its Last Will carries that attempt's
``bdseq``); on every connect the link publishes the birth, subscribes to the request topics,
reads back the head it left retained (``on_head`` compares it with the journal before anything
is published: controller/shell/integrity.py) and only then drains the outbox, each batch after
the head that names its last event. A lost connection or a failed attempt waits a full-jitter
backoff and tries again, for ever: the one reconnect loop of tablectl
(:func:`controller.aio.retry_forever`), to which any other error is a bug that stops the
daemon.

One task publishes everything, in order, QoS 1, each publish awaited until its PUBACK: any
response first (a console is waiting for it), then the outbox, oldest first, then the retained
snapshots that changed (only their latest version matters). Outbox rows are deleted only after
their PUBACK; a crash between the two publishes the message again, which consumers drop by
``event_id``. A message journaled
while the broker was unreachable, or published more than ``historical_after`` seconds after it
was journaled, is marked ``historical``.

The birth carries the table's alarms (``degraded`` and ``alarms``: a full or low journal disk,
:mod:`controller.shell.space`; an integrity alarm, :mod:`controller.shell.integrity`) and is
published again, retained, whenever they change. On a full
disk the link goes on: an acknowledged outbox row whose delete cannot be written is remembered
and not sent again, and a ``bdseq`` that cannot be stored is counted on from the last one stored.

This module connects (the Will, the birth, the requests' subscription, the head check) and
takes the requests; :class:`MqttLink` is made of it and the drain (``mqtt_drain.py``: what waits
to be published, the outbox's batches, the responses, the retained snapshots), and the bytes
both publish are made in ``mqtt_messages.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from controller.aio import Backoff, retry_forever, until_first_failure
from controller.config import BrokerSection
from controller.mqtt import (
    Client,
    Message,
    MqttError,
    SubscribeOptions,
    Will,
    new_client,
)
from controller.shell.intake import Reply, Urgency
from controller.shell.mqtt_drain import (
    BATCH,
    DELETE_AFTER,
    DELETE_AT,
    FRESH_MAX,
    RESPONSE_WINDOW,
    RETAINED_EVERY,
    RETAINED_GAP,
    LinkDrain,
)
from controller.shell.mqtt_messages import compact, degrading, json_object
from controller.shell.space import JournalFullError
from controller.shell.topics import Topics
from controller.shell.writer import JournalWriter

__all__ = [
    "BATCH",
    "DELETE_AFTER",
    "DELETE_AT",
    "FRESH_MAX",
    "RESPONSE_WINDOW",
    "RETAINED_EVERY",
    "RETAINED_GAP",
    "HeadCheck",
    "MqttLink",
    "RequestSink",
    "degrading",
]

log = structlog.get_logger("tablectl.mqtt")

#: Takes a request (its verb, its bytes, where its answer goes, whether the broker retained it)
#: without waiting on it.
RequestSink = Callable[[str, bytes, Reply, bool], None]
#: Told, on every connect before anything is published, the head the broker holds (or None).
HeadCheck = Callable[[dict[str, Any] | None], Awaitable[None]]


class MqttLink(LinkDrain):
    """The table's connection to the pit broker."""

    def __init__(
        self,
        broker: BrokerSection,
        topics: Topics,
        writer: JournalWriter,
        *,
        client_id: str,
        simulated: bool,
        historical_after: float,
        require_signed: bool = True,
    ) -> None:
        super().__init__(
            topics,
            writer,
            simulated=simulated,
            historical_after=historical_after,
            require_signed=require_signed,
        )
        self.broker = broker
        self.client_id = client_id
        self.on_request: RequestSink | None = None
        self.on_change: Callable[[], None] | None = None  # connected or lost
        self.on_head: HeadCheck | None = None
        self.accept_requests = False
        self.connected = asyncio.Event()
        self.connects = 0
        #: A connection was up once: from then on, not being connected is an outage.
        self.ever_connected = False
        self._client: Client | None = None
        self._backoff = Backoff(broker.reconnect_min, broker.reconnect_max)

    # ------------------------------------------------------------------ the connection

    async def run(self) -> None:
        """Stay connected until cancelled."""
        await retry_forever(
            self._connection, self._lost, expected=_CONNECTION_LOST, fatal=_not_lost, name="mqtt"
        )

    async def _connection(self) -> None:
        """One connection to the broker, from CONNECT until it is lost."""
        if self._stopping:
            await asyncio.Event().wait()  # shutting down: no new connection; the daemon cancels
        self.bdseq = await self._next_bdseq()
        client = self._client_for_attempt()
        try:
            async with client:
                self._client = client
                try:
                    await self._session(client)
                except BaseException as exc:
                    if not self._stopping and not isinstance(exc, _CONNECTION_LOST):
                        # Not an ordered stop (a bug elsewhere, say): the broker must say the
                        # table is gone, and it does only if we leave without DISCONNECT.
                        client.drop()
                    raise
        finally:
            self._client = None
            if self.connected.is_set():
                self.connected.clear()
                if self.on_change is not None:
                    self.on_change()

    async def _next_bdseq(self) -> int:
        journal = self.writer.journal
        try:
            return await self.writer.call(journal.next_bdseq)
        except JournalFullError:
            # Not saved: a restart before the disk has room may use this number again, which
            # only makes the pit take an old Will for this connection's.
            last = max(self.bdseq, await self.writer.call(journal.last_bdseq))
            log.warning("mqtt.bdseq_not_saved", bdseq=last + 1, reason="the journal is full")
            return last + 1

    async def _lost(self, error: Exception | None, lasted: float) -> float:
        cause = error.__cause__ if error else None
        log.warning("mqtt.disconnected", error=str(error), cause=repr(cause) if cause else None)
        delay = self._backoff.next(lasted)
        log.info("mqtt.reconnect_in", seconds=round(delay, 2), attempt=self._backoff.attempt)
        return delay

    def _client_for_attempt(self) -> Client:
        offline = compact(self.status_body("offline"))
        will = Will(self.topics.status, offline, qos=1, retain=True)
        return new_client(self.broker, identifier=self.client_id, will=will, clean_start=True)

    async def _session(self, client: Client) -> None:
        self.connects += 1
        if self._stopping:
            # The shutdown began while this connection was being made: say offline, not
            # online, and hold the connection until the daemon closes it.
            offline = compact(self.status_body("offline"))
            await client.publish(self.topics.status, offline, qos=1, retain=True)
            await asyncio.Event().wait()
        self._status_dirty = False
        birth = compact(self.status_body("online"))
        await client.publish(self.topics.status, birth, qos=1, retain=True)
        self._connected_afresh()
        # MQTT 5 subscription options (3.8.3.1): Retain As Published, so a request published
        # retained says so even when it arrives live; No Local, so the table's own publication
        # on a request topic (the empty retained message that clears one) does not come back.
        options = SubscribeOptions(qos=1, no_local=True, retain_as_published=True)
        await client.subscribe(self.topics.request(), options=options)
        if self.on_head is not None:
            # Before any event goes out: a broker that holds events this journal does not
            # (a lost WAL, a restored backup) must not get new ones under the same ids.
            await self.on_head(await self._broker_head(client))
        if self._stopping:
            # goodbye() is publishing the offline status on this connection: keep it open
            # until the daemon closes it, without taking requests or draining.
            await asyncio.Event().wait()
        self.connected.set()
        self.ever_connected = True
        if self.on_change is not None:
            self.on_change()
        log.info("mqtt.connected", host=self.broker.host, port=self.broker.port, bdseq=self.bdseq)
        await until_first_failure(
            [
                asyncio.create_task(self._receive(client), name="mqtt:receive"),
                asyncio.create_task(self._drain(client), name="mqtt:drain"),
            ]
        )

    async def _broker_head(self, client: Client) -> dict[str, Any] | None:
        """The head the broker holds retained for this table (None: none it can read).

        A broker sends a subscription's retained messages right after its SUBACK, in order.
        The status topic is subscribed after the head, and holds the birth this connection just
        published: once that arrives, any retained head has arrived before it.
        """
        head: dict[str, Any] | None = None
        await client.subscribe(self.topics.head, qos=1)
        await client.subscribe(self.topics.status, qos=1)
        async with asyncio.timeout(self.broker.timeout):
            async for message in client.messages:
                topic = message.topic.value
                if topic == self.topics.status:
                    break
                if topic == self.topics.head:
                    if message.retain:
                        head = json_object(message.payload)
                else:
                    self._take(client, message)  # a request meanwhile: into the intake as always
        await client.unsubscribe(self.topics.head)
        await client.unsubscribe(self.topics.status)
        return head

    async def _receive(self, client: Client) -> None:
        """Hand every request on at once: the broker's queue for this client stays empty, and
        the intake decides what runs first (a flood must not hold a dealer's request back)."""
        async for message in client.messages:
            self._take(client, message)

    def _take(self, client: Client, message: Message) -> None:
        """One message from the broker: a request goes to ``on_request`` with its reply.

        A request the broker retained is cleared from it (an empty retained message on its
        topic, MQTT 5 3.3.1.3): it would come again on every connection. The intake refuses it.
        """
        verb = self.topics.command_of(message.topic.value)
        if verb is None or self.on_request is None:
            return
        payload = message.payload
        data = payload if isinstance(payload, bytes) else str(payload or "").encode()
        try:
            properties = message.properties
        except MqttError:  # properties that do not decode: answered without a correlation
            properties = None
        correlation = properties.correlation_data if properties is not None else None
        if isinstance(correlation, bytes) and len(correlation) > 256:
            correlation = None  # echoed in the answer: not an amplifier

        def reply(
            body: dict[str, Any],
            urgency: Urgency = Urgency.URGENT,
            verb: str = verb,
            data: Any = correlation,
        ) -> None:
            self.respond(verb, body, data, urgency)

        if not self.accept_requests:
            # Not journaled: the console retries the same transaction once the table is up.
            reply(
                {
                    "transaction": None,
                    "status": "error",
                    "command": verb[:64],
                    "data": {},
                    "error": "the table is starting or stopping; try again",
                }
            )
            return
        if message.retain:
            with contextlib.suppress(MqttError):
                client.send_now(message.topic.value, b"", retain=True)
        self.on_request(verb, data, reply, message.retain)

    # ------------------------------------------------------------------ shutdown

    async def goodbye(self, timeout: float) -> bool:
        """Publish the retained ``offline`` status on a clean shutdown (the Will would not fire).

        Returns False when not connected or the broker did not acknowledge in time.
        """
        self._stopping = True
        client = self._client  # set as soon as the connection is up, birth or not
        if client is None:
            return False
        offline = compact(self.status_body("offline"))
        with contextlib.suppress(MqttError, TimeoutError):
            async with asyncio.timeout(timeout):
                await client.publish(self.topics.status, offline, qos=1, retain=True)
                return True
        return False


_CONNECTION_LOST = (MqttError, OSError, TimeoutError)


def _not_lost(error: Exception) -> bool:
    """Anything but a lost connection is a bug: it stops the daemon (systemd restarts it)."""
    return not isinstance(error, _CONNECTION_LOST)
