"""Two pit processes on one store give the same answers, whichever serves a request: the
lock-out, the HTTP Basic decision, sessions and their CSRF tokens, devices' health and alarms
are the store's, on SQLite (one file) and on PostgreSQL. Each pit here is what ``tablectl pit
run`` makes of a process: its app on a store worker of its own and its ingest on another."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from controller.mqtt import Message, Topic
from controller.pit.config import PitConfig
from controller.pit.ingest import Ingest
from controller.pit.live import StreamLimits
from controller.pit.lockout import LockOut
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.users import SESSION_COOKIE, add_user, csrf_token
from controller.pit.web.app import create_app
from controller.pit.web.deps import PitWeb
from controller.pit.worker import StoreWorker
from tests.pit.test_live import Stream
from tests.pit.test_store import envelope
from tests.pit.web import PASSWORD, basic, serve

HOME, ELSEWHERE = "10.0.0.1", "10.0.0.2"
NEW_PASSWORD = "another long password"
PREFIX = "tables"


@dataclass
class Pit:
    """One pit process: its app, its store reader, its ingest."""

    name: str
    app: FastAPI
    reader: StoreWorker
    ingest: Ingest
    mid: int = 0

    @property
    def web(self) -> PitWeb:
        web: PitWeb = self.app.state.pit
        return web

    def client(self, address: str = HOME) -> httpx.AsyncClient:
        """A client of this pit from ``address``."""
        transport = httpx.ASGITransport(app=self.app, client=(address, 40000))
        return httpx.AsyncClient(transport=transport, base_url=f"http://{self.name}")

    async def take(self, topic: str, body: dict[str, Any] | None) -> None:
        """A message as the broker delivers it to this process, then its ingest's commit."""
        self.mid += 1
        payload = b"" if body is None else json.dumps(body).encode()
        self.ingest.take(Message(Topic(f"{PREFIX}/{topic}"), payload, 0, False, self.mid, None))
        await self.ingest.flush()


@asynccontextmanager
async def pit(
    url: str, name: str, clock: Callable[[], float] = time.time, attempts: int = 5
) -> AsyncIterator[Pit]:
    config = PitConfig(
        pit={"id": name, "confirm": False},
        store={"url": url},
        broker={"host": "127.0.0.1", "port": 1883, "prefix": PREFIX},
    )
    reader, writer = StoreWorker(url, "api"), StoreWorker(url, "ingest")
    await reader.open()
    await writer.open()
    lockout = LockOut(attempts=attempts, minutes=15.0)
    app = create_app(reader, PitMetrics(name), pit_id=name, lockout=lockout, clock=clock)
    try:
        yield Pit(name, app, reader, Ingest(config, writer, PitMetrics(name)))
    finally:
        await writer.close()
        await reader.close()


def with_users(url: str) -> str:
    store = Store(url)
    store.migrate()
    add_user(store, "ann", ["floor"], PASSWORD)
    add_user(store, "bob", ["floor"], PASSWORD)
    store.close()
    return url


WRONG = {"username": "ann", "password": "not hers"}
RIGHT = {"username": "ann", "password": PASSWORD}


async def test_wrong_passwords_through_one_pit_lock_the_address_out_of_the_other(
    store_url: str,
) -> None:
    url = with_users(store_url)
    now = [1000.0]
    async with (
        pit(url, "pit-1", lambda: now[0]) as one,
        pit(url, "pit-2", lambda: now[0]) as two,
        one.client() as on_one,
        two.client() as on_two,
        two.client(ELSEWHERE) as elsewhere,
    ):
        # pit-2 has checked ann's HTTP Basic password already: it need not run argon2 again
        assert (await on_two.get("/api/me", auth=("ann", PASSWORD))).status_code == 200
        assert len(two.web.proofs) == 1
        for _ in range(5):
            assert (await on_one.post("/login", data=WRONG)).status_code == 401
        # the next request from that address is refused by every pit, whatever the password
        for answer in (
            await on_two.get("/api/me", auth=("ann", PASSWORD)),
            await on_two.post("/login", data=RIGHT),
            await on_one.get("/api/me", auth=("ann", PASSWORD)),
        ):
            assert answer.status_code == 429
            assert answer.headers["retry-after"] == "1"
        # another address is not slowed, nor another user
        assert (await elsewhere.get("/api/me", auth=("ann", PASSWORD))).status_code == 200
        assert (await on_two.get("/api/me", auth=("bob", PASSWORD))).status_code == 200
        # once the wait is over, the right password (known to pit-2) clears the count
        now[0] += 1.0
        assert (await on_two.get("/api/me", auth=("ann", PASSWORD))).status_code == 200
    store = Store(url)
    assert [(u, a) for u, a, _, _ in store.login_failures()] == []
    store.close()


async def test_a_password_changed_or_a_user_removed_through_one_pit_is_refused_by_the_other(
    store_url: str,
) -> None:
    url = with_users(store_url)
    async with (
        pit(url, "pit-1") as one,
        pit(url, "pit-2") as two,
        two.client() as on_two,
    ):
        me = await on_two.get("/api/me", auth=("ann", PASSWORD))
        assert (me.status_code, me.json()["roles"]) == (200, ["floor"])
        await one.reader.call(add_user, "ann", ["floor", "surveillance"], NEW_PASSWORD)
        # the very next request: the old password is wrong, the new one right, the new roles
        assert (await on_two.get("/api/me", auth=("ann", PASSWORD))).status_code == 401
        for _ in range(2):  # checked once, then known
            me = await on_two.get("/api/me", auth=("ann", NEW_PASSWORD))
            assert (me.status_code, me.json()["roles"]) == (200, ["floor", "surveillance"])
        assert await one.reader.call(Store.remove_user, "ann", time.time()) == 0
        assert (await on_two.get("/api/me", auth=("ann", NEW_PASSWORD))).status_code == 401


async def test_a_basic_live_stream_ends_when_its_password_is_changed_elsewhere(
    store_url: str,
) -> None:
    url = with_users(store_url)
    async with serve(url, streams=StreamLimits(recheck=0.1)) as served:
        stream = await Stream.open(served.port, "/api/live/floor", basic("ann"))
        await stream.read_until(b"event: replace")
        other = Store(url)  # another pit process's connection
        add_user(other, "ann", ["floor"], NEW_PASSWORD)
        other.close()
        await stream.read_until(b"event: gone", timeout=5)
        stream.close()


async def test_a_session_made_on_one_pit_holds_on_the_other_until_a_log_out_on_either(
    store_url: str,
) -> None:
    url = with_users(store_url)
    async with (
        pit(url, "pit-1") as one,
        pit(url, "pit-2") as two,
        one.client() as on_one,
        two.client() as on_two,
    ):
        for made, ended in ((on_one, on_two), (on_two, on_one)):
            login = await made.post("/login", data=RIGHT)
            assert login.status_code == 200
            token = login.cookies[SESSION_COOKIE]
            made.cookies.clear()
            cookie = {"Cookie": f"{SESSION_COOKIE}={token}"}
            for client in (on_one, on_two):
                me = await client.get("/api/me", headers=cookie)
                assert (me.status_code, me.json()["username"]) == (200, "ann")
            # the session's CSRF token is the same everywhere: a forged one is refused
            forged = await ended.post("/logout", headers={**cookie, "X-CSRF-Token": "forged"})
            assert forged.status_code == 403
            out = await ended.post("/logout", headers={**cookie, "X-CSRF-Token": csrf_token(token)})
            assert out.status_code == 303
            for client in (on_one, on_two):
                assert (await client.get("/api/me", headers=cookie)).status_code == 401


def device(health: str, second: int, detail: str = "") -> dict[str, Any]:
    return {
        "device": "reader",
        "health": health,
        "approved": True,
        "detail": detail or health,
        "ts": f"2026-01-01T00:00:{second:02d}.000Z",
    }


async def test_devices_health_and_alarms_taken_by_one_pit_are_shown_by_the_other(
    store_url: str,
) -> None:
    url = with_users(store_url)
    async with (
        pit(url, "pit-1") as one,
        pit(url, "pit-2") as two,
        one.client() as on_one,
        two.client() as on_two,
    ):
        auth = ("ann", PASSWORD)
        await one.take("T1/status", {"state": "online", "bdseq": 1})

        async def shown() -> tuple[dict[str, Any], str, str]:
            # pit-2's pages are computed again when its live board moves: what wakes it on
            # another process's commit is not what this test is about
            two.web.board.touch()
            table = (await on_two.get("/api/tables/T1", auth=auth)).json()
            floor = (await on_two.get("/", auth=auth)).text
            alarms = (await on_two.get("/alarms", auth=auth)).text
            return table["devices"], floor, alarms

        # every process takes every device message; here pit-2 takes each after pit-1
        await one.take("T1/devices/reader", device("failed", 2, "no answer from the reader"))
        devices, floor, alarms = await shown()
        assert devices == {"reader": device("failed", 2, "no answer from the reader")}
        assert "no answer from the reader" in floor
        assert "no answer from the reader" in alarms
        await one.take("T1/devices/reader", device("online", 3))
        await two.take("T1/devices/reader", device("failed", 2, "no answer from the reader"))
        devices, floor, alarms = await shown()  # pit-2's late message changed nothing
        assert devices == {"reader": device("online", 3)}
        assert "no answer from the reader" not in floor + alarms
        await two.take("T1/devices/reader", device("online", 3))
        await one.take("T1/devices/reader", None)  # the retained message cleared
        assert (await shown())[0] == {}
        await two.take("T1/devices/reader", None)
        await two.take("T1/devices/reader", device("stale", 4))
        assert (await shown())[0] == {"reader": device("stale", 4)}

        # an alarm stored by pit-1, acknowledged through pit-2, shown acknowledged by pit-1
        alarm = envelope(7, "integrity.alarm", data={"reason": "foreign card"}, severity="critical")
        await one.take("T1/events", alarm)
        login = await on_two.post("/login", data=RIGHT)
        token = login.cookies[SESSION_COOKIE]
        ack = await on_two.post("/api/alarms/T1/e1/7/ack", data={"csrf": csrf_token(token)})
        assert ack.status_code == 303
        (acked,) = (await on_one.get("/api/alarms", auth=auth)).json()
        assert (acked["reason"], acked["acked_by"]) == ("foreign card", "ann")


async def test_wrong_passwords_sent_at_once_to_both_pits_are_every_one_counted(
    store_url: str,
) -> None:
    url = with_users(store_url)
    now = 1000.0
    async with (
        pit(url, "pit-1", lambda: now) as one,
        pit(url, "pit-2", lambda: now) as two,
        one.client() as on_one,
        two.client() as on_two,
    ):
        answers = await asyncio.gather(
            *(client.post("/login", data=WRONG) for _ in range(10) for client in (on_one, on_two))
        )
    # exactly the free attempts had their password checked; every other one waits
    codes = sorted(a.status_code for a in answers)
    assert codes == [401] * 5 + [429] * 15
    store = Store(url)
    assert [(u, a, n) for u, a, n, _ in store.login_failures()] == [("ann", HOME, 5)]
    store.close()


@pytest.mark.parametrize("attempts", [5, 1_000_000])
def test_attempts_counted_on_many_connections_at_once_are_never_lost(
    store_url: str, attempts: int
) -> None:
    url = with_users(store_url)
    threads, each = 8, 25
    policy = LockOut(attempts=attempts, minutes=15.0)
    start = threading.Barrier(threads)
    waits: list[float] = []
    lock = threading.Lock()

    def guess() -> None:
        store = Store(url)  # a connection of its own, as each pit process has
        try:
            start.wait()
            mine = [store.login_attempt("ann", HOME, 1000.0, policy) for _ in range(each)]
        finally:
            store.close()
        with lock:
            waits.extend(mine)

    running = [threading.Thread(target=guess) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    allowed = sum(1 for w in waits if w == 0)
    store = Store(url)
    ((_, _, counted, _),) = store.login_failures()
    store.close()
    if attempts == 5:  # the free attempts, then every other one waits (and is not counted)
        assert (allowed, counted) == (5, 5)
    else:
        assert (allowed, counted) == (threads * each, threads * each)
