"""The pit's HTTP API in process: who may read what, and what it answers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from controller.cli import main
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.users import SESSION_COOKIE, csrf_token
from controller.pit.web.app import create_app
from controller.pit.worker import StoreWorker
from tests.pit.test_store import envelope, event_in

PASSWORD = "a long enough password"


@pytest.fixture
async def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    url = f"sqlite:///{tmp_path / 'pit.sqlite'}"
    config = tmp_path / "pit.toml"
    config.write_text(f'[pit]\nid = "p"\n[store]\nurl = "{url}"\n')
    for name, roles in (("ann", ["floor"]), ("sam", ["surveillance"])):
        monkeypatch.setattr("sys.stdin", _Lines(PASSWORD))
        args = ["pit", "user", "add", name, "--password-stdin", "--config", str(config)]
        for role in roles:
            args += ["--role", role]
        assert main(args) == 0
    store = Store(url)
    secret = envelope(
        2, "deal.group.delivered", data={"seat": 1, "count": 2, "cards": ["As", "Kd"]}
    )
    store.ingest(
        [
            event_in(
                envelope(
                    1,
                    "hand.started",
                    data={
                        "button": 1,
                        "seats": [1, 2],
                        "blinds": [1, 2],
                        "ante": 0,
                        "stacks": {"1": 100, "2": 100},
                    },
                )
            ),
            event_in(envelope(2, "deal.group.delivered", data={"seat": 1, "count": 2})),
            event_in(secret, "secure"),
        ]
    )
    store.close()
    worker = StoreWorker(url, "api")
    await worker.open()
    # the pit's clock stands still: the lock-out's first wait lasts one second of it, which the
    # requests of a busy machine outlived (the right password after five wrong ones got in)
    now = time.time()
    app = create_app(worker, PitMetrics("p"), pit_id="p", clock=lambda: now)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://pit") as test_client:
        yield test_client
    await worker.close()


class _Lines:
    def __init__(self, text: str) -> None:
        self.text = text + "\n"

    def readline(self) -> str:
        return self.text


async def test_reading_needs_a_user_and_the_secure_view_surveillance(
    client: httpx.AsyncClient,
) -> None:
    assert (await client.get("/healthz")).json()["status"] == "ok"
    assert (await client.get("/api/tables")).status_code == 401
    assert (await client.get("/api/tables", auth=("ann", "wrong password"))).status_code == 401
    tables = (await client.get("/api/tables", auth=("ann", PASSWORD))).json()
    assert [(t["table_id"], t["last_seq"]) for t in tables] == [("T1", 2)]
    public = (await client.get("/api/tables/T1/events", auth=("ann", PASSWORD))).json()
    assert [e["seq"] for e in public] == [1, 2]
    assert "cards" not in public[1]["data"]
    refused = await client.get("/api/tables/T1/events?stream=secure", auth=("ann", PASSWORD))
    assert refused.status_code == 403
    secure = (
        await client.get("/api/tables/T1/events?stream=secure", auth=("sam", PASSWORD))
    ).json()
    assert secure[0]["data"]["cards"] == ["As", "Kd"]
    assert (await client.get("/api/tables/T9/events", auth=("ann", PASSWORD))).status_code == 404


async def test_login_sets_a_session_cookie(client: httpx.AsyncClient) -> None:
    refused = await client.post("/login", data={"username": "ann", "password": "nope nope"})
    assert refused.status_code == 401
    answer = await client.post("/login", data={"username": "ann", "password": PASSWORD})
    assert answer.status_code == 200
    assert answer.json() == {"username": "ann", "roles": ["floor"]}
    assert SESSION_COOKIE in answer.cookies
    assert (await client.get("/api/me")).json()["username"] == "ann"
    token = csrf_token(answer.cookies[SESSION_COOKIE])
    forged = await client.post("/api/holds/T1-00001-h1/confirm", data={"csrf": "0" * 40})
    assert forged.status_code == 403
    assert (await client.post("/api/holds/T1-00001-h1/confirm")).status_code == 403
    unknown = await client.post("/api/holds/T1-00001-h1/confirm", headers={"X-CSRF-Token": token})
    assert unknown.status_code == 404
    client.cookies.clear()
    assert (await client.get("/api/me")).status_code == 401


async def test_a_user_is_locked_out_after_wrong_passwords_even_with_the_right_one(
    client: httpx.AsyncClient,
) -> None:
    for _ in range(5):
        refused = await client.post("/login", data={"username": "sam", "password": "wrong one"})
        assert refused.status_code == 401
    locked = await client.post("/login", data={"username": "sam", "password": PASSWORD})
    assert locked.status_code == 429
    assert "too many wrong passwords from this address" in locked.json()["detail"]
    assert (await client.get("/api/me", auth=("sam", PASSWORD))).status_code == 429
    other = await client.post("/login", data={"username": "ann", "password": PASSWORD})
    assert other.status_code == 200


async def test_pages_send_a_browser_without_a_login_to_the_login_page(
    client: httpx.AsyncClient,
) -> None:
    for path in ("/", "/holds", "/tables/T1", "/hands", "/alarms"):
        answer = await client.get(path)
        assert answer.status_code == 303, path
        assert answer.headers["location"] == f"/login?next={path}"
    assert (await client.get("/api/live/floor")).status_code == 401
    assert "Log in" in (await client.get("/login?next=/holds")).text
    form = {"username": "ann", "password": PASSWORD, "next": "/holds"}
    answer = await client.post("/login", data=form)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/holds"
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    for path in ("/", "/holds", "/tables/T1", "/hands", "/hands?rule=SEAT-COUNT", "/alarms"):
        page = await client.get(path)
        assert page.status_code == 200, (path, page.text[:2000])
        assert "<main" in page.text
        assert page.headers["content-security-policy"].startswith("default-src 'self'")
    bad = await client.post("/login", data={**form, "next": "//elsewhere.example/"})
    assert bad.headers["location"] == "/"


async def test_a_hand_not_completed_has_no_phh_and_times_are_checked(
    client: httpx.AsyncClient,
) -> None:
    auth = ("ann", PASSWORD)
    hands = (await client.get("/api/hands", auth=auth)).json()
    assert [h["hand_id"] for h in hands] == ["T1-00001"]
    house = ("rake", "rake_pots", "jackpot", "rake_waived", "time_collected", "straddles")
    assert {k: hands[0][k] for k in (*house, "ante_seat", "runouts")} == {
        **dict.fromkeys(house),
        "ante_seat": None,
        "runouts": 1,
    }
    assert (await client.get("/api/hands/T1-00001/phh", auth=auth)).status_code == 404
    assert (await client.get("/api/hands?since=yesterday", auth=auth)).status_code == 422
    later = (await client.get("/api/hands?since=2026-01-02T00:00:00%2B01:00", auth=auth)).json()
    assert later == []
    document = (await client.get("/openapi.json")).json()
    assert {"/api/tables", "/api/holds", "/api/hands", "/healthz", "/login"} <= set(
        document["paths"]
    )
    metrics = await client.get("/metrics")
    assert "tablectl_pit_events_stored_total" in metrics.text


async def test_an_alarm_is_acknowledged_by_name_from_the_alarms_page(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'pit.sqlite'}")
    alarm = envelope(7, "integrity.alarm", data={"reason": "foreign card"}, severity="critical")
    store.ingest([event_in(alarm)])
    store.close()
    login = await client.post("/login", data={"username": "ann", "password": PASSWORD})
    token = csrf_token(login.cookies[SESSION_COOKIE])
    page = await client.get("/alarms")
    assert "foreign card" in page.text
    assert "Acknowledge" in page.text
    ack = "/api/alarms/T1/e1/7/ack"
    assert (await client.post(ack, data={"csrf": "forged"})).status_code == 403
    done = await client.post(ack, data={"csrf": token})
    assert (done.status_code, done.headers["location"]) == (303, "/alarms")
    assert (await client.post(ack, data={"csrf": token})).status_code == 409
    assert (await client.post("/api/alarms/T1/e1/8/ack", data={"csrf": token})).status_code == 404
    (acked,) = (await client.get("/api/alarms")).json()
    assert acked["acked_by"] == "ann"
    assert "✓ ann" in (await client.get("/alarms")).text
