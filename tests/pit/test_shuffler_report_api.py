"""SHF-RAND on the served pit: the ``shufflers`` report as JSON, CSV and its page (a heat map of
card × position), and the audit's alarm on the alarms page and in ``GET /api/tables``."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from controller.pit.reports.audit_rule import Rule
from controller.pit.reports.shuffler_audit import ALARM, audit_round
from controller.pit.store import Store
from tests.pit.test_reports_api import USERS, auth, reports_pit
from tests.pit.test_shuffler_store import START, deal, fair, stuck
from tests.pit.web import new_store

SPAN = "since=2026-03-02&until=2026-03-05"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    url = new_store(tmp_path, USERS)
    store = Store(url)
    deal(store, "T1", fair(300, 21))
    deal(store, "T2", stuck(300, 22), step=timedelta(minutes=10))
    audit_round(store.db, Rule(), START.timestamp())
    store.close()
    async with reports_pit(url) as served:
        yield served


async def test_shf_rand_the_shufflers_report_as_json_and_csv(client: httpx.AsyncClient) -> None:
    answer = await client.get(f"/api/reports/shufflers?{SPAN}", headers=auth("sam"))
    assert answer.status_code == 200
    body = answer.json()
    results = {s["table_id"]: s["result"] for s in body["shufflers"]}
    assert results == {"T1": "passes", "T2": "fails"}
    t2 = next(s for s in body["shufflers"] if s["table_id"] == "T2")
    assert t2["alarm"].startswith("shuffler T2/shuffler: card × position p = ")
    assert body["heat"][0]["table_id"] == "T2"
    assert body["heat"][0]["counts"][7][0] == 300  # the 9c, stuck on top
    checks = await client.get(
        f"/api/reports/shufflers?{SPAN}&format=csv&part=checks", headers=auth("pat")
    )
    rows = list(csv.DictReader(io.StringIO(checks.text)))
    assert [(r["table_id"], r["test"], r["result"]) for r in rows[3:]] == [
        ("T2", "positions", "fails"),
        ("T2", "changes", "fails"),
        ("T2", "suits", "passes"),
    ]
    assert rows[0]["decks"] == "300"
    assert rows[0]["needed"] == "260"
    assert (
        await client.get(f"/api/reports/shufflers?{SPAN}", headers=auth("dan"))
    ).status_code == 403


async def test_shf_rand_the_shufflers_page_draws_the_heat_maps(client: httpx.AsyncClient) -> None:
    page = await client.get(f"/reports/shufflers?{SPAN}", headers=auth("ann"))
    assert page.status_code == 200
    text = page.text
    assert "T2/shuffler: where each card was" in text
    assert text.count('class="cell"') == 2 * 52 * 52  # two shufflers' heat maps
    assert "✕ fails" in text
    assert "✓ passes" in text
    assert "🔔 shuffler T2/shuffler" in text


async def test_shf_rand_the_audits_alarm_is_on_the_alarms_page_and_the_api(
    client: httpx.AsyncClient,
) -> None:
    tables = {
        t["table_id"]: t for t in (await client.get("/api/tables", headers=auth("ann"))).json()
    }
    (alarm,) = tables["T2"]["alarms"]
    assert alarm["alarm"] == ALARM
    assert alarm["device"] == "shuffler"
    assert tables["T1"]["alarms"] == []
    page = await client.get("/alarms", headers=auth("ann"))
    assert "shuffler.randomness (shuffler T2/shuffler: card × position p = " in page.text
