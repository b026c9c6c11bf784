"""The drain of the daemon's MQTT link: what waits to be published (responses, outbox rows, the
retained snapshots, the birth when the alarms change) and the one task that publishes it, in
order, on a connection the link made (controller/shell/mqtt.py connects; the bytes are made in
controller/shell/mqtt_messages.py).

Any response goes first (a console is waiting for it), then the outbox, oldest first, in
batches, each event after the head that names it, then the retained snapshots that changed
(only their latest version matters). Outbox rows are deleted only after their PUBACK.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from controller.mqtt import Client, Properties, publish_properties
from controller.shell.intake import Urgency
from controller.shell.journal import OutboxRow
from controller.shell.mqtt_messages import (
    by_event,
    compact,
    event_messages,
    head_body,
    plain_level,
    status_body,
)
from controller.shell.space import JournalFullError
from controller.shell.topics import Topics
from controller.shell.writer import JournalWriter

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

_Queued = tuple[str, bytes, Properties | None]


class LinkDrain:
    """What the table's link to the pit broker publishes, and the task that publishes it, as
    :class:`~controller.shell.mqtt.MqttLink` sees it."""

    def __init__(
        self,
        topics: Topics,
        writer: JournalWriter,
        *,
        simulated: bool,
        historical_after: float,
        require_signed: bool,
    ) -> None:
        self.topics = topics
        self.writer = writer
        self.simulated = simulated
        self.require_signed = require_signed
        self.historical_after_ns = int(historical_after * 1e9)
        self._head_sent = 0
        self.wake = asyncio.Event()
        self.bdseq = 0
        self.published = 0
        self.historical = 0
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
        self._responses: deque[_Queued] = deque()
        self._bulk_responses: deque[_Queued] = deque()
        self._shed_responses: deque[_Queued] = deque()
        self._stopping = False

    # ------------------------------------------------------------------ what to publish

    def set_retained(self, topic: str, body: dict[str, Any] | Callable[[], dict[str, Any]]) -> None:
        """Publish ``body`` retained on ``topic`` (now if connected, else on connect).

        A callable is called for the body only when it is about to go: a snapshot that changes
        with every event is then made once per publish, not once per event.
        """
        if callable(body):
            self._retained[topic] = body
        else:
            payload = compact(body)
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
        payload = compact(body)
        topic_verb = verb if plain_level(verb) else "invalid"
        queue = (self._responses, self._bulk_responses, self._shed_responses)[urgency]
        queue.append((self.topics.response(topic_verb), payload, properties))
        self.wake.set()

    def send(self, topic: str, payload: bytes, properties: Properties | None = None) -> None:
        """Queue a message that is neither an event nor a response (a replayed event), to go
        out with the responses that are not urgent."""
        self._bulk_responses.append((topic, payload, properties))
        self.wake.set()

    def status_body(self, state: str) -> dict[str, Any]:
        """The birth (``online``) or death (``offline``) body of this connection
        (:func:`controller.shell.mqtt_messages.status_body`)."""
        journal = self.writer.journal
        return status_body(
            state,
            bdseq=self.bdseq,
            journal=journal.origin,
            epoch=journal.epoch,
            simulated=self.simulated,
            require_signed=self.require_signed,
            alarms=self.alarms,
        )

    # ------------------------------------------------------------------ the drain

    def _connected_afresh(self) -> None:
        """A new connection: the broker may have lost what the last one sent."""
        for topic in self._retained:
            self._dirty[topic] = None
        self._retained_sent.clear()
        self._head_sent = 0

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
                for event in by_event(rows):
                    if self._responses or self._bulk_responses or self._shed_responses:
                        await self._publish_responses(client)
                    # One message at a time, each waiting for its PUBACK. Two in flight would
                    # be one round trip instead of two, but a broker without set_tcp_nodelay
                    # holds the second PUBACK back until this host's delayed ACK of the first
                    # (40 ms or more per event; benchmarks/pipeline.py shows it).
                    messages = event_messages(event, self.topics.table, self.historical_after_ns)
                    for row, payload, properties, historical in messages:
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
        birth = compact(self.status_body("online"))
        await client.publish(self.topics.status, birth, qos=1, retain=True)

    def _publish_head(self, client: Client, row: OutboxRow) -> None:
        """The head, retained, before the events up to it go out: whatever event the broker
        took, its head already names it or a later one.

        QoS 0, not waited for (queued, it goes out in the same write as the first event): the
        broker reads one connection's packets in order, so an event it took came after the head
        that names it; a connection lost between the two loses the
        events as well, and they go again (after a new head) on the next connection.
        """
        body = head_body(self.writer.journal.origin, self.topics.table, row)
        client.send_now(self.topics.head, compact(body), retain=True)
        self._head_sent = row.seq

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
            payload = value if isinstance(value, bytes) else compact(value())
            self._retained[topic] = payload  # made once: a reconnect sends it again as it is
            if payload != self._retained_sent.get(topic):  # (a body made again the same)
                await client.publish(topic, payload, qos=1, retain=True)
                self._retained_sent[topic] = payload
            if self._retained[topic] is payload:  # not replaced while it was on its way
                self._dirty.pop(topic, None)
        self._retained_at = time.monotonic()

    # ------------------------------------------------------------------ shutdown

    async def drained(self) -> bool:
        """True when no outbox row, response or retained message waits."""
        rows = await self.writer.call(self.writer.journal.pending, 1, self._acked_upto)
        waiting = self._responses or self._bulk_responses or self._shed_responses or self._dirty
        return not rows and not waiting
