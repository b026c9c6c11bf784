"""Requests waiting to be handled: signed dealer and floor requests first, floods shed.

The broker (or the console socket) hands every request to :meth:`Intake.offer` at once. Every
check that is cheap and needs nothing from the table runs there, before the request is charged
to anyone or given a place in the queue: its size and JSON (:meth:`Gate.parse`); for a signed
request its time and nonce (:meth:`Gate.screen`: a stale or replayed copy is known without its
signature), then its key and signature (:meth:`Gate.authenticate`). What it is decides who pays
and where it waits:

0. signed, fresh, by a key whose holder deals or rules (dealer, floor): the key's own bucket;
1. signed, fresh, by any other key (surveillance, pit…): the key's bucket, and the table's;
2. unsigned, on a table that takes unsigned requests: the unsigned bucket, and the table's;
3. refused already (not JSON, too big, an unknown key, a signature that does not hold,
   unsigned where signing is required): the unsigned bucket; it is still answered, and
   journaled as a bounded record, after everything else;
4. stale or replayed (a time outside the skew, or a nonce already spent or waiting in the
   queue): the replays' bucket, shared by every sender. The worker checks it in full, answers a
   redelivery with its stored answer and journals a refusal once per (key, transaction).

A replay therefore costs whoever floods replays, never the key's owner: a copy of a dealer's
request captured on the wire, sent 15,000 times, takes nothing from the dealer's bucket and
waits behind every fresh request. A fresh signed request spends its nonce as it is queued
(:meth:`Gate.claim`), so a copy that arrives while it waits is a replay too.

One worker handles the queue in that order, oldest first within a priority. A request over its
limit, or one arriving when the queue is full, is answered at once ("rate limited",
"overloaded") and counted, not journaled one by one; :meth:`Intake.shed_report` gives the counts
for the periodic ``requests.shed`` event. Such an answer names the request's transaction only
when its signature proved who sent it: a replayed copy is not answered in its owner's name.
Nothing the broker delivered goes unanswered.

A request published with the MQTT retain flag is refused (a broker gives it to every new
subscription: it is not a request of now); its refusal is journaled once, and a copy the broker
gives again on a later connection is answered without being journaled again.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import itertools
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum
from typing import Any

from controller.authority import Role
from controller.shell.gate import Gate, Parsed, RefusedError, Request


class Urgency(IntEnum):
    """How an answer goes out: answers to signed requests first, answers given at once to
    requests that were shed last, and those without a guarantee of delivery (MQTT QoS 0: the
    sender of a shed request tries again, and a flood's answers cost the table little)."""

    URGENT = 0
    ROUTINE = 1
    SHED = 2


#: Where an answer goes, and how urgently.
Reply = Callable[[dict[str, Any], Urgency], None]


@dataclass(frozen=True)
class Rates:
    """Requests per second (sustained, and in a burst) for each key, the unsigned and replays."""

    per_key: float = 20.0
    per_key_burst: float = 40.0
    anonymous: float = 20.0
    anonymous_burst: float = 40.0
    total: float = 200.0  # signed requests of other roles, and unsigned ones, together
    total_burst: float = 400.0
    replays: float = 5.0  # stale and replayed copies, from everyone together
    replays_burst: float = 20.0
    queue_limit: int = 10_000


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = burst
        self.stamp = time.monotonic()

    def take(self, now: float) -> bool:
        """Spend a token if there is one."""
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass(frozen=True)
class Replayed:
    """A signed request that cannot be new (stale, or its nonce spent): checked in full by the
    worker, which answers it from the inbox or refuses it."""

    parsed: Parsed
    reason: str

    @property
    def transaction(self) -> str:
        """The transaction it names (not proven to be its sender's)."""
        return self.parsed.transaction


Read = Request | RefusedError | Replayed

#: Priorities (lower first).
DEALING, SIGNED, UNSIGNED, REFUSED, REPLAYED = range(5)


@dataclass(order=True)
class Queued:
    """A request waiting for the worker."""

    priority: int
    order: int
    verb: str = field(compare=False)
    payload: bytes = field(compare=False)
    received: datetime = field(compare=False)
    read: Read = field(compare=False)
    reply: Reply = field(compare=False)


def refusal(verb: str, reason: str, transaction: str | None = None) -> dict[str, Any]:
    """A response that refuses a request without journaling it."""
    return {
        "transaction": transaction,
        "status": "error",
        "command": verb[:64],
        "data": {},
        "error": reason,
    }


RETAINED = "retained: a request published with the retain flag is not run; publish it without"
RETAINED_REMEMBERED = 1000


class Intake:
    """The queue between the request sources and the one worker that handles requests."""

    def __init__(self, gate: Gate, rates: Rates = Rates()) -> None:
        self.gate = gate
        self.rates = rates
        self._heap: list[Queued] = []
        self._order = itertools.count()
        self._ready = asyncio.Event()
        self._buckets: dict[str, TokenBucket] = {}
        self._anonymous = TokenBucket(rates.anonymous, rates.anonymous_burst)
        self._replays = TokenBucket(rates.replays, rates.replays_burst)
        self._total = TokenBucket(rates.total, rates.total_burst)
        self._retained: OrderedDict[bytes, None] = OrderedDict()  # digests already journaled
        self.shed: Counter[str] = Counter()
        self.handled = 0

    def __len__(self) -> int:
        return len(self._heap)

    def offer(
        self,
        verb: str,
        payload: bytes,
        received: datetime,
        reply: Reply,
        *,
        retained: bool = False,
    ) -> None:
        """Take one request from a source: queue it, or answer it at once when it is shed.

        A request without ``auth`` is anonymous whatever it holds: its rate is checked before
        it is even parsed, so a flood costs the table as little as it can.
        """
        now = time.monotonic()
        signed = b'"auth"' in payload
        if not signed and not self._anonymous.take(now):
            self._shed(verb, reply, "rate limited: too many requests; try again")
            return
        if retained:
            self._offer_retained(verb, payload, received, reply, now, signed)
            return
        read = self._read(verb, payload, received)
        priority = _priority(read)
        if not self._charge(read, priority, signed, now):
            self._shed(verb, reply, "rate limited: too many requests; try again", _proven(read))
            return
        if len(self._heap) >= self.rates.queue_limit and not self._make_room(priority):
            self._shed(verb, reply, "overloaded: the table is busy; try again", _proven(read))
            return
        if isinstance(read, Request) and read.nonce is not None:
            try:
                read = self.gate.claim(read, received)
            except RefusedError:  # a copy queued since it was screened: a replay after all
                read, priority = Replayed(self.gate.parse(verb, payload), "replayed"), REPLAYED
        self._push(Queued(priority, next(self._order), verb, payload, received, read, reply))

    def _read(self, verb: str, payload: bytes, received: datetime) -> Read:
        """What the request is, by every check that needs nothing from the table."""
        try:
            parsed = self.gate.parse(verb, payload)
            reason = self.gate.screen(parsed, received)
            if reason is not None:
                return Replayed(parsed, reason)
            return self.gate.authenticate(parsed, received)
        except RefusedError as refused:
            return refused

    def _charge(self, read: Read, priority: int, signed: bool, now: float) -> bool:
        """Take the request's tokens from whoever pays for it (False: over the limit)."""
        if isinstance(read, Replayed):
            return self._replays.take(now)
        if isinstance(read, RefusedError) or read.principal.key is None:
            # the unsigned were charged before they were parsed
            if signed and not self._anonymous.take(now):
                return False
        elif not self._key_bucket(read.principal.key).take(now):
            return False
        return priority not in (SIGNED, UNSIGNED) or self._total.take(now)

    def _make_room(self, priority: int) -> bool:
        """Shed the least urgent request waiting for a more urgent one (False: none is less)."""
        lowest = max(self._heap)
        if lowest.priority <= priority:
            return False
        self._heap.remove(lowest)
        heapq.heapify(self._heap)
        if isinstance(lowest.read, Request):
            self.gate.release(lowest.read)  # not run: its nonce may come again
        self._shed(lowest.verb, lowest.reply, "overloaded: the table is busy; try again", None)
        return True

    def _offer_retained(
        self,
        verb: str,
        payload: bytes,
        received: datetime,
        reply: Reply,
        now: float,
        signed: bool,
    ) -> None:
        digest = hashlib.sha256(verb.encode() + b"\0" + payload).digest()
        if digest in self._retained:  # journaled once already: only answered
            self._retained.move_to_end(digest)
            self._shed(verb, reply, RETAINED)
            return
        if signed and not self._anonymous.take(now):
            self._shed(verb, reply, "rate limited: too many requests; try again")
            return
        if len(self._heap) >= self.rates.queue_limit and not self._make_room(REFUSED):
            self._shed(verb, reply, "overloaded: the table is busy; try again")
            return
        self._retained[digest] = None
        while len(self._retained) > RETAINED_REMEMBERED:
            self._retained.popitem(last=False)
        transaction = None
        try:
            transaction = self.gate.parse(verb, payload).transaction
        except RefusedError as refused:
            transaction = refused.transaction
        read = RefusedError(RETAINED, transaction)
        self._push(Queued(REFUSED, next(self._order), verb, payload, received, read, reply))

    def _push(self, item: Queued) -> None:
        heapq.heappush(self._heap, item)
        self._ready.set()

    async def next(self) -> Queued:
        """The most urgent request waiting (waits for one)."""
        while not self._heap:
            self._ready.clear()
            await self._ready.wait()
        self.handled += 1
        return heapq.heappop(self._heap)

    def _shed(self, verb: str, reply: Reply, reason: str, transaction: str | None = None) -> None:
        self.shed[reason.split(":", maxsplit=1)[0]] += 1
        reply(refusal(verb, reason, transaction), Urgency.SHED)

    def shed_report(self) -> dict[str, int]:
        """The requests shed since the last report, by reason (and forget them)."""
        report = dict(self.shed)
        self.shed.clear()
        return report

    def _key_bucket(self, key: str) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rates.per_key, self.rates.per_key_burst)
        return bucket


def _priority(read: Read) -> int:
    if isinstance(read, Replayed):
        return REPLAYED
    if isinstance(read, RefusedError):
        return REFUSED
    principal = read.principal
    if principal.key is None:
        return UNSIGNED
    return DEALING if principal.roles & {Role.DEALER, Role.FLOOR} else SIGNED


def _proven(read: Read) -> str | None:
    """The transaction to name in an answer given at once: only a request whose signature holds
    (or an unsigned one, on a table that takes them) gets its transaction back."""
    return read.transaction if isinstance(read, Request) else None
