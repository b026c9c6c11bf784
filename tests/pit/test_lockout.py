"""Lock-out: wrong passwords counted per (user, client address) in the store, shared by every pit
process of it, each further try from that address waiting longer, never another address's."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from controller.pit.lockout import LockOut
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.users import add_user
from controller.pit.web.app import create_app
from controller.pit.worker import StoreWorker
from tests.pit.web import serve

PASSWORD = "a long enough password"
A, B = "10.0.0.1", "10.0.0.2"


def test_the_wait_doubles_from_a_second_up_to_the_longest() -> None:
    policy = LockOut(attempts=5, minutes=1.0)
    assert [policy.delay(n) for n in range(1, 12)] == [0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 60]
    assert policy.delay(10_000) == 60


def test_counts_are_per_user_and_address_and_the_right_password_clears_one(store: Store) -> None:
    policy = LockOut(attempts=3, minutes=0.1, forget=100.0, keep=4)
    t = 1000.0
    assert [store.login_attempt("ann", A, t, policy) for _ in range(3)] == [0, 0, 0]
    assert store.login_attempt("ann", A, t + 0.5, policy) == pytest.approx(0.5)  # refused
    assert store.login_attempt("ann", B, t + 0.5, policy) == 0  # another address
    assert store.login_attempt("bob", A, t + 0.5, policy) == 0  # another user
    # after each wait one more try, then a longer wait: 1 s, 2 s, 4 s, then the longest (6 s)
    waits = []
    now = t + 1.0
    for _ in range(4):
        assert store.login_attempt("ann", A, now, policy) == 0
        waits.append(store.login_attempt("ann", A, now + 0.01, policy) + 0.01)
        now += waits[-1]
    assert waits == pytest.approx([2.0, 4.0, 6.0, 6.0])
    assert [(u, a, n) for u, a, n, _ in store.login_failures()] == [
        ("ann", A, 7),
        ("ann", B, 1),
        ("bob", A, 1),
    ]
    store.login_succeeded("ann", A)
    assert store.login_attempt("ann", A, now, policy) == 0
    assert store.login_attempt("ann", A, now, policy) == 0  # counting starts again
    # counts quiet for longer than ``forget`` are forgotten; at most ``keep`` are kept
    later = now + 1000
    for i in range(6):
        store.login_attempt("eve", f"10.1.0.{i}", later + i, policy)
    assert [a for _, a, _, _ in store.login_failures()] == [f"10.1.0.{i}" for i in range(2, 6)]


@asynccontextmanager
async def pit_app(
    url: str, clock: Callable[[], float] | None = None
) -> AsyncIterator[Callable[[str], httpx.AsyncClient]]:
    """One pit process's app on ``url``; clients of it from a given address."""
    worker = StoreWorker(url, "api")
    await worker.open()
    lockout = LockOut(attempts=2, minutes=15.0)
    metrics = PitMetrics("p")
    if clock is None:  # the pit's own clock
        app = create_app(worker, metrics, pit_id="p", lockout=lockout)
    else:
        app = create_app(worker, metrics, pit_id="p", lockout=lockout, clock=clock)

    def client(address: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=app, client=(address, 40000))
        return httpx.AsyncClient(transport=transport, base_url="http://pit")

    try:
        yield client
    finally:
        await worker.close()


def with_user(url: str) -> str:
    store = Store(url)
    store.migrate()
    add_user(store, "ann", ["floor"], PASSWORD)
    store.close()
    return url


async def test_wrong_passwords_from_one_address_do_not_stop_the_right_one_from_another(
    tmp_path: Path,
) -> None:
    url = with_user(f"sqlite:///{tmp_path / 'pit.sqlite'}")
    async with pit_app(url) as first, pit_app(url) as second:
        async with first(A) as stranger:
            wrong = {"username": "ann", "password": "not hers"}
            for _ in range(3):
                assert (await stranger.post("/login", data=wrong)).status_code in (401, 429)
        right = {"username": "ann", "password": PASSWORD}
        for app in (first, second):
            async with app(B) as ann:
                assert (await ann.post("/login", data=right)).status_code == 200
                assert (await ann.get("/api/me", auth=("ann", PASSWORD))).status_code == 200


async def test_every_pit_process_of_a_store_sees_the_counts_and_waits_grow(store_url: str) -> None:
    url = with_user(store_url)
    now = [1000.0]
    async with (
        pit_app(url, lambda: now[0]) as first,
        pit_app(url, lambda: now[0]) as second,
        first(A) as one,
        second(A) as other,
    ):
        wrong = {"username": "ann", "password": "not hers"}
        for _ in range(2):
            assert (await one.post("/login", data=wrong)).status_code == 401
        # the other process refuses the same address, whatever the password, over Basic too
        refused = await other.get("/api/me", auth=("ann", PASSWORD))
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "1"  # one second
        now[0] += 1.0
        assert (await other.post("/login", data=wrong)).status_code == 401
        locked = await one.post("/login", data={"username": "ann", "password": PASSWORD})
        assert locked.status_code == 429
        assert "try again in 2 s" in locked.json()["detail"]  # two seconds this time
        now[0] += 2.0
        right = await one.post("/login", data={"username": "ann", "password": PASSWORD})
        assert right.status_code == 200
        # the right password cleared the count: wrong ones are free again for a while
        assert (await other.post("/login", data=wrong)).status_code == 401


@pytest.mark.parametrize("behind_a_proxy", [False, True])
async def test_the_client_address_is_the_one_a_trusted_proxy_names_and_nobody_elses(
    tmp_path: Path, behind_a_proxy: bool
) -> None:
    url = with_user(f"sqlite:///{tmp_path / 'pit.sqlite'}")
    proxies = ("127.0.0.1",) if behind_a_proxy else ()
    policy = LockOut(attempts=2, minutes=15.0)
    now = time.time()  # the pit's clock stands still: the first lock lasts 1 s of it
    async with (
        serve(url, lockout=policy, trusted_proxies=proxies, clock=lambda: now) as pit,
        httpx.AsyncClient(base_url=pit.url) as client,
    ):
        wrong = {"username": "ann", "password": "not hers"}
        right = {"username": "ann", "password": PASSWORD}
        for _ in range(2):
            refused = await client.post("/login", data=wrong, headers={"X-Forwarded-For": A})
            assert refused.status_code == 401
        # a client naming another address: believed only from the proxy listed
        other = await client.post("/login", data=right, headers={"X-Forwarded-For": B})
        assert other.status_code == (200 if behind_a_proxy else 429)
        again = await client.post("/login", data=right, headers={"X-Forwarded-For": A})
        assert again.status_code == 429
    counted = Store(url)
    assert [a for _, a, _, _ in counted.login_failures()] == [A if behind_a_proxy else "127.0.0.1"]
    counted.close()
