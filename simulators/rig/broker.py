"""The rig's broker: one given by URL, a mosquitto of its own on a free port, or none.

``mqtt://host:port`` (or ``host:port``) names a broker to use; ``none`` runs without one (the
daemon keeps its events in the journal, and the rig reads them there). Without either, the rig
starts the Debian ``mosquitto`` binary as a child process on a free local port when it is
installed, and goes without a broker when it is not.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from controller.broker_setup import BrokerUser, BrokerUsers, write_setup
from simulators.rig.children import Child

AUTO = "auto"
NONE = "none"


class BrokerError(ValueError):
    """A broker URL that cannot be used."""


@dataclass(frozen=True)
class Login:
    """A broker user and the file holding its password."""

    username: str
    password_file: Path

    @property
    def password(self) -> str:
        """The password."""
        return self.password_file.read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class BrokerAddress:
    """Where the broker listens, and the logins the rig has there (an open broker: none)."""

    host: str
    port: int
    console: Login | None = None  # the rig's consoles and its event reader
    table: Login | None = None  # the rig's tables

    @property
    def url(self) -> str:
        """``mqtt://host:port``."""
        return f"mqtt://{self.host}:{self.port}"


def parse_broker(text: str) -> BrokerAddress:
    """``mqtt://host:port``, ``mqtt://host`` or ``host:port`` (port 1883 by default)."""
    rest = text.removeprefix("mqtt://")
    if "://" in rest:
        raise BrokerError(f"{text!r}: only mqtt:// brokers (plain TCP) are supported here")
    host, _, port_text = rest.rstrip("/").partition(":")
    if not host:
        raise BrokerError(f"{text!r}: no host")
    try:
        port = int(port_text) if port_text else 1883
    except ValueError:
        raise BrokerError(f"{text!r}: the port is not a number") from None
    if not 1 <= port <= 65535:
        raise BrokerError(f"{text!r}: port {port} is out of range")
    return BrokerAddress(host, port)


def mosquitto_binary() -> str | None:
    """The installed mosquitto, if any (Debian puts it in /usr/sbin, often not on PATH)."""
    found = shutil.which("mosquitto")
    if found:
        return found
    return "/usr/sbin/mosquitto" if os.access("/usr/sbin/mosquitto", os.X_OK) else None


def free_port() -> int:
    """A local TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def can_connect(address: BrokerAddress) -> bool:
    """Whether something accepts TCP connections at ``address``."""
    try:
        async with asyncio.timeout(1.0):
            _, writer = await asyncio.open_connection(address.host, address.port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    return True


class LocalBroker:
    """A mosquitto of the rig's own, on a free port of 127.0.0.1, without persistence."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.address = BrokerAddress("127.0.0.1", free_port())
        self.child: Child | None = None

    async def start(self, timeout: float = 30.0) -> None:
        """Start it and wait until it accepts connections (another port if one was taken).

        It is waited for as long as it runs: a mosquitto that exits at start (its port was
        taken since :func:`free_port` chose it) is started again on another port; ``timeout``
        only bounds a broker that neither listens nor exits.

        It runs with the shipped broker setup (``tablectl broker setup``): no anonymous user,
        a user for the rig's tables and one for its consoles, and the ACL of docs/security.md.
        """
        users = BrokerUsers(
            prefix="+",  # every rig of a run has a topic prefix of its own
            users={
                "rig-table": BrokerUser(roles=["table"]),
                "rig-console": BrokerUser(roles=["dealer", "floor", "surveillance", "pit"]),
            },
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        for _ in range(3):
            conf = self.directory / "mosquitto.conf"
            # As root, mosquitto drops to its own user unless told to stay.
            user = pwd.getpwuid(os.geteuid()).pw_name
            listener = f"{self.address.port} 127.0.0.1"
            # loopback only: no TLS listener; and its two logins are shared by every table,
            # console and tool of the rigs of a run, so a client id is not bound to its user
            write_setup(
                users,
                self.directory,
                listener=listener,
                tls_listener=None,
                run_as=user,
                bind_client_ids=False,
            )
            secrets = self.directory / "passwords"
            self.address = BrokerAddress(
                self.address.host,
                self.address.port,
                console=Login("rig-console", secrets / "rig-console"),
                table=Login("rig-table", secrets / "rig-table"),
            )
            with conf.open("a") as handle:
                handle.write(
                    "persistence false\nlog_dest stderr\nlog_type error\nlog_type warning\n"
                )
            self.child = Child("mosquitto", [self.binary, "-c", str(conf)], self.directory)
            await self.child.start()
            while self.child.running and loop.time() < deadline:
                if await can_connect(self.address):
                    return
                await asyncio.sleep(0.02)
            await self.child.stop()
            if loop.time() >= deadline:
                break
            self.address = BrokerAddress("127.0.0.1", free_port())
        raise RuntimeError(f"mosquitto did not start (see {self.directory / 'mosquitto.log'})")

    async def stop(self) -> None:
        """Stop it."""
        if self.child is not None:
            await self.child.stop()
