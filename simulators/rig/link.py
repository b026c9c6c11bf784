"""The rig's MQTT client and the daemon's readiness signal.

:class:`BrokerLink` is one MQTT 5 client for the whole rig: it takes the table's surveillance
stream (``secure/events``) and the dealer console's responses.
:class:`NotifySocket` is the ``NOTIFY_SOCKET`` a daemon child reports ``READY=1`` on, as it
would to systemd.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.mqtt import Client, Message, MqttError
from controller.mqtt.connection import NO_DELAY
from controller.shell.client import DealerClient
from controller.shell.topics import Topics
from simulators.rig.broker import BrokerAddress


class BrokerLink:
    """The rig's connection to the broker."""

    def __init__(self, address: BrokerAddress, topics: Topics, identifier: str) -> None:
        self.address = address
        self.topics = topics
        self.identifier = identifier
        self.client: Client | None = None
        self.dealer: DealerClient | None = None
        self.collect = True  # keep the envelopes (a scenario run); a demo only passes them on
        self.events: dict[str, dict[int, dict[str, Any]]] = {}  # epoch → seq → envelope
        self.seen: dict[str, set[int]] = {}  # epoch → sequence numbers received
        self.changed = asyncio.Event()
        self.listeners: list[Callable[[dict[str, Any]], None]] = []

    async def start(self) -> None:
        """Connect, subscribe, and start reading."""
        login = self.address.console
        client = Client(
            self.address.host,
            self.address.port,
            username=login.username if login else None,
            password=login.password if login else None,
            identifier=self.identifier,
            keepalive=10,
            socket_options=NO_DELAY,
        )
        await client.__aenter__()
        self.client = client
        await client.subscribe(self.topics.secure_events, qos=1)
        self.dealer = DealerClient(client, self.topics, other=self._message)
        await self.dealer.start()

    def _message(self, message: Message) -> None:
        payload = message.payload if isinstance(message.payload, bytes) else b""
        try:
            body = json.loads(payload)
        except json.JSONDecodeError:
            return
        if not isinstance(body, dict):
            return
        topic = message.topic.value
        if topic == self.topics.secure_events and "seq" in body:
            epoch, seq = str(body.get("epoch")), int(body["seq"])
            seen = self.seen.setdefault(epoch, set())
            if seq in seen:
                return  # delivered again (QoS 1): shown once
            seen.add(seq)
            if self.collect:
                self.events.setdefault(epoch, {})[seq] = body
            for listener in self.listeners:
                listener(body)
        self.changed.set()

    def stream(self, epoch: str) -> list[dict[str, Any]]:
        """The events of ``epoch`` received so far, in order (each once)."""
        got = self.events.get(epoch, {})
        return [got[seq] for seq in sorted(got)]

    async def wait_events(self, epoch: str, upto: int, timeout: float = 10.0) -> None:
        """Wait until every event of ``epoch`` up to ``upto`` has arrived."""
        async with asyncio.timeout(timeout):
            while True:
                self.changed.clear()
                got = self.seen.get(epoch, set())
                if all(seq in got for seq in range(1, upto + 1)):
                    return
                await self.changed.wait()

    def forget(self, epoch: str) -> None:
        """Drop what was kept of a closed table's events."""
        self.events.pop(epoch, None)
        self.seen.pop(epoch, None)

    async def stop(self) -> None:
        """Disconnect."""
        if self.dealer is not None:
            await self.dealer.stop()
        if self.client is not None:
            with contextlib.suppress(MqttError):
                await self.client.__aexit__(None, None, None)
        self.client = None


class NotifySocket:
    """A datagram socket a child daemon sends its sd_notify lines to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.setblocking(False)
        self.lines: list[str] = []
        self._changed = asyncio.Event()
        asyncio.get_running_loop().add_reader(self.sock.fileno(), self._readable)

    def _readable(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while True:
                data = self.sock.recv(4096)
                self.lines.extend(data.decode(errors="replace").split("\n"))
                self._changed.set()

    async def wait(self, line: str, after: int, timeout: float) -> None:
        """Wait until ``line`` was sent (among the lines after the first ``after``)."""
        async with asyncio.timeout(timeout):
            while line not in self.lines[after:]:
                self._changed.clear()
                await self._changed.wait()

    def close(self) -> None:
        """Stop listening and remove the socket."""
        asyncio.get_running_loop().remove_reader(self.sock.fileno())
        self.sock.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
