"""The pit's HTTP server against slow clients: a real ``tablectl pit run`` service on real sockets.

A connection must send a complete request head within ``[web] header_timeout`` seconds, whether
it sends nothing or its head a byte at a time, and on a kept-alive connection too; an idle
kept-alive connection is closed after ``keepalive_timeout``. Meanwhile everyone else is served.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from controller.pit.config import PitConfig
from controller.pit.service import PitService
from tests.integration.broker import free_port
from tests.pit.web import PASSWORD, new_store

HEADER_TIMEOUT = 1.5
KEEPALIVE = 1


@pytest.fixture
async def pit(tmp_path: Path) -> AsyncIterator[str]:
    """A pit process's service (its broker away: the web console serves all the same)."""
    url = new_store(tmp_path, {"ann": ["floor"]})
    port = free_port()
    config = PitConfig(
        pit={"id": "web", "confirm": False},
        broker={"host": "127.0.0.1", "port": free_port(), "reconnect_min": 5.0},
        store={"url": url},
        web={
            "listen": f"127.0.0.1:{port}",
            "header_timeout": HEADER_TIMEOUT,
            "keepalive_timeout": KEEPALIVE,
        },
    )
    service = PitService(config)
    running = asyncio.create_task(service.run())
    base = f"http://127.0.0.1:{port}"

    async def answers() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            async with httpx.AsyncClient() as client:
                return (await client.get(f"{base}/login")).status_code == 200
        return False

    deadline = time.monotonic() + 20
    while not await answers():
        assert not running.done(), running
        assert time.monotonic() < deadline, "the pit's web server did not start"
    yield base
    service.stop_requested.set()
    assert await running == 0


async def closed_after(reader: asyncio.StreamReader, opened: float) -> float:
    """Seconds from ``opened`` until the server closed the connection."""
    while True:
        try:
            if not await reader.read(4096):
                break
        except ConnectionResetError:
            break
    return time.monotonic() - opened


async def test_connections_without_a_complete_request_head_in_time_are_closed_others_served(
    pit: str,
) -> None:
    port = int(pit.rsplit(":", 1)[1])
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []
    for _ in range(50):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        opened.append((reader, writer, time.monotonic()))
    trickling = [writer for _, writer, _ in opened[:25]]  # the head a byte at a time
    for writer in trickling:
        writer.write(b"GET / HTTP/1.1\r\nHost: pit\r\nX-Slow: ")

    async def trickle() -> None:
        while True:
            for writer in trickling:
                if not writer.is_closing():
                    writer.write(b"a")
            await asyncio.sleep(0.1)  # the slow client's pace

    pacing = asyncio.create_task(trickle())
    closing = [asyncio.create_task(closed_after(r, t)) for r, _, t in opened]
    # meanwhile a person logs in and reads the floor map
    async with httpx.AsyncClient(base_url=pit) as client:
        login = await client.post("/login", data={"username": "ann", "password": PASSWORD})
        assert login.status_code == 200
        page = await client.get("/")
        assert page.status_code == 200
        assert "<main" in page.text
    assert not any(task.done() for task in closing)  # the slow ones were still open
    async with asyncio.timeout(HEADER_TIMEOUT + 15):
        waited = await asyncio.gather(*closing)
    pacing.cancel()
    for _, writer, _ in opened:
        writer.close()
    assert len(waited) == 50
    assert min(waited) > HEADER_TIMEOUT * 0.8
    assert max(waited) < HEADER_TIMEOUT + 3.0


async def test_a_kept_alive_connection_is_closed_when_idle_or_when_its_next_head_is_slow(
    pit: str,
) -> None:
    port = int(pit.rsplit(":", 1)[1])
    request = b"GET /healthz HTTP/1.1\r\nHost: pit\r\n\r\n"
    idle_reader, idle = await asyncio.open_connection("127.0.0.1", port)
    slow_reader, slow = await asyncio.open_connection("127.0.0.1", port)
    answered = {}
    for reader, writer in ((idle_reader, idle), (slow_reader, slow)):
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        await reader.readexactly(length)
        answered[writer] = time.monotonic()
    slow.write(b"GET /healthz HTTP/1.1\r\nHost: pit\r\n")  # the next head, never finished

    async def trickle() -> None:
        while not slow.is_closing():
            slow.write(b"X")
            await asyncio.sleep(0.2)  # the slow client's pace, under the keep-alive timeout

    pacing = asyncio.create_task(trickle())
    idle_after = await closed_after(idle_reader, answered[idle])
    slow_after = await closed_after(slow_reader, answered[slow])
    pacing.cancel()
    for writer in (idle, slow):
        writer.close()
    assert KEEPALIVE * 0.8 < idle_after < KEEPALIVE + 3.0
    assert HEADER_TIMEOUT * 0.8 < slow_after < HEADER_TIMEOUT + 3.0
