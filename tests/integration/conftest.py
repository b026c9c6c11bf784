"""Fixtures of the integration tests: a real mosquitto, real daemon processes, a subscriber."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.authority import Role
from controller.mqtt import Client
from controller.shell.topics import Topics
from simulators.rig.keys import RigKeys
from simulators.rig.launcher import SpawnedProcess, spawn
from tests.integration.broker import Broker, mosquitto_available

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A mosquitto of this test's own (stopped at the end)."""
    if not mosquitto_available():
        pytest.skip("mosquitto is not installed")
    directory = tmp_path / "broker"
    directory.mkdir()
    instance = Broker(directory, extra=f"persistence true\npersistence_location {directory}/\n")
    instance.start()
    yield instance
    instance.stop()


class DaemonProcess:
    """``tablectl run`` as its own process, with a notify socket to hear READY=1."""

    def __init__(
        self,
        directory: Path,
        broker: Broker,
        *,
        table: str = "T1",
        seed: int = 7,
        event_delay: float = 0.0,
        stacks: str = "{ 1 = 100, 2 = 100, 3 = 100 }",
        devices: str | None = None,
        broker_port: int | None = None,
        broker_extra: str = "",
        environment: dict[str, str] | None = None,
        journal: Path | None = None,
        journal_extra: str = "",
        table_extra: str = "",
        security_extra: str = "",
        sections: str = "",
    ) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.broker = broker
        self.table = table
        self.topics = Topics("tables", table)
        self.journal = journal or directory / "journal.sqlite"
        self.config = directory / "table.toml"
        if devices is None:
            devices = (
                f'[devices.shuffler]\ndriver = "virtual"\nseed = {seed}\n'
                f'state_file = "{directory / "shuffler.json"}"\nevent_delay = {event_delay}\n'
            )
        self.keys = RigKeys.create(directory / "keys")
        self.config.write_text(
            f'[table]\nid = "{table}"\nstacks = {stacks}\nbutton = 3\nblinds = [1, 2]\n'
            f"{table_extra}"
            f'[security]\nkeyring = "{self.keys.keyring}"\n{security_extra}'
            f"{devices}"
            f'[broker]\nhost = "127.0.0.1"\nport = {broker_port or broker.port}\nkeepalive = 5\n'
            f"reconnect_min = 0.05\nreconnect_max = 0.5\n{broker_extra}"
            f'[journal]\npath = "{self.journal}"\n{journal_extra}'
            '[log]\nformat = "json"\nlevel = "info"\n'
            f"{sections}"
        )
        self._sockdir = Path(tempfile.mkdtemp(prefix="tn"))
        self.notify_path = self._sockdir / "notify"
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(self.notify_path))
        self.notify.settimeout(0.1)
        self._closing = False
        self.messages: list[str] = []
        self._heard = threading.Condition()
        self._listener = threading.Thread(target=self._listen, daemon=True)
        self._listener.start()
        self.environment = environment or {}
        self.proc: SpawnedProcess | None = None
        self.starts = 0
        self._mark = 0

    def sign(self, command: str, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` signed as the role that gives ``command`` would (dealer, floor…)."""
        return self.keys.sign(self.table, command, body)

    def key_args(self, role: Role = Role.DEALER) -> list[str]:
        """``tablectl dealer`` arguments that sign with the key of ``role``."""
        return ["--signing-key", str(self.keys.key_file(role))]

    def start(self, timeout: float = 60.0, until: str = "READY=1") -> float:
        """Start the daemon; return the seconds until it said ``until`` (READY=1).

        The bound is generous: on a machine whose cores are all busy (``make test-busy``) a
        Python process takes ten times as long to import and replay as on an idle one.
        """
        started = time.monotonic()
        self.launch()
        self.wait_notify(until, timeout)
        return time.monotonic() - started

    def launch(self) -> None:
        """Start the daemon's process, without waiting for it to be ready."""
        env = {
            **os.environ,
            "NOTIFY_SOCKET": str(self.notify_path),
            "PYTHONUNBUFFERED": "1",
            **self.environment,
        }
        log = (self.directory / "daemon.log").open("ab")
        with self._heard:
            self._mark = len(self.messages)
        # forked by the launcher, which has imported tablectl once for every daemon of the run
        with log:
            self.proc = spawn(
                ["run", "--config", str(self.config)],
                env,
                stdout=log.fileno(),
                stderr=log.fileno(),
                cwd=str(REPO),
            )
        self.starts += 1

    def _listen(self) -> None:
        # Read every datagram at once, as systemd does: a full socket would drop lines.
        while not self._closing:
            try:
                data = self.notify.recv(4096).decode()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._heard:
                self.messages.append(data)
                self._heard.notify_all()

    def wait_notify(self, line: str, timeout: float, *, prefix: bool = False) -> None:
        """Wait for a notify datagram holding ``line`` (or a line starting with it, with
        ``prefix``), sent after the last start."""
        deadline = time.monotonic() + timeout

        def heard(message: str) -> bool:
            lines = message.split("\n")
            return any(x.startswith(line) for x in lines) if prefix else line in lines

        with self._heard:
            while True:
                if any(heard(m) for m in self.messages[self._mark :]):
                    return
                assert self.proc is not None
                if self.proc.poll() is not None:
                    raise AssertionError(
                        f"the daemon exited ({self.proc.returncode}):\n{self.log()}"
                    )
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no {line} from the daemon in {timeout} s:\n{self.log()}")
                self._heard.wait(min(remaining, 0.1))

    def notified(self) -> list[str]:
        """Every notify line the daemon sent since the last start."""
        with self._heard:
            return [line for m in self.messages[self._mark :] for line in m.split("\n")]

    def wait_status(self, text: str, timeout: float) -> None:
        """Wait for a ``STATUS=`` line holding ``text`` (sent after the last start)."""
        deadline = time.monotonic() + timeout
        with self._heard:
            while not any(
                line.startswith("STATUS=") and text in line
                for message in self.messages[self._mark :]
                for line in message.split("\n")
            ):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no STATUS with {text!r} in {timeout} s:\n{self.log()}")
                self._heard.wait(min(remaining, 0.1))

    def kill(self, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` and wait for the process to end; return its exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(20)

    def log(self) -> str:
        """The daemon's output so far."""
        path = self.directory / "daemon.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def close(self) -> None:
        """Stop whatever runs and remove the notify socket."""
        if self.proc is not None and self.proc.poll() is None:
            self.kill(signal.SIGKILL)
        self._closing = True
        self._listener.join(2)
        self.notify.close()
        shutil.rmtree(self._sockdir, ignore_errors=True)


@pytest.fixture
def daemon_factory(tmp_path: Path, broker: Broker) -> Iterator[Any]:
    """Make daemons in this test's directory; all are killed at the end."""
    made: list[DaemonProcess] = []

    def make(name: str = "daemon", **kwargs: Any) -> DaemonProcess:
        daemon = DaemonProcess(tmp_path / name, broker, **kwargs)
        made.append(daemon)
        return daemon

    yield make
    for daemon in made:
        daemon.close()


class Collector:
    """A subscriber with a persistent session: every event, both streams, and the status."""

    def __init__(self, broker: Broker, topics: Topics, identifier: str = "collector") -> None:
        self.broker = broker
        self.topics = topics
        self.identifier = identifier
        self.public: list[dict[str, Any]] = []
        self.secure: list[dict[str, Any]] = []
        self.status: list[dict[str, Any]] = []
        self.connected = asyncio.Event()
        # a Condition, not an Event: several tasks wait on it, and none may clear another's wake-up
        self.changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Collector:
        self._task = asyncio.create_task(self._run(), name="collector")
        async with asyncio.timeout(10):
            await self.connected.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        properties.SessionExpiryInterval = 600
        while True:
            try:
                async with aiomqtt.Client(
                    "127.0.0.1",
                    self.broker.port,
                    identifier=self.identifier,
                    protocol=aiomqtt.ProtocolVersion.V5,
                    clean_start=False,
                    properties=properties,
                    keepalive=5,
                ) as client:
                    for topic in (
                        self.topics.events,
                        self.topics.secure_events,
                        self.topics.status,
                    ):
                        await client.subscribe(topic, qos=1)
                    self.connected.set()
                    async for message in client.messages:
                        payload = message.payload if isinstance(message.payload, bytes) else b""
                        body = json.loads(payload)
                        topic = message.topic.value
                        if topic == self.topics.status:
                            self.status.append(body)
                        elif topic == self.topics.secure_events:
                            self.secure.append(body)
                        else:
                            self.public.append(body)
                        async with self.changed:
                            self.changed.notify_all()
            except aiomqtt.MqttError:
                self.connected.clear()
                await asyncio.sleep(0.05)

    async def wait_for(self, predicate: Any, timeout: float = 60.0) -> None:
        """Wait until ``predicate(self)`` holds."""
        async with asyncio.timeout(timeout), self.changed:
            await self.changed.wait_for(lambda: predicate(self))


@pytest.fixture
async def console_client(broker: Broker) -> AsyncIterator[Client]:
    """An MQTT client for a dealer console (the project's own: the console's code runs on it)."""
    async with Client("127.0.0.1", broker.port) as client:
        yield client


def unique_seqs(events: list[dict[str, Any]]) -> list[int]:
    """The sequence numbers received, first delivery of each, in arrival order."""
    seen: set[str] = set()
    seqs = []
    for body in events:
        if body["event_id"] not in seen:
            seen.add(body["event_id"])
            seqs.append(body["seq"])
    return seqs
