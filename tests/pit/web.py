"""A pit web server for the tests: the real app on uvicorn, on a free port, in the test's loop."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI

from controller.pit.health import PitHealth
from controller.pit.http import listen, web_server
from controller.pit.live import LiveBoard, StreamLimits
from controller.pit.lockout import LockOut
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.users import add_user
from controller.pit.web.app import create_app
from controller.pit.worker import StoreWorker
from tests.integration.broker import free_port

PASSWORD = "a long enough password"


def new_store(path: Path, users: dict[str, list[str]]) -> str:
    """A migrated SQLite store in ``path`` with ``users`` (name → roles), all of PASSWORD."""
    url = f"sqlite:///{path / 'pit.sqlite'}"
    store = Store(url)
    store.migrate()
    for name, roles in users.items():
        add_user(store, name, roles, PASSWORD)
    store.close()
    return url


def basic(name: str, password: str = PASSWORD) -> str:
    """An HTTP Basic ``Authorization`` header's value."""
    return "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()


@dataclass
class Served:
    """A running pit web server."""

    app: FastAPI
    board: LiveBoard
    port: int
    reader: StoreWorker

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.asynccontextmanager
async def serving(
    app: FastAPI,
    *,
    header_timeout: float = 10.0,
    keepalive_timeout: int = 5,
    trusted_proxies: tuple[str, ...] = (),
) -> AsyncIterator[int]:
    """``app`` on uvicorn as ``tablectl pit run`` serves it, on a free port (yielded)."""
    port = free_port()
    server = web_server(
        app,
        header_timeout=header_timeout,
        keepalive_timeout=keepalive_timeout,
        trusted_proxies=list(trusted_proxies),
    )
    listener = listen("127.0.0.1", port)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        while not server.started:
            assert not task.done(), task.exception()
            await asyncio.sleep(0.005)  # uvicorn says when it listens by this flag only
        yield port
    finally:
        app.state.board.close()  # the live streams end, so the server can stop
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
        listener.close()


@contextlib.asynccontextmanager
async def serve(
    url: str,
    *,
    streams: StreamLimits | None = None,
    lockout: LockOut | None = None,
    trusted_proxies: tuple[str, ...] = (),
    clock: Callable[[], float] = time.time,
    health: PitHealth | None = None,
) -> AsyncIterator[Served]:
    """The pit's app on ``url``'s store, served until the block ends (``clock``: the time its
    lock-out counts in)."""
    reader = StoreWorker(url, "api")
    await reader.open()
    board = LiveBoard()
    app = create_app(
        reader,
        PitMetrics("test"),
        pit_id="test",
        board=board,
        streams=streams,
        lockout=lockout,
        clock=clock,
        health=health,
    )
    try:
        async with serving(app, trusted_proxies=trusted_proxies) as port:
            yield Served(app, board, port, reader)
    finally:
        await reader.close()
