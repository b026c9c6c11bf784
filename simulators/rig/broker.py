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

from simulators.rig.children import Child

AUTO = "auto"
NONE = "none"


class BrokerError(ValueError):
    """A broker URL that cannot be used."""


@dataclass(frozen=True)
class BrokerAddress:
    """Where the broker listens."""

    host: str
    port: int

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
        _, writer = await asyncio.wait_for(asyncio.open_connection(address.host, address.port), 1.0)
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

    async def start(self, timeout: float = 10.0) -> None:
        """Start it and wait until it accepts connections (another port if one was taken)."""
        for _ in range(3):
            conf = self.directory / "mosquitto.conf"
            # As root, mosquitto drops to its own user unless told to stay.
            user = pwd.getpwuid(os.geteuid()).pw_name
            # TCP_NODELAY: a console waits for each small response; Nagle would hold it back.
            conf.write_text(
                f"listener {self.address.port} 127.0.0.1\nallow_anonymous true\nuser {user}\n"
                "persistence false\nset_tcp_nodelay true\n"
                "log_dest stderr\nlog_type error\nlog_type warning\n"
            )
            self.child = Child("mosquitto", [self.binary, "-c", str(conf)], self.directory)
            await self.child.start()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout / 3
            while loop.time() < deadline and self.child.running:
                if await can_connect(self.address):
                    return
                await asyncio.sleep(0.02)
            await self.child.stop()
            self.address = BrokerAddress("127.0.0.1", free_port())
        raise RuntimeError(f"mosquitto did not start (see {self.directory / 'mosquitto.log'})")

    async def stop(self) -> None:
        """Stop it."""
        if self.child is not None:
            await self.child.stop()
