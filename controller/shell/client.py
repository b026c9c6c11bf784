"""The other end of the topics: a subscriber (``tablectl tail``) and a dealer console.

:class:`DealerClient` sends requests and waits for their responses by ``transaction``; a request
that gets no answer in time can be sent again with the same transaction, and the table answers
it once (with the stored response if it already ran it).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from controller import strict_json
from controller.aio import stop_tasks
from controller.config import BrokerSection
from controller.mqtt import Client, Message, MqttError, new_client
from controller.shell.topics import Topics
from controller.signing import Signer


class DealerClient:
    """A dealer console on one table's request and response topics."""

    def __init__(
        self,
        client: Client,
        topics: Topics,
        other: Callable[[Message], None] | None = None,
        signer: Signer | None = None,
        on_lost: Callable[[MqttError], None] | None = None,
    ) -> None:
        self.client = client
        self.topics = topics
        self.other = other  # messages on other subscribed topics go here
        self.signer = signer  # signs every request (a table that requires it refuses others)
        self.on_lost = on_lost  # told when the connection ends (no response can come any more)
        self.lost: MqttError | None = None  # why the responses stopped, once they have
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Subscribe to the responses."""
        await self.client.subscribe(f"{self.topics.base}/response/+", qos=1)
        self._reader = asyncio.create_task(self._read(), name="dealer:responses")

    async def stop(self) -> None:
        """Stop reading responses."""
        if self._reader is not None:
            await stop_tasks(self._reader)

    async def _read(self) -> None:
        try:
            await self._read_responses()
        except MqttError as exc:
            # The connection is gone: a request waiting for its response would wait its whole
            # timeout for nothing; it fails now, and so does every request after it (``lost``
            # keeps why; the reader ends without raising, so ``stop`` does not either).
            self.lost = exc
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(_lost(exc))
            if self.on_lost is not None:
                self.on_lost(exc)

    async def _read_responses(self) -> None:
        async for message in self.client.messages:
            if not message.topic.matches(f"{self.topics.base}/response/+"):
                if self.other is not None:
                    self.other(message)
                continue
            try:
                body = strict_json.loads(
                    message.payload if isinstance(message.payload, bytes) else b""
                )
            except ValueError:
                continue
            if not isinstance(body, dict):
                continue  # not a response: nobody waits for it
            future = self._waiting.get(str(body.get("transaction")))
            if future is not None and not future.done():
                future.set_result(body)

    def raise_if_lost(self) -> None:
        """Raise MqttError once the connection is lost: nothing can come over it any more."""
        if self.lost is not None:
            raise _lost(self.lost)

    async def send(
        self,
        command: str,
        fields: Mapping[str, Any] | None = None,
        *,
        transaction: str | None = None,
        timeout: float = 10.0,
        sign: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Send one request and wait for its response (TimeoutError if none comes, MqttError
        once the connection is lost).

        ``sign`` signs this request instead of the client's signer (a console of several keys).
        """
        self.raise_if_lost()
        transaction = transaction or uuid.uuid4().hex
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[transaction] = future
        try:
            signing = sign or (self.signer.sign if self.signer is not None else None)
            payload = json.dumps(request_body(command, fields or {}, transaction, signing)).encode()
            await self.client.publish(self.topics.request(command), payload, qos=1)
            async with asyncio.timeout(timeout):
                return await future
        finally:
            self._waiting.pop(transaction, None)


def request_body(
    command: str,
    fields: Mapping[str, Any],
    transaction: str,
    sign: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """What a request on ``request/{command}`` carries: its transaction and fields, signed
    when ``sign`` is given (docs/mqtt.md, "Requests"; docs/security.md)."""
    body: dict[str, Any] = {"transaction": transaction, **fields}
    return sign(command, body) if sign is not None else body


def _lost(exc: MqttError) -> MqttError:
    return MqttError(f"the connection to the broker was lost ({exc})")


async def request(
    broker: BrokerSection,
    prefix: str,
    table: str,
    command: str,
    fields: Mapping[str, Any],
    transaction: str,
    timeout: float,
    *,
    signer: Signer | None = None,
) -> dict[str, Any]:
    """One request, its response (``tablectl dealer``)."""
    async with new_client(broker) as client:
        dealer = DealerClient(client, Topics(prefix, table), signer=signer)
        await dealer.start()
        try:
            return await dealer.send(command, fields, transaction=transaction, timeout=timeout)
        except TimeoutError:
            return {"transaction": transaction, "status": "error", "error": "no response"}
        finally:
            await dealer.stop()


def pretty(body: Mapping[str, Any]) -> str:
    """One event as a line: seq, type, rules, data (and ``historical`` when it is)."""
    late = " historical" if body.get("historical") else ""
    listed = body.get("rules")
    rules = ",".join(str(r) for r in listed) if isinstance(listed, list) else ""
    data = json.dumps(body.get("data"), separators=(",", ":"), ensure_ascii=False)
    hand = str(body.get("hand_id") or "-")
    seq, kind = str(body.get("seq", "?")), str(body.get("type", "?"))
    return f"{seq:>6} {hand:<10} {kind:<24} {rules:<18} {data}{late}"


async def tail(
    broker: BrokerSection,
    prefix: str,
    table: str,
    *,
    secure: bool = False,
    count: int = 0,
    as_json: bool = False,
) -> int:
    """Print events as they arrive (``tablectl tail``): pretty lines, or ``as_json`` each
    envelope as it came (one JSON line each; the status changes go to standard error)."""
    topics = Topics(prefix, table)
    seen = 0
    async with new_client(broker) as client:
        await client.subscribe(topics.secure_events if secure else topics.events, qos=1)
        await client.subscribe(topics.status, qos=1)
        async for message in client.messages:
            payload = message.payload if isinstance(message.payload, bytes) else b"{}"
            try:
                body = strict_json.loads(payload)
            except ValueError:
                print(f"# not JSON on {message.topic.value}", file=sys.stderr, flush=True)
                continue
            if not isinstance(body, dict):
                print(f"# not a JSON object on {message.topic.value}", file=sys.stderr, flush=True)
                continue
            if message.topic.value == topics.status:
                line = f"# status {body.get('state')} bdseq {body.get('bdseq')}"
                print(line, file=sys.stderr if as_json else sys.stdout, flush=True)
                continue
            if as_json:
                print(json.dumps(body, separators=(",", ":"), ensure_ascii=False), flush=True)
            else:
                print(pretty(body), flush=True)
            seen += 1
            if count and seen >= count:
                break
    return 0
