"""systemd's notify protocol, without libsystemd: READY, STATUS, WATCHDOG, STOPPING.

A notification is one datagram of ``KEY=VALUE`` lines to the ``AF_UNIX`` socket named by
``$NOTIFY_SOCKET`` (a leading ``@`` is the abstract namespace). Outside systemd the variable is
unset and every call is a no-op that returns False.

The watchdog is fed from a task on the event loop, so a blocked loop starves it, and only while
the daemon says it is healthy: a daemon whose journal or tasks are stuck stops pinging and
systemd restarts it (``WatchdogSec=`` in the unit).
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable

import structlog

log = structlog.get_logger("tablectl.notify")


def notify(*lines: str) -> bool:
    """Send ``lines`` (``"READY=1"``, ``"STATUS=…"``) to systemd; False when not under it."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    elif not address.startswith("/"):
        log.warning("notify.bad_socket", socket=address)
        return False
    message = "\n".join(lines).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            # Never block the event loop: a reader that does not keep up loses a line instead.
            sock.setblocking(False)
            sock.connect(address)
            sock.sendall(message)
    except BlockingIOError:
        log.warning("notify.dropped", lines=len(lines), reason="the notify socket is full")
        return False
    except OSError as exc:
        log.warning("notify.failed", error=str(exc))
        return False
    return True


def watchdog_interval() -> float | None:
    """Seconds between pings (half of ``WatchdogSec``), or None when there is no watchdog."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or not usec.isdigit() or int(usec) == 0:
        return None
    if pid and pid.isdigit() and int(pid) != os.getpid():
        return None
    return int(usec) / 2_000_000


async def feed_watchdog(healthy: Callable[[], bool], interval: float) -> None:
    """Ping the watchdog every ``interval`` seconds while ``healthy()`` says so."""
    starving = False
    while True:
        if healthy():
            notify("WATCHDOG=1")
            if starving:
                log.info("watchdog.fed_again")
            starving = False
        elif not starving:
            starving = True
            log.error("watchdog.starved", reason="the daemon is not healthy")
        await asyncio.sleep(interval)
