"""The pit's HTTP server: uvicorn with the limits a floor network needs.

* **A complete request head in time.** A connection must send a complete request head within
  ``[web] header_timeout`` seconds of its opening (or of the end of the answer before, on a
  kept-alive connection); one that sends nothing, or its head a byte at a time, is closed.
  uvicorn has no such timeout of its own: :func:`protocol_class` adds it to uvicorn's h11
  protocol through its public methods (a timer armed when the connection is made and when an
  answer is complete, cancelled once a request has begun).
* **Idle connections** are closed ``keepalive_timeout`` seconds after an answer (uvicorn's own).
* **No wait between an answer's parts** (``TCP_NODELAY``): uvicorn writes an answer's head and
  body apart, and without it each answer on a kept-alive connection waited 40 ms.
* **A bounded send buffer.** The kernel would keep up to megabytes for a reader that does not
  read (its send buffer grows by itself); each connection's is set to :data:`SEND_BUFFER`, so
  what waits for a slow reader is that, the transport's 64 KiB (uvicorn's flow control stops
  the application's sends beyond it) and the last thing sent.
* **A connection the application can close.** Each request's ASGI scope carries, in its
  ``state``, the :class:`Connection` it came on (:data:`CONNECTION`): a live stream whose reader
  stops reading closes its connection (``transport.abort``), which ``close`` would not do while
  data waits to be sent.
* **The client's address** is the peer's, or with ``trusted_proxies`` the one those proxies
  name in ``X-Forwarded-For`` (uvicorn's proxy headers, trusted from them only).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from controller.aio import sleep_to_tick

#: The key of the request's :class:`Connection` in the ASGI scope's ``state``.
CONNECTION = "tablectl.connection"
#: Bytes the kernel keeps for each connection's reader at most (Linux doubles it): a page is
#: sent at the floor network's speed all the same.
SEND_BUFFER = 64 * 1024


class Connection:
    """The transport a request came on, as the application may act on it."""

    def __init__(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def abort(self) -> None:
        """Close the connection now, dropping whatever waits to be sent."""
        self.transport.abort()  # type: ignore[attr-defined]


def protocol_class(header_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a deadline for each request head."""

    class HeadTimeoutProtocol(H11Protocol):
        """Closes a connection that has not sent a complete request head in time."""

        head_timer: asyncio.TimerHandle | None = None
        head_cycle: object = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
                # an answer's head and body go out at once, not 40 ms apart (Nagle's wait for
                # the reader's delayed acknowledgement)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.app_state = {**self.app_state, CONNECTION: Connection(transport)}
            self.wait_for_head()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.head_timer is not None and self.cycle is not self.head_cycle:
                self.head_timer.cancel()  # a request began: its head is complete
                self.head_timer = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self.cycle is None or self.cycle.response_complete:
                self.wait_for_head()  # kept alive: the next head has the same deadline

        def connection_lost(self, exc: Exception | None) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None
            super().connection_lost(exc)

        def wait_for_head(self) -> None:
            """Give the connection ``header_timeout`` seconds to send a request head."""
            if self.head_timer is not None:
                self.head_timer.cancel()
            self.head_cycle = self.cycle
            self.head_timer = self.loop.call_later(header_timeout, self.head_overdue)

        def head_overdue(self) -> None:
            """No complete request head in time: close the connection."""
            self.head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return HeadTimeoutProtocol


class WebListenError(RuntimeError):
    """The API's address cannot be listened on."""


def listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound (WebListenError: the address is taken or not ours)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise WebListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return listener


def web_server(
    app: Any,
    *,
    header_timeout: float,
    keepalive_timeout: int,
    trusted_proxies: list[str],
) -> uvicorn.Server:
    """The uvicorn server of the pit's app (run it with ``serve(sockets=[listen(…)])``)."""
    config = uvicorn.Config(
        app,
        http=protocol_class(header_timeout),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
        timeout_keep_alive=keepalive_timeout,
        proxy_headers=bool(trusted_proxies),
        forwarded_allow_ips=list(trusted_proxies),
    )
    return _QuietServer(config)


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handlers (the service decides when to stop), ticking
    once a second rather than ten times."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        """uvicorn's loop wakes every 0.1 s to update the Date header once a second (when
        ``on_tick``'s counter is a multiple of 10) and to see ``should_exit``; a wake of an
        idle process costs some 300 µs of CPU on a small machine, so ten a second were most of
        an idle pit's. One a second keeps the header's second and stops within a second."""
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 10) % 864_000
            await sleep_to_tick(1.0)  # with the process's other timers of the second
