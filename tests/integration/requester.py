"""A client that sends raw requests to a table and pairs each answer with its request.

Every request goes out with MQTT v5 correlation data of its own, which the table echoes in its
answer; so even a request with no usable ``transaction`` (garbage, a flood) is matched with its
answer, and a request the table never answered is noticed.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterable
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.shell.topics import Topics


class Requester:
    """Publishes requests, collects their answers by correlation data."""

    def __init__(self, client: aiomqtt.Client, topics: Topics, answers: str = "#") -> None:
        """``answers``: the response topics to read (``#``: every command's)."""
        self.client = client
        self.topics = topics
        self.responses = f"{topics.base}/response/{answers}"
        self.answers: dict[bytes, dict[str, Any]] = {}
        self.answered_at: dict[bytes, float] = {}
        self.sent_at: dict[bytes, float] = {}
        self._count = 0
        self._prefix = uuid.uuid4().hex[:8]  # answers to another requester are not ours
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Requester:
        """Subscribe to the answers, and wait until the table is online to take requests."""
        self.online = asyncio.Event()
        await self.client.subscribe(self.responses, qos=1)
        await self.client.subscribe(self.topics.status, qos=1)
        self._task = asyncio.create_task(self._read(), name="requester")
        async with asyncio.timeout(60):  # a bound: on an idle machine, well under a second
            await self.online.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _read(self) -> None:
        responses = self.responses
        async for message in self.client.messages:
            if message.topic.value == self.topics.status:
                payload = message.payload if isinstance(message.payload, bytes) else b"{}"
                if json.loads(payload).get("state") == "online":
                    self.online.set()
                continue
            if not message.topic.matches(responses):
                continue
            correlation = getattr(message.properties, "CorrelationData", None)
            if not isinstance(correlation, bytes):
                continue
            payload = message.payload if isinstance(message.payload, bytes) else b"{}"
            self.answers[correlation] = json.loads(payload)
            self.answered_at[correlation] = time.monotonic()
            async with self._changed:
                self._changed.notify_all()

    async def send(self, verb: str, payload: bytes, *, retain: bool = False) -> bytes:
        """Publish one request; return its correlation data."""
        self._count += 1
        correlation = f"{self._prefix}-{self._count}".encode()
        properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        properties.CorrelationData = correlation
        properties.ResponseTopic = self.topics.response(verb if verb.isidentifier() else "invalid")
        self.sent_at[correlation] = time.monotonic()
        await self.client.publish(
            self.topics.request(verb), payload, qos=1, retain=retain, properties=properties
        )
        return correlation

    async def request(
        self, verb: str, body: dict[str, Any], timeout: float = 60.0
    ) -> dict[str, Any]:
        """Send one request and wait for its answer."""
        return await self.request_raw(verb, json.dumps(body).encode(), timeout)

    async def request_raw(self, verb: str, payload: bytes, timeout: float = 60.0) -> dict[str, Any]:
        """Send one request's bytes and wait for its answer."""
        correlation = await self.send(verb, payload)
        return (await self.wait([correlation], timeout))[correlation]

    async def wait(
        self, correlations: Iterable[bytes], timeout: float
    ) -> dict[bytes, dict[str, Any]]:
        """The answers to ``correlations`` (AssertionError naming how many never came)."""
        wanted = list(correlations)
        try:
            async with asyncio.timeout(timeout):
                async with self._changed:
                    await self._changed.wait_for(lambda: all(c in self.answers for c in wanted))
        except TimeoutError:
            missing = [c for c in wanted if c not in self.answers]
            raise AssertionError(
                f"{len(missing)} of {len(wanted)} requests got no answer"
            ) from None
        return {c: self.answers[c] for c in wanted}
