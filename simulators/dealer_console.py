"""An automatic dealer console over MQTT: plays whole hands through a running daemon.

It reads the table's retained ``state`` snapshot and sends the request a dealer would: start a
hand, check or call for the seat to act, table each hand at showdown, push the award, and
confirm any ruling the table holds for the dealer. While the
devices deal it waits for the next snapshot. A request that gets no answer (the daemon is
restarting, the broker is away) is sent again with the same ``transaction``, so it runs once.
Tests, the pipeline benchmark and demos drive the daemon with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable
from typing import Any

from controller.mqtt import Client, Message
from controller.shell.client import DealerClient
from controller.shell.topics import Topics


class AutoConsole:
    """Plays hands at one table through its request topics (one MQTT client)."""

    def __init__(
        self,
        client: Client,
        topics: Topics,
        *,
        retry: float = 2.0,
        sign: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.topics = topics
        self.client = client
        self.dealer = DealerClient(
            client, topics, other=self._message, on_lost=lambda _: self._changed.set()
        )
        self.sign = sign  # signs each request (with the key of the role that gives it)
        self.retry = retry
        self.snapshot: dict[str, Any] | None = None
        self.responses: list[dict[str, Any]] = []
        self._changed = asyncio.Event()

    async def start(self) -> None:
        """Subscribe to responses and to the state snapshot."""
        await self.dealer.start()
        await self.client.subscribe(self.topics.state, qos=1)

    async def stop(self) -> None:
        """Stop reading."""
        await self.dealer.stop()

    def _message(self, message: Message) -> None:
        if message.topic.value != self.topics.state:
            return
        payload = message.payload if isinstance(message.payload, bytes) else b"{}"
        body = json.loads(payload)
        if self.snapshot is None or _newer(body, self.snapshot):
            self.snapshot = body
            self._changed.set()

    async def wait_snapshot(self, after_seq: int, timeout: float) -> dict[str, Any] | None:
        """The first snapshot at or past ``after_seq`` (the latest one on timeout).

        Raises MqttError once the connection is lost: no snapshot can come any more, and a
        console that kept waiting would play on from a table state that no longer holds.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self.snapshot is None or self.snapshot["seq"] < after_seq:
                    self.dealer.raise_if_lost()
                    self._changed.clear()
                    await self._changed.wait()
        self.dealer.raise_if_lost()
        return self.snapshot

    async def send(self, command: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send until answered (same transaction every time)."""
        transaction = uuid.uuid4().hex
        while True:
            try:
                body = await self.dealer.send(
                    command, fields, transaction=transaction, timeout=self.retry, sign=self.sign
                )
            except TimeoutError:
                continue
            if body.get("transaction") != transaction:
                await asyncio.sleep(0.05)  # the table was starting: not recorded, send again
                continue
            self.responses.append(body)
            return body

    def decide(
        self, snap: dict[str, Any], hands: int, played: int
    ) -> tuple[str, dict[str, Any]] | None:
        """The next request for ``snap``; None to wait for the devices (or when done)."""
        hand = snap.get("hand")
        if hand is None:
            return ("start_hand", {}) if played < hands else None
        if hand.get("holds"):
            return "confirm", {"hold": hand["holds"][0]["id"]}
        phase = hand["phase"]
        if phase == "betting" and hand["to_act"] is not None:
            action = "call" if hand["to_call"] else "check"
            return "action", {"seat": hand["to_act"], "action": action}
        if phase == "showdown":
            for seat in hand["showdown_order"]:
                status = snap["seats"][str(seat)].get("status")
                if status == "live" and seat not in hand["tabled"]:
                    return "table", {"seat": seat}
        if phase == "award":
            return "award", {}
        return None

    async def play(self, hands: int, timeout: float = 60.0) -> int:
        """Play ``hands`` hands to completion; return how many completed."""
        snap = await self.wait_snapshot(0, timeout)
        if snap is None:
            raise TimeoutError("no state snapshot from the table")
        played = 0
        last_hand = snap.get("last_hand")
        async with asyncio.timeout(timeout):
            while True:
                snap = self.snapshot
                assert snap is not None
                if snap.get("last_hand") != last_hand:
                    last_hand = snap.get("last_hand")
                    played += 1
                step = self.decide(snap, hands, played)
                if step is None:
                    if played >= hands and snap.get("hand") is None:
                        return played
                    await self.wait_snapshot(snap["seq"] + 1, 1.0)
                    continue
                body = await self.send(*step)
                target = body["data"].get("last_seq") or snap["seq"] + 1
                await self.wait_snapshot(target, 2.0)


def _newer(body: dict[str, Any], current: dict[str, Any]) -> bool:
    if body.get("epoch") != current.get("epoch"):
        return True
    return int(body.get("seq", 0)) >= int(current.get("seq", 0))
