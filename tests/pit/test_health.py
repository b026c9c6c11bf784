"""The console says when the pit has lost its broker or its store, and since when; "live" means
live. A real pit service, a real mosquitto stopped and started again, a real PostgreSQL whose
database stops taking connections and takes them again; a browser's live stream is told each
change without a reload."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from controller.pit.config import PitConfig
from controller.pit.health import PitHealth
from controller.pit.service import PitService
from controller.pit.store import Store
from controller.pit.users import add_user
from tests.integration.broker import Broker, free_port, mosquitto_available
from tests.pit.test_live import Stream, session
from tests.pit.web import PASSWORD, new_store
from tests.postgres import PostgresServer
from tests.waiting import until_async

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.broker,
    pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed"),
]

BANNER = re.compile(
    r'<div id="pit-health"[^>]*>\s*<p class="lost-part" data-part="(?P<part>\w+)"><strong>'
    r"✕ The pit has been without (?P<what>[^<]+) since "
    r'<time datetime="(?P<since>[^"]+)">[^<]+</time></strong> '
    r'\(<time data-age datetime="[^"]+">(?P<ago>[^<]+) ago</time>\)'
)
INDICATOR = re.compile(r'<span id="live-state"[^>]*>([^<]*)</span>')


@dataclass
class Pit:
    """A running pit service, its broker, and a logged-in client of its console."""

    service: PitService
    broker: Broker
    base: str
    client: httpx.AsyncClient
    cookie: str

    async def health(self) -> dict[str, object]:
        answer = await self.client.get("/healthz")
        body: dict[str, object] = answer.json()
        return body


@contextlib.asynccontextmanager
async def running_pit(directory: Path, store_url: str) -> AsyncIterator[Pit]:
    """A pit service on ``store_url`` (which has the user ann) and its own mosquitto, healthy."""
    broker = Broker(directory)
    broker.start()
    port = free_port()
    config = PitConfig(
        pit={"id": "health", "confirm": False},
        broker={
            "host": "127.0.0.1",
            "port": broker.port,
            "reconnect_min": 0.05,
            "reconnect_max": 0.3,
            "keepalive": 5,
        },
        store={"url": store_url},
        web={"listen": f"127.0.0.1:{port}"},
    )
    service = PitService(config)
    running = asyncio.create_task(service.run())
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base) as client:

            async def healthy() -> bool:
                assert not running.done(), running
                with contextlib.suppress(httpx.HTTPError):
                    return (await client.get("/healthz")).status_code == 200
                return False

            await until_async(healthy, 20, "the pit to be healthy")
            cookie = await session(base, "ann")
            client.cookies.set("tablectl_pit_session", cookie.split("=", 1)[1])
            yield Pit(service, broker, base, client, cookie)
    finally:
        service.stop_requested.set()
        assert await running == 0
        broker.stop()


async def told(stream: Stream, live: bool, timeout: float = 10.0) -> dict[str, object]:
    """Read the stream until its last ``health`` event says ``live``; that event."""
    async with asyncio.timeout(timeout):
        while True:
            events = health_events(stream)
            if events and events[-1]["live"] is live:
                return events[-1]
            chunk = await stream.reader.read(65536)
            if not chunk:
                raise ConnectionError(f"the stream ended: {stream.data[-300:]!r}")
            stream.data += chunk


@dataclass
class BrowserPage:
    """Debian's chromium (Playwright, never a downloaded browser) on the floor map, logged in."""

    playwright: Any
    browser: Any
    page: Any

    @classmethod
    async def open(cls, base: str) -> BrowserPage | None:
        if not CHROMIUM.exists():
            return None
        try:
            from playwright.async_api import async_playwright
        except ImportError:
            return None
        playwright = await async_playwright().start()
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"]
        )
        page = await browser.new_page()
        await page.goto(f"{base}/")
        await page.get_by_label("User name").fill("ann")
        await page.get_by_label("Password").fill(PASSWORD)
        await page.get_by_role("button", name="Log in").click()
        await page.wait_for_url(f"{base}/")
        return cls(playwright, browser, page)

    async def shows(self, text: str) -> None:
        """Wait until the live indicator says ``text`` (Playwright's own condition wait)."""
        from playwright.async_api import expect

        await expect(self.page.locator("#live-state")).to_have_text(text, timeout=10_000)

    async def close(self) -> None:
        await self.browser.close()
        await self.playwright.stop()


def banner(page: str) -> dict[str, str] | None:
    """The first lost part the page's banner names (None: the banner is hidden)."""
    if re.search(r'<div id="pit-health"[^>]* hidden>', page):
        return None
    found = BANNER.search(page)
    assert found is not None, page[:3000]
    return found.groupdict()


def indicator(page: str) -> str:
    found = INDICATOR.search(page)
    assert found is not None, page[:2000]
    return found.group(1)


def health_events(stream: Stream) -> list[dict[str, object]]:
    """The ``health`` events the stream received, in order."""
    text = stream.data.decode()
    return [json.loads(data) for data in re.findall(r"event: health\ndata: (.*)\n\n", text)]


def seconds_ago(since: str) -> float:
    return time.time() - datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp()


async def test_a_lost_broker_is_named_with_its_time_on_every_page_and_live_returns_with_it(
    tmp_path: Path,
) -> None:
    url = new_store(tmp_path, {"ann": ["floor"]})
    async with running_pit(tmp_path, url) as pit:
        page = (await pit.client.get("/")).text
        assert banner(page) is None
        assert indicator(page) == "○ connecting"  # the script shows ● live once its stream opens
        stream = await Stream.open(int(pit.base.rsplit(":", 1)[1]), "/api/live/floor", pit.cookie)
        assert (await told(stream, live=True))["indicator"] == ""

        browser = await BrowserPage.open(pit.base)  # None: no chromium here
        if browser is not None:
            await browser.shows("● live")

        lost_at = time.time()
        pit.broker.stop()
        await until_async(lambda: _health_is(pit, broker_connected=False), 10, "/healthz to say it")
        health = await pit.health()
        assert health["status"] == "degraded"
        for path in ("/", "/holds", "/hands", "/alarms", "/login"):
            answer = await pit.client.get(path)
            assert answer.status_code == 200, path
            shown = banner(answer.text)
            assert shown is not None, path
            assert shown["part"] == "broker"
            assert shown["what"] == "the broker"
            # since when: the moment it was lost, as /healthz says it too
            assert -1.0 < seconds_ago(shown["since"]) - (time.time() - lost_at) < 1.0
            assert shown["since"][:19] == str(health["lost"][0]["since"])[:19]  # type: ignore[index]
            if path != "/login":  # the login page has no indicator
                assert indicator(answer.text) == "✕ not live: broker lost", path
                assert "● live" not in answer.text
        # the open page is told without a reload
        if browser is not None:
            await browser.shows("✕ not live: broker lost")
            assert "without the broker since" in await browser.page.inner_text("#pit-health")
        event = await told(stream, live=False)
        assert event["indicator"] == "✕ not live: broker lost"
        assert (banner(str(event["banner"])) or {}).get("part") == "broker"

        pit.broker.start()  # on the same port: the pit connects again by itself
        await until_async(lambda: _health_is(pit, broker_connected=True), 10, "the broker back")
        page = (await pit.client.get("/")).text
        assert banner(page) is None
        assert indicator(page) == "○ connecting"
        assert banner(str((await told(stream, live=True))["banner"])) is None
        stream.close()
        if browser is not None:
            await browser.shows("● live")
            assert not await browser.page.locator("#pit-health").is_visible()
            await browser.close()


async def _health_is(pit: Pit, **expected: object) -> bool:
    health = await pit.health()
    return all(health.get(key) == value for key, value in expected.items())


def set_connections(server: PostgresServer, database: str, allowed: bool) -> None:
    """Let ``database`` take connections or not; not: end those it has (as a PostgreSQL
    restarted or out of reach does to the pit)."""
    with psycopg.connect(server.url(), autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (database,),
            )


async def test_a_lost_store_is_a_503_page_naming_it_open_pages_are_told_and_it_comes_back(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    url = postgres.new_database()
    database = url.rsplit("/", 1)[1]
    store = Store(url)
    store.migrate()
    add_user(store, "ann", ["floor"], PASSWORD)
    store.close()
    async with running_pit(tmp_path, url) as pit:
        stream = await Stream.open(int(pit.base.rsplit(":", 1)[1]), "/api/live/floor", pit.cookie)
        await told(stream, live=True)
        lost_at = time.time()
        set_connections(postgres, database, allowed=False)
        try:
            await until_async(lambda: _health_is(pit, store=False), 10, "/healthz to say it")
            # no page can be read without the store (the login neither): each is a 503 page
            # naming the store and since when, which loads itself again
            for path in ("/", "/tables/T1", "/hands"):
                answer = await pit.client.get(path)
                assert answer.status_code == 503, path
                shown = banner(answer.text)
                assert shown is not None
                assert (shown["part"], shown["what"]) == ("store", "its store (PostgreSQL)")
                assert -1.0 < seconds_ago(shown["since"]) - (time.time() - lost_at) < 2.0
                assert '<meta http-equiv="refresh"' in answer.text
                assert "● live" not in answer.text
            answer = await pit.client.get("/api/tables")
            assert answer.status_code == 503
            assert "the pit's store does not answer since" in answer.json()["detail"]
            # the page already open keeps its stream: told, not dropped
            event = await told(stream, live=False)
            assert event["indicator"] == "✕ not live: store lost"
        finally:
            set_connections(postgres, database, allowed=True)
        # the process connects again by itself: no restart
        await until_async(lambda: _health_is(pit, status="ok"), 10, "the store back")
        assert banner(str((await told(stream, live=True))["banner"])) is None
        page = await pit.client.get("/")
        assert page.status_code == 200
        assert banner(page.text) is None
        assert indicator(page.text) == "○ connecting"
        stream.close()


def test_a_loss_keeps_its_first_time_and_a_broker_dropped_for_the_store_is_the_stores() -> None:
    now = [100.0]
    health = PitHealth(clock=lambda: now[0])
    assert [(p.part, p.since, p.reached) for p in health.lost()] == [("broker", 100.0, False)]
    health.up("broker")
    assert health.live
    now[0] = 110.0
    health.down("broker", "Connection refused")
    now[0] = 120.0
    health.down("broker", "Connection refused")  # tried again meanwhile: still lost since 110
    health.down("store", "server closed the connection unexpectedly\nmore")
    health.down("broker", "dropped", because_of_store=True)
    assert [(p.part, p.since, p.reason) for p in health.lost()] == [
        ("store", 120.0, "server closed the connection unexpectedly")
    ]
    version = health.version
    health.up("store")  # the broker, still down, is shown as itself again
    assert health.version > version
    assert [(p.part, p.since) for p in health.lost()] == [("broker", 110.0)]
    health.up("broker")
    assert health.live
    assert health.lost() == []
