"""The MQTT link: connect, birth and Last Will, retained state, requests, and the drainer.

Every MQTT call of the daemon is in this module, over :mod:`controller.mqtt`. One connection
at a time, made fresh for each attempt (its Last Will carries that attempt's ``bdseq``); on
every connect the link publishes the birth, subscribes to the request topics, reads back the
head it left retained
(``on_head`` compares it with the journal before anything is published:
controller/shell/integrity.py) and only then drains the outbox, each batch after the head that
names its last event. A lost connection or a failed attempt waits a full-jitter backoff and
tries again, for ever: the one reconnect loop of tablectl
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
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from controller import __version__, strict_json
from controller.aio import Backoff, retry_forever, until_first_failure
from controller.config import BrokerSection
from controller.envelope import chain_stamp, envelope
from controller.mqtt import (
    Client,
    Message,
    MqttError,
    Properties,
    SubscribeOptions,
    Will,
    new_client,
    publish_properties,
)
from controller.shell.intake import Reply, Urgency
from controller.shell.journal import OutboxRow
from controller.shell.space import JournalFullError
from controller.shell.topics import Topics
from controller.shell.writer import JournalWriter
from controller.table.codec import event_from_json, rfc3339

log = structlog.get_logger("tablectl.mqtt")

#: Takes a request (its verb, its bytes, where its answer goes, whether the broker retained it)
#: without waiting on it.
RequestSink = Callable[[str, bytes, Reply, bool], None]
#: Told, on every connect before anything is published, the head the broker holds (or None).
HeadCheck = Callable[[dict[str, Any] | None], Awaitable[None]]
BATCH = 64
#: Answers sent before the PUBACK of the last of them is awaited.
RESPONSE_WINDOW = 100
RETAINED_EVERY = 0.5
#: The retained snapshots go at most this often while events keep changing them (a burst is one
#: publish of the state it ends in, not one per event).
RETAINED_GAP = 0.1
#: Acknowledged outbox rows are deleted with the journal's next write, or after this many
#: seconds without one, or once this many wait (bounding what a crash would publish again).
DELETE_AFTER = 1.0
DELETE_AT = 1024
#: Rows handed over and not yet taken (no connection, or a burst): past this many the link forgets
#: them and reads the outbox instead, so a table without its broker does not grow without end.
FRESH_MAX = 4 * BATCH


class MqttLink:
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
        self.broker = broker
        self.topics = topics
        self.writer = writer
        self.client_id = client_id
        self.simulated = simulated
        self.require_signed = require_signed
        self.historical_after_ns = int(historical_after * 1e9)
        self.on_request: RequestSink | None = None
        self.on_change: Callable[[], None] | None = None  # connected or lost
        self.on_head: HeadCheck | None = None
        self._head_sent = 0
        self.accept_requests = False
        self.connected = asyncio.Event()
        self.wake = asyncio.Event()
        self.bdseq = 0
        self.published = 0
        self.historical = 0
        self.connects = 0
        #: A connection was up once: from then on, not being connected is an outage.
        self.ever_connected = False
        #: The raised alarms (the journal's disk, its integrity), carried by the birth message.
        self.alarms: list[dict[str, Any]] = []
        self._status_dirty = False
        #: Outbox rows up to this id were acknowledged by the broker in this run (their delete
        #: may still be waiting: see :meth:`Journal.forget`).
        self._acked_upto = 0
        #: Outbox rows as the journal wrote them (:meth:`offer`), so that the drain need not
        #: read them back; used only while nothing older waits in the journal (``_caught_up``).
        self._fresh: deque[OutboxRow] = deque()
        self._caught_up = False
        self._dropped = 0  # times the handed-over rows were left to the journal
        writer.on_outbox = self.offer
        #: Each retained topic's body, or what makes it when it is about to go.
        self._retained: dict[str, bytes | Callable[[], dict[str, Any]]] = {}
        self._retained_sent: dict[str, bytes] = {}  # on this connection
        self._dirty: dict[str, None] = {}
        self._retained_at = 0.0
        self._responses: deque[tuple[str, bytes, Properties | None]] = deque()
        self._bulk_responses: deque[tuple[str, bytes, Properties | None]] = deque()
        self._shed_responses: deque[tuple[str, bytes, Properties | None]] = deque()
        self._client: Client | None = None
        self._stopping = False
        self._backoff = Backoff(broker.reconnect_min, broker.reconnect_max)

    # ------------------------------------------------------------------ what to publish

    def set_retained(self, topic: str, body: dict[str, Any] | Callable[[], dict[str, Any]]) -> None:
        """Publish ``body`` retained on ``topic`` (now if connected, else on connect).

        A callable is called for the body only when it is about to go: a snapshot that changes
        with every event is then made once per publish, not once per event.
        """
        if callable(body):
            self._retained[topic] = body
        else:
            payload = _compact(body)
            if self._retained.get(topic) == payload:
                return
            self._retained[topic] = payload
        self._dirty[topic] = None
        self.wake.set()

    def offer(self, rows: Sequence[OutboxRow]) -> None:
        """Outbox rows just journaled: publish them (the journal's writer calls this)."""
        fresh = self._fresh
        fresh.extend(rows)
        if len(fresh) > FRESH_MAX:  # nobody takes them now: the journal has them all
            fresh.clear()
            self._caught_up = False
            self._dropped += 1
        self.wake.set()

    def set_alarms(self, alarms: list[dict[str, Any]]) -> None:
        """Publish the birth message again with these alarms (now if connected, else on connect)."""
        if alarms == self.alarms:
            return
        self.alarms = alarms
        self._status_dirty = True
        self.wake.set()

    def respond(
        self,
        verb: str,
        body: dict[str, Any],
        correlation: bytes | None,
        urgency: Urgency = Urgency.URGENT,
    ) -> None:
        """Queue a response (with the request's MQTT v5 correlation data, if it had any).

        Urgent responses (to signed requests) go out before the others: a flood's answers must
        not hold a dealer's back; the answers to shed requests go last, at QoS 0. A verb that is
        not a plain topic level gets no response topic of its own: the answer goes to
        ``response/invalid``.
        """
        properties = (
            publish_properties(correlation=correlation) if correlation is not None else None
        )
        payload = json.dumps(body, separators=(",", ":")).encode()
        topic_verb = verb if _plain_level(verb) else "invalid"
        queue = (self._responses, self._bulk_responses, self._shed_responses)[urgency]
        queue.append((self.topics.response(topic_verb), payload, properties))
        self.wake.set()

    def send(self, topic: str, payload: bytes, properties: Properties | None = None) -> None:
        """Queue a message that is neither an event nor a response (a replayed event), to go
        out with the responses that are not urgent."""
        self._bulk_responses.append((topic, payload, properties))
        self.wake.set()

    def status_body(self, state: str) -> dict[str, Any]:
        """The birth (``online``) or death (``offline``) body of this connection.

        ``degraded``: the table is up but takes no input (its journal's disk is full, or an
        integrity alarm holds it); the ``alarms`` say why, and what else is wrong.
        """
        online = state == "online"
        alarms = self.alarms if online else []
        return {
            "state": state,
            "bdseq": self.bdseq,
            "ts": rfc3339(datetime.now(UTC)),
            "version": __version__,
            "simulated": self.simulated,
            "require_signed": self.require_signed,
            "degraded": any(degrading(a) for a in alarms),
            "alarms": alarms,
        }

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
        offline = json.dumps(self.status_body("offline"), separators=(",", ":")).encode()
        will = Will(self.topics.status, offline, qos=1, retain=True)
        return new_client(self.broker, identifier=self.client_id, will=will, clean_start=True)

    async def _session(self, client: Client) -> None:
        self.connects += 1
        if self._stopping:
            # The shutdown began while this connection was being made: say offline, not
            # online, and hold the connection until the daemon closes it.
            offline = json.dumps(self.status_body("offline"), separators=(",", ":")).encode()
            await client.publish(self.topics.status, offline, qos=1, retain=True)
            await asyncio.Event().wait()
        self._status_dirty = False
        birth = json.dumps(self.status_body("online"), separators=(",", ":")).encode()
        await client.publish(self.topics.status, birth, qos=1, retain=True)
        for topic in self._retained:
            self._dirty[topic] = None
        self._retained_sent.clear()
        self._head_sent = 0
        # MQTT 5 subscription options (3.8.3.1): Retain As Published, so a request published
        # retained says so even when it arrives live; No Local, so the table's own publication
        # on a request topic (the empty retained message that clears one) does not come back.
        options = SubscribeOptions(qos=1, noLocal=True, retainAsPublished=True)
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
                        head = _json_object(message.payload)
                else:
                    self._take(client, message)  # a request meanwhile: into the intake as always
        await client.unsubscribe(self.topics.head)
        await client.unsubscribe(self.topics.status)
        return head

    def _publish_head(self, client: Client, row: OutboxRow) -> None:
        """The head, retained, before the events up to it go out: whatever event the broker
        took, its head already names it or a later one.

        QoS 0, not waited for (queued, it goes out in the same write as the first event): the
        broker reads one connection's packets in order, so an event it took came after the head
        that names it; a connection lost between the two loses the
        events as well, and they go again (after a new head) on the next connection.
        """
        epoch, seq = row.event
        body = {
            "journal": self.writer.journal.origin,
            "epoch": epoch,
            "seq": seq,
            "event_id": f"{self.topics.table}:{epoch}:{seq}",
            "pos": row.chain.pos,
            "hash": row.chain.hash,
            "ts": rfc3339(datetime.now(UTC)),
        }
        payload = json.dumps(body, separators=(",", ":")).encode()
        client.send_now(self.topics.head, payload, retain=True)
        self._head_sent = row.seq

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
        correlation = getattr(message.properties, "CorrelationData", None)
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

    async def _drain(self, client: Client) -> None:
        self._caught_up = False  # what the last connection did not get out is in the journal
        try:
            await self._drain_rows(client)
        finally:
            self._caught_up = False

    async def _drain_rows(self, client: Client) -> None:
        while True:
            self.wake.clear()
            await self._publish_responses(client)
            if self._status_dirty and not self._stopping:
                await self._publish_status(client)
            rows = await self._next_rows()
            # Retained snapshots are "latest wins": sent once the events are out, but not again
            # within RETAINED_GAP seconds (each event of a burst changes the state: its last
            # version goes), and at least every RETAINED_EVERY seconds while a stream of events
            # keeps the outbox busy.
            since = time.monotonic() - self._retained_at
            if self._dirty and (since > RETAINED_EVERY or (not rows and since >= RETAINED_GAP)):
                await self._publish_retained(client)
            if not rows:
                idle = not (self._responses or self._bulk_responses or self._shed_responses)
                if idle and not (self._status_dirty and not self._stopping):
                    await self._idle(RETAINED_GAP - since if self._dirty else None)
                continue
            if rows[-1].seq > self._head_sent:
                self._publish_head(client, rows[-1])
            acked: list[int] = []
            try:
                for event in _by_event(rows):
                    if self._responses or self._bulk_responses or self._shed_responses:
                        await self._publish_responses(client)
                    # One message at a time, each waiting for its PUBACK. Two in flight would
                    # be one round trip instead of two, but a broker without set_tcp_nodelay
                    # holds the second PUBACK back until this host's delayed ACK of the first
                    # (40 ms or more per event; benchmarks/pipeline.py shows it).
                    for row, payload, properties, historical in self._messages(event):
                        await client.publish(
                            self.topics.stream(row.stream), payload, qos=1, properties=properties
                        )
                        self.published += 1
                        self.historical += historical
                        acked.append(row.id)
            finally:
                if acked:
                    self._acked_upto = max(self._acked_upto, acked[-1])
                    self.writer.journal.forget(acked)

    async def _next_rows(self) -> list[OutboxRow]:
        """The next outbox rows to publish, oldest first.

        From the rows the journal just wrote when they follow on from the last one acknowledged;
        from the journal otherwise (after a connect, or a gap). A read that returns less than a
        batch has seen every row written before it, and every later one is offered: the drain is
        caught up until the next connection.
        """
        fresh = self._fresh
        while fresh and fresh[0].id <= self._acked_upto:
            fresh.popleft()
        if self._caught_up and (not fresh or fresh[0].id == self._acked_upto + 1):
            rows: list[OutboxRow] = []
            while fresh and len(rows) < BATCH:
                rows.append(fresh.popleft())
            return rows
        dropped = self._dropped
        rows = await self.writer.call(self.writer.journal.pending, BATCH, self._acked_upto)
        # caught up unless rows written during the read were handed over and then dropped
        self._caught_up = len(rows) < BATCH and self._dropped == dropped
        return rows

    async def _idle(self, within: float | None = None) -> None:
        """Wait for something to publish, or ``within`` seconds at most (the retained snapshots
        are due then); meanwhile delete what the broker acknowledged, if the journal has not
        written anything to do it with."""
        if self.writer.journal.forgotten() >= DELETE_AT:
            await self._delete()
        delete = bool(self.writer.journal.forgotten()) and (within is None or within > DELETE_AFTER)
        try:
            async with asyncio.timeout(DELETE_AFTER if delete else within):
                await self.wake.wait()
        except TimeoutError:
            if delete:
                await self._delete()

    async def _delete(self) -> None:
        """Delete the acknowledged outbox rows; on a full disk, later (they are not sent again)."""
        with contextlib.suppress(JournalFullError):
            await self.writer.call(self.writer.journal.delete_outbox)

    async def _publish_status(self, client: Client) -> None:
        self._status_dirty = False
        birth = json.dumps(self.status_body("online"), separators=(",", ":")).encode()
        await client.publish(self.topics.status, birth, qos=1, retain=True)

    async def _publish_responses(self, client: Client) -> None:
        """The urgent answers, then the others, up to ``RESPONSE_WINDOW`` at a time; then the
        answers to shed requests, at QoS 0, all in one write.

        A window goes out without waiting for each PUBACK, then the PUBACK of its last message
        is awaited: a broker acknowledges one connection's QoS 1 messages in the order it
        received them (MQTT 5, 4.6), so the whole window has arrived. Waiting for each answer's
        PUBACK in turn would bound the answers to one a round trip, and a flood's answers would
        pile up ahead of a dealer's. A window stays queued until it is acknowledged: a
        connection lost meanwhile sends it again on the next one.
        """
        while self._responses or self._bulk_responses or self._shed_responses:
            if not (self._responses or self._bulk_responses):
                shed = self._shed_responses
                for _ in range(min(len(shed), RESPONSE_WINDOW)):
                    topic, payload, properties = shed.popleft()
                    client.hand_over(topic, payload, 0, properties=properties, write=False)
                client.write()
                await asyncio.sleep(0)  # requests waiting to be read go first
                continue
            urgent = list(itertools.islice(self._responses, RESPONSE_WINDOW))
            bulk = list(itertools.islice(self._bulk_responses, RESPONSE_WINDOW - len(urgent)))
            last = None
            for topic, payload, properties in (*urgent, *bulk):
                last = client.hand_over(topic, payload, 1, properties=properties, write=False)
            client.write()
            assert last is not None
            await client.acknowledged(last)
            for _ in urgent:  # answers queued meanwhile are behind these: not removed here
                self._responses.popleft()
            for _ in bulk:
                self._bulk_responses.popleft()

    async def _publish_retained(self, client: Client) -> None:
        while self._dirty:
            topic = next(iter(self._dirty))
            value = self._retained[topic]
            payload = value if isinstance(value, bytes) else _compact(value())
            self._retained[topic] = payload  # made once: a reconnect sends it again as it is
            if payload != self._retained_sent.get(topic):  # (a body made again the same)
                await client.publish(topic, payload, qos=1, retain=True)
                self._retained_sent[topic] = payload
            if self._retained[topic] is payload:  # not replaced while it was on its way
                self._dirty.pop(topic, None)
        self._retained_at = time.monotonic()

    def _messages(
        self, rows: list[OutboxRow]
    ) -> Iterator[tuple[OutboxRow, bytes, Properties, bool]]:
        """Each outbox row of one event with its payload, its properties and whether it is
        historical (judged as it is about to go): the event is read back once for all its
        streams, and its properties (the same ``event_id``) are made once."""
        first = rows[0]
        event = event_from_json(first.body)
        epoch, seq = first.event
        event_id = f"{self.topics.table}:{epoch}:{seq}"
        properties = publish_properties(
            content_type="application/json", user=("event_id", event_id)
        )
        chain = chain_stamp(event.type, first.chain.pos, first.chain.hash)
        for row in rows:
            late = time.time_ns() - row.created_ns > self.historical_after_ns
            historical = not row.live or late
            body = envelope(
                event,
                table_id=self.topics.table,
                epoch=epoch,
                seq=seq,
                historical=historical,
                secure=row.stream == "secure",
                chain=chain,
            )
            payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
            yield row, payload, properties, historical

    # ------------------------------------------------------------------ shutdown

    async def drained(self) -> bool:
        """True when no outbox row, response or retained message waits."""
        rows = await self.writer.call(self.writer.journal.pending, 1, self._acked_upto)
        waiting = self._responses or self._bulk_responses or self._shed_responses or self._dirty
        return not rows and not waiting

    async def goodbye(self, timeout: float) -> bool:
        """Publish the retained ``offline`` status on a clean shutdown (the Will would not fire).

        Returns False when not connected or the broker did not acknowledge in time.
        """
        self._stopping = True
        client = self._client  # set as soon as the connection is up, birth or not
        if client is None:
            return False
        offline = json.dumps(self.status_body("offline"), separators=(",", ":")).encode()
        with contextlib.suppress(MqttError, TimeoutError):
            async with asyncio.timeout(timeout):
                await client.publish(self.topics.status, offline, qos=1, retain=True)
                return True
        return False


def _compact(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def degrading(alarm: dict[str, Any]) -> bool:
    """Whether a raised alarm makes the table degraded (it takes no input) rather than only
    warned: a full journal disk, or an integrity alarm that holds the table."""
    return alarm.get("alarm") == "journal.full" or alarm.get("held") is True


def _json_object(payload: Any) -> dict[str, Any] | None:
    try:
        body = strict_json.loads(payload if isinstance(payload, bytes | str) else b"")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _by_event(rows: list[OutboxRow]) -> list[list[OutboxRow]]:
    """Consecutive outbox rows grouped by event (its public and secure messages)."""
    groups: list[list[OutboxRow]] = []
    for row in rows:
        if groups and groups[-1][0].seq == row.seq:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def _plain_level(verb: str) -> bool:
    """A short topic level of letters, digits and underscores (every command's is)."""
    return 0 < len(verb) <= 64 and verb.replace("_", "").isalnum() and verb.isascii()


_CONNECTION_LOST = (MqttError, OSError, TimeoutError)


def _not_lost(error: Exception) -> bool:
    """Anything but a lost connection is a bug: it stops the daemon (systemd restarts it)."""
    return not isinstance(error, _CONNECTION_LOST)
