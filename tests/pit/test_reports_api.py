"""The reports over HTTP, on the real app served by uvicorn: JSON as the OpenAPI describes it,
RFC 4180 CSV, the roles (the dealers' figures for the floor and surveillance only, no dealer's
name to anyone else), parameters that cannot be used (422 naming them, whoever asks), pages."""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import AsyncIterator
from datetime import UTC
from pathlib import Path

import httpx
import pytest

from controller.pit.config import ReportsSection
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.web.app import create_app
from controller.pit.worker import StoreWorker
from tests.pit.reports_floor import seed
from tests.pit.web import basic, new_store, serving

USERS = {"ann": ["floor"], "sam": ["surveillance"], "pat": ["pit"], "dan": ["dealer"]}
SPAN = "since=2026-01-05&until=2026-01-06"


@contextlib.asynccontextmanager
async def reports_pit(url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The pit's app on ``url`` (floor in UTC, 31 days at most a report), and a client of it."""
    reader = StoreWorker(url, "api")
    await reader.open()
    app = create_app(
        reader,
        PitMetrics("test"),
        pit_id="test",
        time_zone=UTC,
        report_settings=ReportsSection(max_days=31),
    )
    try:
        async with (
            serving(app) as port,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client,
        ):
            yield client
    finally:
        await reader.close()


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    url = new_store(tmp_path, USERS)
    store = Store(url)
    seed(store)
    store.close()
    async with reports_pit(url) as served:
        yield served


def auth(name: str) -> dict[str, str]:
    return {"authorization": basic(name)}


async def test_each_report_as_json_for_the_floor(client: httpx.AsyncClient) -> None:
    listed = (await client.get("/api/reports", headers=auth("ann"))).json()
    assert [r["name"] for r in listed] == ["drop", "rulings", "dealers", "devices", "shufflers"]
    answer = await client.get(f"/api/reports/drop?{SPAN}", headers=auth("ann"))
    assert answer.status_code == 200
    body = answer.json()
    assert (body["report"], body["since"], body["until"], body["zone"], body["group"]) == (
        "drop",
        "2026-01-05T00:00:00.000Z",
        "2026-01-07T00:00:00.000Z",
        "UTC",
        "day",
    )
    assert body["total"]["drop"] == 45
    assert {r["table_id"]: r["drop"] for r in body["tables_total"]} == {"T1": 9, "T2": 28, "T3": 8}
    rulings = (await client.get(f"/api/reports/rulings?{SPAN}", headers=auth("ann"))).json()
    assert rulings["holds_total"] == 4
    assert {r["person"] for r in rulings["rulers"]} == {"Fay", "Eli"}
    dealers = (await client.get(f"/api/reports/dealers?{SPAN}", headers=auth("sam"))).json()
    assert [d["dealer"] for d in dealers["dealers"]] == ["Dana", "Eli", "(no dealer named)"]
    shifts = await client.get(f"/api/reports/devices?{SPAN}&group=shift", headers=auth("ann"))
    assert len(shifts.json()["periods"]) == 7


async def test_csv_by_format_or_accept_with_its_file_name(client: httpx.AsyncClient) -> None:
    by_format = await client.get(f"/api/reports/drop?{SPAN}&format=csv", headers=auth("pat"))
    by_accept = await client.get(
        f"/api/reports/drop?{SPAN}", headers={**auth("pat"), "accept": "text/csv"}
    )
    for answer in (by_format, by_accept):
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "text/csv; charset=utf-8; header=present"
        assert answer.headers["content-disposition"] == (
            'attachment; filename="drop-grid-2026-01-05-2026-01-06.csv"'
        )
    assert by_format.text == by_accept.text
    assert by_format.text.count("\r\n") == 7  # the header and six rows
    rows = list(csv.DictReader(io.StringIO(by_format.text, newline="")))
    assert [(r["table_id"], r["period"], r["drop"]) for r in rows][:2] == [
        ("T1", "2026-01-05", "4"),
        ("T1", "2026-01-06", "5"),
    ]
    holds = await client.get(
        f"/api/reports/rulings?{SPAN}&format=csv&part=holds", headers=auth("pat")
    )
    text = holds.text
    assert text.startswith("table_id,epoch,hand_id,hold,rule,device,raised_ts,resolved_ts,")
    assert "a dealer" in text
    assert "Eli" not in text  # the pit reads no dealer's name
    wrong = await client.get(f"/api/reports/drop?{SPAN}&format=csv&part=x", headers=auth("pat"))
    assert wrong.status_code == 422
    assert wrong.json()["detail"] == "part: 'x' is not one of grid, tables, periods"


async def test_roles_read_what_is_theirs(client: httpx.AsyncClient) -> None:
    """The floor, surveillance and the pit read reports; the dealers' figures are the floor's
    and surveillance's (a 403 and no dealer's name otherwise); a dealer reads none."""
    for name in ("drop", "rulings", "dealers", "devices"):
        refused = await client.get(f"/api/reports/{name}?{SPAN}", headers=auth("dan"))
        assert refused.status_code == 403, name
    assert (await client.get("/api/reports", headers=auth("dan"))).json() == []
    pit = await client.get(f"/api/reports/dealers?{SPAN}", headers=auth("pat"))
    assert pit.status_code == 403
    assert pit.json()["detail"] == "the dealers report is for floor and surveillance"
    assert "Dana" not in pit.text
    listed = (await client.get("/api/reports", headers=auth("pat"))).json()
    assert [r["name"] for r in listed] == ["drop", "rulings", "devices", "shufflers"]
    rulings = await client.get(f"/api/reports/rulings?{SPAN}", headers=auth("pat"))
    assert rulings.status_code == 200
    assert "Eli" not in rulings.text
    assert (await client.get(f"/api/reports/drop?{SPAN}")).status_code == 401


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("since=2026-02-30", "since: '2026-02-30' is neither a date (YYYY-MM-DD) nor a time"),
        ("since=2026-01-01&until=2026-03-01", "a report covers 31 at most ([reports] max_days)"),
        ("tables=T1;DROP", "tables: 'T1;DROP' is not a table id"),
        ("group=week", "group: 'week' is not one of day, shift, month"),
        ("format=xml", "format: 'xml' is not json or csv"),
        ("since=2026-01-06&until=2026-01-05", "until (2026-01-06T00:00:00.000Z) must be after"),
    ],
)
async def test_a_parameter_that_cannot_be_used_is_a_422_naming_it_whoever_asks(
    client: httpx.AsyncClient, query: str, detail: str
) -> None:
    for name in ("ann", "dan"):
        answer = await client.get(f"/api/reports/drop?{query}", headers=auth(name))
        assert answer.status_code == 422
        assert detail in answer.json()["detail"]
    grouped = await client.get("/api/reports/rulings?group=day", headers=auth("ann"))
    assert (
        grouped.json()["detail"] == "group: the rulings report is not grouped by period (got 'day')"
    )


async def test_the_openapi_describes_each_report(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    drop = spec["paths"]["/api/reports/drop"]["get"]
    answers = drop["responses"]["200"]["content"]
    assert answers["application/json"]["schema"] == {"$ref": "#/components/schemas/DropReport"}
    assert "text/csv" in answers
    assert {p["name"] for p in drop["parameters"]} == {
        "since",
        "until",
        "tables",
        "group",
        "format",
        "part",
    }
    schemas = spec["components"]["schemas"]
    for model in ("DropReport", "RulingsReport", "DealersReport", "DevicesReport", "DropRow"):
        assert model in schemas
    assert "hands_per_hour" in schemas["DropRow"]["properties"]


async def test_the_report_pages(client: httpx.AsyncClient) -> None:
    page = await client.get(f"/reports/drop?{SPAN}", headers=auth("ann"))
    assert page.status_code == 200
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    text = page.text
    assert text.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart') == 4  # floor, T1-3
    assert 'href="/api/reports/drop?since=2026-01-05T00%3A00%3A00.000Z' in text
    assert "<script" not in text.split("</head>")[1]  # no script on the page itself
    index = await client.get("/reports", headers=auth("pat"))
    assert 'href="/reports/dealers"' not in index.text
    assert 'href="/reports/drop"' in index.text
    refused = await client.get(f"/reports/dealers?{SPAN}", headers=auth("pat"))
    assert refused.status_code == 403
    assert "Dana" not in refused.text
    assert "is for floor and surveillance" in refused.text
    wrong = await client.get("/reports/drop?since=soon", headers=auth("ann"))
    assert wrong.status_code == 422
    assert "since: &#39;soon&#39; is neither a date" in wrong.text
    assert (await client.get("/reports/nope", headers=auth("ann"))).status_code == 404
    assert (await client.get("/reports", headers=auth("dan"))).status_code == 403
    login = await client.get("/reports/drop", follow_redirects=False)
    assert (login.status_code, login.headers["location"]) == (303, "/login?next=/reports/drop")
