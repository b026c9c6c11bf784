"""The pit's side of the broker: every table's events, acknowledged only once they are stored.

One MQTT 5 connection per pit process, with a persistent session (``clean_start`` false, a
session expiry of hours), so the broker keeps what arrives while the process is away:

* ``$share/{group}/{prefix}/+/events`` (and ``…/+/secure/events`` with surveillance credentials):
  the shared subscription; every pit process of the floor joins the same group and the broker
  gives each message to one of them;
* ``{prefix}/+/replay/{pit id}`` (and ``…/+/secure/replay/{pit id}``): the events a table
  replays from its journal for this process (:mod:`controller.pit.repair`);
* ``{prefix}/+/response/replay`` and ``…/response/stored``: the tables' answers to replay and
  storage confirmation requests (:mod:`controller.pit.confirm`);
* ``{prefix}/+/status`` (births and deaths) and ``{prefix}/+/state`` (the retained snapshot, QoS
  0: only the latest matters).

Acknowledgement only after the commit: the client acknowledges nothing by itself (paho's manual
acknowledgement). Messages are committed in batches (up to ``batch`` of them, the first waiting
at most ``batch_wait`` seconds from its arrival for others) in one transaction, and the PUBACK
of every message of the batch goes out after the commit. A process that dies before its commit
leaves the messages unacknowledged: the broker delivers them again when the session comes back,
and the store keeps one row per event whatever arrives twice. ``receive_maximum`` bounds how many
unacknowledged messages the broker sends this process at once.

A message that is not what its topic carries (not JSON, not an envelope, another table's) is
acknowledged, counted, and kept as a bounded record (size, SHA-256, the first 200 characters).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import aiomqtt
import structlog
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.pit.config import PitConfig
from controller.pit.db import transient
from controller.pit.metrics import PitMetrics
from controller.pit.store import Applied, EventIn, Store
from controller.pit.worker import StoreWorker
from controller.shell.broker_connection import new_client
from controller.shell.properties import read_properties_once
from drivers.supervisor import Backoff, retry_forever, until_first_failure

log = structlog.get_logger("tablectl.pit.ingest")

SCHEMA = "tablectl.event/1"
HEAD = 200
#: The requests the pit sends whose answers it reads: gap repair's and storage confirmation's.
#: The requests whose answers this process hears: its own (replay, stored) and the rulings the
#: console sends for the floor (confirm, reject, floor_override).
ANSWERS = ("replay", "stored", "confirm", "reject", "floor_override")


@dataclass
class Batch:
    """What one commit stores: events, statuses, states and refused messages."""

    events: list[EventIn] = field(default_factory=list)
    statuses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    states: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    rejects: list[tuple[str, bytes, str]] = field(default_factory=list)
    acks: list[tuple[int, int]] = field(default_factory=list)  # (mid, qos)
    first_received: float = 0.0

    def __len__(self) -> int:
        return len(self.events) + len(self.statuses) + len(self.states) + len(self.rejects)


class RejectedError(ValueError):
    """A message that is not what its topic carries."""


@dataclass(frozen=True)
class Route:
    """What a topic carries for this pit."""

    kind: Literal["event", "status", "state", "device", "response", "other"]
    table: str = ""
    stream: Literal["public", "secure"] = "public"
    source: Literal["live", "replay"] = "live"
    verb: str = ""  # of a response: the request it answers; of a device: its name


def route(topic: str, prefix: str, pit_id: str) -> Route:
    """Where a message of ``topic`` goes."""
    head = f"{prefix}/"
    if not topic.startswith(head):
        return Route("other")
    table, _, rest = topic[len(head) :].partition("/")
    if not table:
        return Route("other")
    if rest == "events":
        return Route("event", table)
    if rest == "secure/events":
        return Route("event", table, "secure")
    if rest == f"replay/{pit_id}":
        return Route("event", table, "public", "replay")
    if rest == f"secure/replay/{pit_id}":
        return Route("event", table, "secure", "replay")
    if rest == "status":
        return Route("status", table)
    if rest == "state":
        return Route("state", table)
    if rest.startswith("devices/") and rest.count("/") == 1:
        return Route("device", table, verb=rest.removeprefix("devices/"))
    verb = rest.removeprefix("response/")
    if verb in ANSWERS:
        return Route("response", table, verb=verb)
    return Route("other", table)


def parse_event(payload: bytes, where: Route) -> EventIn:
    """The envelope of one event message (RejectedError: why it is not one)."""
    try:
        text = payload.decode("utf-8")
        body = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RejectedError(f"not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RejectedError("not a JSON object")
    if body.get("schema") != SCHEMA:
        raise RejectedError(f"schema is not {SCHEMA}")
    table, epoch, seq = body.get("table_id"), body.get("epoch"), body.get("seq")
    if table != where.table:
        raise RejectedError(f"table_id {str(table)[:64]!r} on the topic of table {where.table!r}")
    if not isinstance(epoch, str) or not 0 < len(epoch) <= 64:
        raise RejectedError("epoch: a string of 1 to 64 characters")
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 < seq < 2**62:
        raise RejectedError("seq: a positive integer")
    if body.get("event_id") != f"{table}:{epoch}:{seq}":
        raise RejectedError("event_id is not table_id:epoch:seq")
    ts, kind, severity = body.get("ts"), body.get("type"), body.get("severity")
    hand = body.get("hand_id")
    if not isinstance(ts, str) or not isinstance(kind, str) or not isinstance(severity, str):
        raise RejectedError("ts, type and severity: strings")
    if hand is not None and not isinstance(hand, str):
        raise RejectedError("hand_id: a string or null")
    if not isinstance(body.get("data"), dict) or not isinstance(body.get("rules"), list):
        raise RejectedError("data: an object; rules: a list")
    return EventIn(
        table, epoch, seq, ts, hand, kind, severity, where.stream, where.source, text, body
    )


def parse_object(payload: bytes) -> dict[str, Any]:
    """A status or state body (RejectedError: not a JSON object)."""
    try:
        body = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RejectedError(f"not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RejectedError("not a JSON object")
    return body


def event_age(ts: str, now: float) -> float | None:
    """Seconds from an event's ``ts`` to ``now`` (None: not a time)."""
    try:
        return now - datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None


class StoreUnavailableError(RuntimeError):
    """The store does not take commits now: the connection to the broker is dropped (nothing
    is acknowledged) and made again after a backoff."""


def apply_batch(store: Store, batch: Batch, secure: bool) -> Applied:
    """Store one batch (on the store's thread): events in one transaction, then the rest.

    A batch the store refuses for what it holds (not a lock or a lost connection) is stored
    event by event, and an event that cannot be stored is kept as a refused message: one bad
    message must not come back for ever.
    """
    try:
        applied = store.ingest(batch.events)
    except Exception as exc:
        if transient(exc) or len(batch.events) == 0:
            raise
        log.exception("pit.batch_refused", events=len(batch.events))
        applied = Applied(committed_at=time.time())
        for event in batch.events:
            try:
                one = store.ingest([event])
            except Exception as single:
                if transient(single):
                    raise
                reason = f"could not be stored: {type(single).__name__}: {single}"
                batch.rejects.append((f"{event.table_id}/events", event.text.encode(), reason))
                continue
            applied.duplicates += one.duplicates
            for table, count in one.stored.items():
                applied.stored[table] += count
            applied.stored_events.extend(one.stored_events)
            applied.new_epochs.extend(one.new_epochs)
    now = applied.committed_at
    births, refused = store.record_statuses(batch.statuses, now)
    applied.came_online = [table for table, state in births if state == "online"]
    streams = ("public", "secure") if secure else ("public",)
    refused += [
        (f"{table}/state", body, reason)
        for table, body, reason in store.record_states(batch.states, now, streams)
    ]
    for where, body, reason in refused:
        topic = where if "/" in where else f"{where}/status"
        batch.rejects.append((topic, json.dumps(body).encode(), reason))
    if batch.rejects:
        with store.db.transaction():
            for topic, payload, reason in batch.rejects:
                head = payload[: HEAD * 4].decode("utf-8", "replace")[:HEAD]
                digest = hashlib.sha256(payload).hexdigest()
                store.record_reject(topic, len(payload), digest, head, reason)
    return applied


ResponseHandler = Callable[[str, Mapping[str, Any]], None]


class Ingest:
    """The connection to the broker: subscribe, batch, commit, acknowledge; reconnect."""

    def __init__(
        self,
        config: PitConfig,
        worker: StoreWorker,
        metrics: PitMetrics,
        on_response: Mapping[str, ResponseHandler] | None = None,
    ) -> None:
        self.config = config
        self.worker = worker
        self.metrics = metrics
        self.on_response: dict[str, ResponseHandler] = dict(on_response or {})  # verb → handler
        self.prefix = config.broker.prefix
        self.connected = asyncio.Event()
        self.on_commit: list[Callable[[Applied], None]] = []
        #: device health as the tables retain it (table, device, body; None: cleared)
        self.on_device: Callable[[str, str, dict[str, Any] | None], None] | None = None
        self._client: aiomqtt.Client | None = None
        self._backoff = Backoff(config.broker.reconnect_min, config.broker.reconnect_max)
        self._queue: asyncio.Queue[tuple[Route, aiomqtt.Message, float]] = asyncio.Queue()
        read_properties_once()  # every message's properties: a quarter of its CPU otherwise

    async def run(self) -> None:
        """Stay connected until cancelled."""
        await retry_forever(
            self._connection,
            self._lost,
            expected=_EXPECTED,
            fatal=lambda exc: not isinstance(exc, _EXPECTED),
            name="pit-mqtt",
        )

    async def publish(self, topic: str, payload: bytes) -> None:
        """Publish a request (QoS 1) on this process's connection (MqttError: not connected)."""
        client = self._client
        if client is None or not self.connected.is_set():
            raise aiomqtt.MqttError("not connected to the broker")
        await client.publish(topic, payload, qos=1)

    async def _lost(self, error: Exception | None, lasted: float) -> float:
        log.warning("pit.mqtt.disconnected", error=str(error))
        return self._backoff.next(lasted)

    def _client_for_attempt(self) -> aiomqtt.Client:
        broker, pit = self.config.broker, self.config.pit
        properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        properties.SessionExpiryInterval = pit.session_expiry
        properties.ReceiveMaximum = pit.receive_maximum
        client = new_client(
            broker,
            aiomqtt.Client,
            identifier=self.config.client_id,
            clean_start=False,
            properties=properties,
        )
        # Acknowledge only what is committed (paho's manual acknowledgement; aiomqtt 2 has no
        # option of its own for it).
        client._client.manual_ack_set(True)
        return client

    async def _connection(self) -> None:
        client = self._client_for_attempt()
        pit, prefix = self.config.pit, self.prefix
        async with client:
            self._client = client
            try:
                shared = f"$share/{pit.share_group}/{prefix}/+"
                topics: list[tuple[str, int]] = [
                    (f"{shared}/events", 1),
                    (f"{prefix}/+/replay/{pit.id}", 1),
                    *((f"{prefix}/+/response/{verb}", 1) for verb in ANSWERS),
                    (f"{prefix}/+/status", 1),
                    (f"{prefix}/+/state", 0),
                    (f"{prefix}/+/devices/+", 0),
                ]
                if pit.secure:
                    topics += [
                        (f"{shared}/secure/events", 1),
                        (f"{prefix}/+/secure/replay/{pit.id}", 1),
                    ]
                for topic, qos in topics:
                    await client.subscribe(topic, qos=qos)
                self.connected.set()
                self.metrics.connected.set(1)
                log.info("pit.mqtt.connected", host=self.config.broker.host, id=pit.id)
                await until_first_failure(
                    [
                        asyncio.create_task(self._receive(client), name="pit:receive"),
                        asyncio.create_task(self._commit(client), name="pit:commit"),
                    ]
                )
            finally:
                self.connected.clear()
                self.metrics.connected.set(0)
                self._client = None
                self._queue = asyncio.Queue()  # unacknowledged: the broker sends them again

    async def _receive(self, client: aiomqtt.Client) -> None:
        prefix, pit_id = self.prefix, self.config.pit.id
        queue = self._queue
        async for message in client.messages:
            where = route(message.topic.value, prefix, pit_id)
            if where.kind == "response":
                self._response(where, message)
                self._ack(client, message)
                continue
            if where.kind == "device":
                self._device(where, message)
                continue
            queue.put_nowait((where, message, time.monotonic()))

    def _response(self, where: Route, message: aiomqtt.Message) -> None:
        handler = self.on_response.get(where.verb)
        if handler is None:
            return
        try:
            body = parse_object(_payload(message))
        except RejectedError:
            return
        handler(where.table, body)

    def _device(self, where: Route, message: aiomqtt.Message) -> None:
        if self.on_device is None:
            return
        payload = _payload(message)
        if not payload:
            self.on_device(where.table, where.verb, None)
            return
        try:
            body = parse_object(payload)
        except RejectedError:
            return
        self.on_device(where.table, where.verb, body)

    async def _commit(self, client: aiomqtt.Client) -> None:
        """Take messages in batches, store each batch, then acknowledge its messages."""
        pit = self.config.pit
        queue = self._queue
        while True:
            batch = Batch()
            item = await queue.get()
            self._add(batch, *item)
            # the window opens when the batch's first message arrived (it may have waited for
            # the last commit already); one timer a batch, not one a message
            deadline = item[2] + pit.batch_wait
            while True:
                while len(batch.acks) < pit.batch and not queue.empty():
                    self._add(batch, *queue.get_nowait())
                remaining = deadline - time.monotonic()
                if len(batch.acks) >= pit.batch or remaining <= 0:
                    break
                await asyncio.sleep(remaining)
            started = time.monotonic()
            applied = await self._store(batch)
            self.metrics.commit_seconds.observe(time.monotonic() - started)
            for mid, qos in batch.acks:
                if qos > 0:
                    client._client.ack(mid, qos)
            self.metrics.committed(batch, applied)
            for callback in self.on_commit:
                callback(applied)

    async def _store(self, batch: Batch) -> Applied:
        """Commit a batch; a lock or a deadlock is tried again, a store that stays away ends
        this connection (StoreUnavailableError)."""
        for attempt in range(5):
            try:
                return await self.worker.call(apply_batch, batch, self.config.pit.secure)
            except Exception as exc:
                if not transient(exc):
                    raise
                log.warning("pit.store.retry", attempt=attempt + 1, error=str(exc)[:300])
                self.metrics.store_retries.inc()
                await asyncio.sleep(0.05 * 2**attempt)
        raise StoreUnavailableError("the store refused five commits in a row")

    def _add(self, batch: Batch, where: Route, message: aiomqtt.Message, received: float) -> None:
        if not batch.acks:
            batch.first_received = received
        batch.acks.append((message.mid, message.qos))
        payload = _payload(message)
        try:
            if where.kind == "event":
                batch.events.append(parse_event(payload, where))
            elif where.kind == "status":
                if payload:  # an empty retained message clears the topic: nothing to record
                    batch.statuses.append((where.table, parse_object(payload)))
            elif where.kind == "state":
                if payload:
                    batch.states.append((where.table, parse_object(payload)))
            else:
                raise RejectedError("not a topic the pit reads")
        except RejectedError as exc:
            log.warning("pit.message_refused", topic=message.topic.value[:200], reason=str(exc))
            batch.rejects.append((message.topic.value, payload, str(exc)))

    def _ack(self, client: aiomqtt.Client, message: aiomqtt.Message) -> None:
        if message.qos > 0:
            client._client.ack(message.mid, message.qos)


_EXPECTED = (aiomqtt.MqttError, OSError, TimeoutError, StoreUnavailableError)


def _payload(message: aiomqtt.Message) -> bytes:
    payload = message.payload
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, bytearray):
        return bytes(payload)
    return str(payload or "").encode()
