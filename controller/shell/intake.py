"""Requests waiting to be handled: signed dealer and floor requests first, floods shed.

The broker (or the console socket) hands every request to :meth:`Intake.offer` at once, which
reads and authenticates it (:class:`~controller.shell.gate.Gate`) and queues it by priority:

0. signed by a key whose holder deals or rules (dealer, floor);
1. signed by any other key (surveillance, pit…);
2. unsigned, on a table that takes unsigned requests;
3. refused already (not JSON, too big, a bad signature, unsigned where signing is required): it
   is still answered, and journaled as a bounded record, after everything else.

One worker handles the queue in that order, oldest first within a priority. Rate limits keep a
flood from growing the queue and the journal without bound: each key has its own token bucket,
everything that is not signed by a known key shares one, and everything but the dealer's and the
floor's signed requests shares a third (the table's own capacity). A request over its limit, or one
arriving when the queue is full, is answered at once ("rate limited", "overloaded") and counted,
not journaled one by one; :meth:`Intake.shed_report` gives the counts for the periodic
``requests.shed`` event. Nothing the broker delivered goes unanswered.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.authority import Role
from controller.shell.gate import Gate, RefusedError, Request

#: Where an answer goes; ``urgent`` answers (to signed requests) go out before the others.
Reply = Callable[[dict[str, Any], bool], None]


@dataclass(frozen=True)
class Rates:
    """Requests per second (sustained, and in a burst) for each key and for the unsigned."""

    per_key: float = 20.0
    per_key_burst: float = 40.0
    anonymous: float = 20.0
    anonymous_burst: float = 40.0
    total: float = 200.0  # everything but signed dealer and floor requests, together
    total_burst: float = 400.0
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


@dataclass(order=True)
class Queued:
    """A request waiting for the worker."""

    priority: int
    order: int
    verb: str = field(compare=False)
    payload: bytes = field(compare=False)
    received: datetime = field(compare=False)
    read: Request | RefusedError = field(compare=False)
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
        self._total = TokenBucket(rates.total, rates.total_burst)
        self.shed: Counter[str] = Counter()
        self.handled = 0

    def __len__(self) -> int:
        return len(self._heap)

    def offer(self, verb: str, payload: bytes, received: datetime, reply: Reply) -> None:
        """Take one request from a source: queue it, or answer it at once when it is shed.

        A request without ``auth`` is anonymous whatever it holds: its rate is checked before
        it is even parsed, so a flood costs the table as little as it can.
        """
        now = time.monotonic()
        if b'"auth"' not in payload and not self._anonymous.take(now):
            self._shed(verb, reply, "rate limited: too many requests; try again")
            return
        try:
            read: Request | RefusedError = self.gate.read(verb, payload, received)
        except RefusedError as refused:
            read = refused
        priority = _priority(read)
        bucket = self._bucket(read)
        limited = b'"auth"' in payload and not bucket.take(now)
        # the table's own capacity: every request but a dealer's or the floor's counts
        if limited or (priority > 0 and not self._total.take(now)):
            self._shed(verb, reply, "rate limited: too many requests; try again", _txn(read))
            return
        if len(self._heap) >= self.rates.queue_limit:
            lowest = max(self._heap)
            if lowest.priority <= priority:
                self._shed(verb, reply, "overloaded: the table is busy; try again", _txn(read))
                return
            self._heap.remove(lowest)  # a more urgent request takes the place of the least
            heapq.heapify(self._heap)
            self._shed(lowest.verb, lowest.reply, "overloaded: the table is busy; try again")
        item = Queued(priority, next(self._order), verb, payload, received, read, reply)
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
        reply(refusal(verb, reason, transaction), False)

    def shed_report(self) -> dict[str, int]:
        """The requests shed since the last report, by reason (and forget them)."""
        report = dict(self.shed)
        self.shed.clear()
        return report

    def _bucket(self, read: Request | RefusedError) -> TokenBucket:
        key = read.principal.key if isinstance(read, Request) else None
        if key is None:
            return self._anonymous
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rates.per_key, self.rates.per_key_burst)
        return bucket


def _priority(read: Request | RefusedError) -> int:
    if isinstance(read, RefusedError):
        return 3
    principal = read.principal
    if principal.key is None:
        return 2
    return 0 if principal.roles & {Role.DEALER, Role.FLOOR} else 1


def _txn(read: Request | RefusedError) -> str | None:
    return read.transaction
