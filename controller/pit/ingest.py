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
  0: only the latest matters);
* ``{prefix}/+/devices/+``: each device's retained health (QoS 0), stored with the batch it
  comes in (:mod:`controller.pit.devices`), so every process shows the same;
* ``{prefix}/_pit/+/status``: the pit processes' own statuses (:mod:`controller.pit.presence`);
  this process publishes its own there on every connection, with the same saying ``offline`` as
  its Last Will, and while it takes over an away member's share it also subscribes to
  ``{prefix}/+/events`` (and ``…/+/secure/events``) outside the share group.

Acknowledgement only after the commit: the client acknowledges nothing by itself (``manual_ack``
of :class:`controller.mqtt.Client`). Messages are committed in batches, in one transaction
each, and the PUBACK of every message of the batch goes out after the commit. The broker's
socket is read on the ticks of ``batch_wait`` (:func:`controller.aio.next_tick`), everything it
holds at once, and what a read brought is committed there and then (up to ``batch`` messages a
commit): a message waits at most ``batch_wait`` seconds from its arrival for others, and the
read and the commit share one wake of the process (a wake costs more than a message: some 300
µs of CPU on a small machine, benchmarks/loop_wake.py). When a tick finds nothing waiting, the
next message is read, and committed, as it comes. A process that dies before its commit
leaves the messages unacknowledged: the broker delivers them again when the session comes back,
and the store keeps one row per event whatever arrives twice. ``receive_maximum`` bounds how many
unacknowledged messages the broker sends this process at once.

Everything a table publishes is checked before it is used (:mod:`controller.pit.published`):
a message that is not what its topic carries (not JSON, not an envelope, another table's, a
status, state, device health or answer of another shape) is acknowledged, counted, and kept as a
bounded record (size, SHA-256, the first 200 characters) with the table it came from; an event
stored with a field the pit cannot derive anything from is recorded there too.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import structlog

from controller.aio import Backoff, retry_forever, until_first_failure
from controller.mqtt import Client, Message, MqttError, Will, connect_properties, new_client
from controller.pit.batches import Applied, Batch, EventIn, Refusal
from controller.pit.config import PitConfig
from controller.pit.db import transient
from controller.pit.devices import DeviceIn
from controller.pit.health import PitHealth, describe
from controller.pit.metrics import PitMetrics
from controller.pit.presence import LEVEL, Presence, member_of, presence_filter, presence_topic
from controller.pit.published import (
    RejectedError,
    check_envelope,
    event_problems,
    load,
    parse_answer,
    parse_device,
    parse_state,
    parse_status,
    text_of,
)
from controller.pit.store import Store
from controller.pit.worker import StoreWorker

log = structlog.get_logger("tablectl.pit.ingest")

HEAD = 200
#: The requests the pit sends whose answers it reads: gap repair's and storage confirmation's.
#: The requests whose answers this process hears: its own (replay, stored) and the rulings the
#: console sends for the floor (confirm, reject, floor_override).
ANSWERS = ("replay", "stored", "confirm", "reject", "floor_override")


@dataclass(frozen=True)
class Route:
    """What a topic carries for this pit."""

    kind: Literal["event", "status", "state", "device", "response", "presence", "other"]
    table: str = ""
    stream: Literal["public", "secure"] = "public"
    source: Literal["live", "replay"] = "live"
    verb: str = ""  # of a response: the request it answers; of a device: its name; of a
    # presence: the pit process's id


def route(topic: str, prefix: str, pit_id: str) -> Route:
    """Where a message of ``topic`` goes."""
    head = f"{prefix}/"
    if not topic.startswith(head):
        return Route("other")
    table, _, rest = topic[len(head) :].partition("/")
    if not table:
        return Route("other")
    if table == LEVEL:  # no table's: the pit processes' own statuses
        member = member_of(topic, prefix)
        return Route("presence", verb=member) if member is not None else Route("other")
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
    text = text_of(payload)
    body = load(text)
    check_envelope(body, where.table)
    return EventIn(
        body["table_id"],
        body["epoch"],
        body["seq"],
        body["ts"],
        body.get("hand_id"),
        body["type"],
        body["severity"],
        where.stream,
        where.source,
        text,
        body,
    )


class StoreUnavailableError(RuntimeError):
    """The store does not take commits now: the connection to the broker is dropped (nothing
    is acknowledged) and made again after a backoff."""


def apply_batch(store: Store, batch: Batch, secure: bool) -> Applied:
    """Store one batch (on the store's thread): events in one transaction, then the rest.

    A batch the store refuses for what it holds (not a lock or a lost connection) is stored
    message by message, and a message that cannot be stored is kept as a refused one: one bad
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
                batch.rejects.append(
                    Refusal(event.table_id, f"{event.table_id}/events", event.text.encode(), reason)
                )
                continue
            applied.duplicates += one.duplicates
            for table, count in one.stored.items():
                applied.stored[table] += count
            applied.stored_events.extend(one.stored_events)
            applied.new_epochs.extend(one.new_epochs)
    for event in applied.stored_events:
        problems = event_problems(*event.decoded)
        if problems and event.stream == "public":
            reason = (
                f"event {event.seq} ({event.type[:60]}) stored; left out of what the pit "
                f"derives from it: {', '.join(problems)}"
            )
            topic = f"{event.table_id}/events"
            batch.rejects.append(Refusal(event.table_id, topic, event.text.encode(), reason))
    now = applied.committed_at
    births, refused = _each(store.record_statuses, batch.statuses, now)
    applied.came_online = [table for table, state in births if state == "online"]
    streams = ("public", "secure") if secure else ("public",)
    _, refused_states = _each(
        lambda states, at: ([], store.record_states(states, at, streams)), batch.states, now
    )
    for table, body, reason in refused:
        batch.rejects.append(Refusal(table, f"{table}/status", _dump(body), reason))
    for table, body, reason in refused_states:
        batch.rejects.append(Refusal(table, f"{table}/state", _dump(body), reason))
    _devices(store, batch, now)
    if batch.rejects:
        with store.db.transaction():
            store.db.changed({r.table for r in batch.rejects if r.table})
            for refusal in batch.rejects:
                payload = refusal.payload
                head = payload[: HEAD * 4].decode("utf-8", "replace")[:HEAD]
                store.record_reject(
                    _storable(refusal.topic),
                    len(payload),
                    hashlib.sha256(payload).hexdigest(),
                    _storable(head),
                    _storable(refusal.reason),
                    table=None if refusal.table is None else _storable(refusal.table),
                    now=now,
                )
    # the tables the batch may have changed (each transaction above announced its own to every
    # pit's live pages as it committed)
    rest = {
        *(t for t, _ in batch.statuses),
        *(t for t, _ in batch.states),
        *(d.table for d in batch.devices),
        *(r.table for r in batch.rejects if r.table),
    }
    applied.touched = {*(e.table_id for e in batch.events), *rest}
    return applied


def _devices(store: Store, batch: Batch, now: float) -> None:
    """Record the batch's devices' health together; when the store refuses them for what they
    hold, one by one, each it cannot take refused with the reason."""
    try:
        store.record_devices(batch.devices, now)
        return
    except Exception as exc:
        if transient(exc):
            raise
        log.exception("pit.batch_refused", messages=len(batch.devices))
    for device in list(batch.devices):
        try:
            store.record_devices([device], now)
        except Exception as single:
            if transient(single):
                raise
            topic = f"{device.table}/devices/{device.device}"
            payload = (device.body or "").encode()
            reason = f"could not be stored: {type(single).__name__}"
            batch.rejects.append(Refusal(device.table, topic, payload, reason))


def _each(
    record: Callable[
        [list[tuple[str, dict[str, Any]]], float],
        tuple[list[tuple[str, str]], list[tuple[str, Mapping[str, Any], str]]],
    ],
    items: list[tuple[str, dict[str, Any]]],
    now: float,
) -> tuple[list[tuple[str, str]], list[tuple[str, Mapping[str, Any], str]]]:
    """Record statuses or states together; when the store refuses them for what they hold,
    one by one, each it cannot take refused with the reason."""
    try:
        return record(items, now)
    except Exception as exc:
        if transient(exc) or len(items) == 0:
            raise
        log.exception("pit.batch_refused", messages=len(items))
    done: list[tuple[str, str]] = []
    refused: list[tuple[str, Mapping[str, Any], str]] = []
    for item in items:
        try:
            new, bad = record([item], now)
        except Exception as single:
            if transient(single):
                raise
            refused.append((item[0], item[1], f"could not be stored: {type(single).__name__}"))
            continue
        done += new
        refused += bad
    return done, refused


def _dump(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, default=str).encode()


def _storable(text: str) -> str:
    """Text any store takes (PostgreSQL's text holds no NUL)."""
    return text.replace("\x00", "\ufffd")


ResponseHandler = Callable[[str, Mapping[str, Any]], None]


class Ingest:
    """The connection to the broker: subscribe, batch, commit, acknowledge; reconnect."""

    def __init__(
        self,
        config: PitConfig,
        worker: StoreWorker,
        metrics: PitMetrics,
        on_response: Mapping[str, ResponseHandler] | None = None,
        health: PitHealth | None = None,
    ) -> None:
        self.config = config
        #: told of each connection made and lost (the console and /healthz read it)
        self.health = health or PitHealth()
        self.worker = worker
        self.metrics = metrics
        self.on_response: dict[str, ResponseHandler] = dict(on_response or {})  # verb → handler
        self.prefix = config.broker.prefix
        self.connected = asyncio.Event()
        self.on_commit: list[Callable[[Applied], None]] = []
        #: (table, device) → the ``ts`` of the last health taken of it (what a clear clears)
        self._device_ts: dict[tuple[str, str], str] = {}
        self._client: Client | None = None
        #: this process's presence (None: it announces nothing and hears no other process)
        self.presence: Presence | None = None
        #: whether this process should subscribe to every table's events outside the share
        #: group (it takes over an away member's share), and the tasks that (un)subscribe
        self._direct_wanted = False
        self._direct_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._backoff = Backoff(config.broker.reconnect_min, config.broker.reconnect_max)
        self._queue: asyncio.Queue[tuple[Route, Message]] = asyncio.Queue()

    async def run(self) -> None:
        """Stay connected until cancelled."""
        await retry_forever(
            self._connection,
            self._lost,
            expected=_EXPECTED,
            fatal=lambda exc: not isinstance(exc, _EXPECTED),
            name="pit-mqtt",
        )

    async def publish(self, topic: str, payload: bytes, *, retain: bool = False) -> None:
        """Publish a request (QoS 1) on this process's connection (MqttError: not connected)."""
        client = self._client
        if client is None or not self.connected.is_set():
            raise MqttError("not connected to the broker")
        await client.publish(topic, payload, qos=1, retain=retain)

    # ------------------------------------------------------------------ presence

    def want_direct(self, on: bool) -> None:
        """Subscribe to every table's events outside the share group (``on``), or no longer:
        at once when connected, else on the next connection."""
        self._direct_wanted = on
        client = self._client
        if client is not None and self.connected.is_set():
            self._later(self._apply_direct(client), "pit:direct")

    def announce(self) -> None:
        """Publish this connection's ``online`` status again (a late Will of an older
        connection overwrote it)."""
        client = self._client
        if client is not None and self.connected.is_set():
            self._later(self._announce(client), "pit:announce")

    async def leave(self) -> None:
        """Before a clean stop: say this process is going, as its Will would (the others take
        over its share at once), and end a direct subscription its session would keep."""
        client, presence = self._client, self.presence
        if client is None or presence is None or not self.connected.is_set():
            return
        connection = presence.connection
        with contextlib.suppress(MqttError, TimeoutError):
            async with asyncio.timeout(self.config.broker.timeout):
                if self._direct_wanted:
                    self._direct_wanted = False
                    await self._apply_direct(client)
                if connection is not None:
                    topic = presence_topic(self.prefix, self.config.pit.id)
                    await client.publish(topic, connection.message("offline"), 1, True)

    def _direct_filters(self) -> list[str]:
        filters = [f"{self.prefix}/+/events"]
        if self.config.pit.secure:
            filters.append(f"{self.prefix}/+/secure/events")
        return filters

    async def _apply_direct(self, client: Client) -> None:
        """Make the direct subscription what is wanted (a session may keep one from a run
        that took over, so no is said on every connection too)."""
        async with self._direct_lock:
            want = self._direct_wanted
            for topic in self._direct_filters():
                if want:
                    await client.subscribe(topic, qos=1)
                else:
                    await client.unsubscribe(topic)
            log.info("pit.direct.subscribed" if want else "pit.direct.unsubscribed")

    async def _announce(self, client: Client) -> None:
        presence = self.presence
        if presence is None or presence.connection is None:
            return
        topic = presence_topic(self.prefix, self.config.pit.id)
        await client.publish(topic, presence.connection.message("online"), 1, True)

    def _later(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``work`` beside the connection (it ends with it); a failure is logged, and the
        next connection does it again."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("pit.mqtt.not_done", task=task.get_name(), error=str(task.exception()))

    async def _lost(self, error: Exception | None, lasted: float) -> float:
        log.warning("pit.mqtt.disconnected", error=str(error))
        if isinstance(error, StoreUnavailableError):
            # dropped on purpose, nothing acknowledged: the store is what was lost (its worker
            # told the health with the database's own error already, unless the commits met
            # only deadlocks)
            if self.health.ok("store"):
                self.health.down("store", str(error))
            self.health.down(
                "broker", "disconnected while the store takes no commits", because_of_store=True
            )
        else:
            self.health.down("broker", describe(error))
        return self._backoff.next(lasted)

    def _client_for_attempt(self) -> Client:
        broker, pit = self.config.broker, self.config.pit
        will = None
        if self.presence is not None:  # each connection its own: its Will names it
            connection = self.presence.connect()
            will = Will(presence_topic(self.prefix, pit.id), connection.message("offline"))
        return new_client(
            broker,
            identifier=self.config.client_id,
            clean_start=False,
            properties=connect_properties(
                session_expiry=pit.session_expiry, receive_maximum=pit.receive_maximum
            ),
            manual_ack=True,  # acknowledge only what is committed
            will=will,
            # read in bursts, on the ticks of the batches' window: a turn of the loop for each
            # burst, which is committed at once, rather than one a message (a request's answer
            # is read at once)
            read_interval=pit.batch_wait,
        )

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
                if self.presence is not None:
                    # announced once subscribed (its share flows), then the others heard
                    await self._announce(client)
                    await client.subscribe(presence_filter(prefix), qos=1)
                    await self._apply_direct(client)
                self.connected.set()
                self.health.up("broker")
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
                for task in list(self._tasks):
                    task.cancel()
                self._queue = asyncio.Queue()  # unacknowledged: the broker sends them again

    async def _receive(self, client: Client) -> None:
        async for message in client.messages:
            if self.take(message):
                self._ack(client, message)

    def take(self, message: Message) -> bool:
        """One message from the broker. An answer to a request is used at once (True:
        acknowledge it now); the rest, and an answer refused (to be recorded), wait for the
        next commit."""
        where = route(message.topic.value, self.prefix, self.config.pit.id)
        if where.kind == "response" and self._response(where, message):
            return True
        if where.kind == "presence":  # used at once, never stored
            if self.presence is not None:
                self.presence.take(where.verb, _payload(message))
            return True
        self._queue.put_nowait((where, message))
        return False

    async def flush(self) -> Applied:
        """Commit every message taken and not committed yet, at once (acknowledging none: for
        a process that reads no broker)."""
        batch = Batch()
        while not self._queue.empty():
            self._add(batch, *self._queue.get_nowait())
        applied = await self._store(batch)
        self._committed(batch, applied)
        return applied

    def _response(self, where: Route, message: Message) -> bool:
        handler = self.on_response.get(where.verb)
        if handler is None:
            return True
        try:
            body = parse_answer(_payload(message), where.verb)
        except RejectedError:
            return False
        try:
            handler(where.table, body)
        except Exception:
            log.exception("pit.answer_failed", table=where.table[:64], verb=where.verb)
        return True

    async def _commit(self, client: Client) -> None:
        """Take messages in batches, store each batch, then acknowledge its messages."""
        pit = self.config.pit
        queue = self._queue
        while True:
            batch = Batch()
            self._add(batch, *await queue.get())
            # what the last read of the socket brought (its messages are all queued before
            # this task runs): the messages waited for one another already, until the tick
            while len(batch.acks) < pit.batch and not queue.empty():
                self._add(batch, *queue.get_nowait())
            applied = await self._store(batch)
            for message in batch.acks:
                client.ack(message)
            self._committed(batch, applied)

    def _committed(self, batch: Batch, applied: Applied) -> None:
        self.metrics.committed(batch, applied)
        for callback in self.on_commit:
            callback(applied)

    async def _store(self, batch: Batch) -> Applied:
        """Commit a batch; a lock or a deadlock is tried again, a store that stays away ends
        this connection (StoreUnavailableError)."""
        for attempt in range(5):
            try:
                started = time.monotonic()
                applied = await self.worker.call(apply_batch, batch, self.config.pit.secure)
                self.metrics.commit_seconds.observe(time.monotonic() - started)
                return applied
            except Exception as exc:
                if not transient(exc):
                    raise
                log.warning("pit.store.retry", attempt=attempt + 1, error=str(exc)[:300])
                self.metrics.store_retries.inc()
                await asyncio.sleep(0.05 * 2**attempt)
        raise StoreUnavailableError("the store refused five commits in a row")

    def _add(self, batch: Batch, where: Route, message: Message) -> None:
        batch.acks.append(message)
        payload = _payload(message)
        try:
            if where.kind == "event":
                taken = (where.stream, where.source, payload)
                if taken in batch.taken:  # the same view of the same event: stored once anyway
                    batch.copies += 1
                    return
                batch.taken.add(taken)
                batch.events.append(parse_event(payload, where))
            elif where.kind == "status":
                if payload:  # an empty retained message clears the topic: nothing to record
                    batch.statuses.append((where.table, parse_status(payload)))
            elif where.kind == "state":
                if payload:
                    batch.states.append((where.table, parse_state(payload)))
            elif where.kind == "device":
                batch.devices.append(self._device(where, payload))
            elif where.kind == "response":
                parse_answer(payload, where.verb)
                raise RejectedError("an answer the pit could not use")
            else:
                raise RejectedError("not a topic the pit reads")
        except RejectedError as exc:
            topic = message.topic.value
            log.warning("pit.message_refused", topic=topic[:200], reason=str(exc))
            batch.rejects.append(Refusal(where.table or None, topic, payload, str(exc)))

    def _device(self, where: Route, payload: bytes) -> DeviceIn:
        """A device's retained health (RejectedError: one the pit cannot use); an empty payload
        clears it, up to the last this process took."""
        _device_name(where.verb)
        key = (where.table, where.verb)
        if not payload:
            return DeviceIn(where.table, where.verb, self._device_ts.pop(key, ""), None)
        body = parse_device(payload)
        ts = body.get("ts")
        ts = ts if isinstance(ts, str) else ""
        self._device_ts[key] = ts
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        return DeviceIn(where.table, where.verb, ts, _storable(text))

    def _ack(self, client: Client, message: Message) -> None:
        client.ack(message)


_EXPECTED = (MqttError, OSError, TimeoutError, StoreUnavailableError)
_DEVICE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def _device_name(name: str) -> None:
    """A device's name on its topic, as the console can show it (RejectedError otherwise)."""
    if not _DEVICE.match(name):
        raise RejectedError("a device name: 1 to 64 letters, digits and _ . : -")


def _payload(message: Message) -> bytes:
    return message.payload
