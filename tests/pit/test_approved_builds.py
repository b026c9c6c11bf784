"""The approved builds (controller/pit/approved_builds.py): a table running any other build, a
development checkout or a build it does not name gets the build.unapproved alarm, on the API
and the console's pages; a list that cannot be used is a config error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controller.config import ConfigError
from controller.pit.approved_builds import (
    UNAPPROVED,
    ApprovedBuildsError,
    load_approved_builds,
)
from controller.pit.config import load_pit_config
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.users import add_user
from controller.pit.web.app import create_app
from controller.pit.worker import StoreWorker

APPROVED = "a" * 64
OTHER = "b" * 64
LIST = f'[[build]]\nversion = "0.1.0"\nrecord_sha256 = "{APPROVED}"\nnote = "lab letter 117"\n'
PASSWORD = "a long enough password"


def build(digest: str | None, editable: bool = False) -> dict[str, Any]:
    return {"version": "0.1.0", "record_sha256": digest, "editable": editable}


@pytest.fixture
async def floor(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    url = f"sqlite:///{tmp_path / 'pit.sqlite'}"
    store = Store(url)
    store.migrate()
    add_user(store, "ann", ["floor"], PASSWORD)
    births = {
        "T1": build(APPROVED),
        "T2": build(OTHER),
        "T3": build(APPROVED, editable=True),
        "T4": None,
        "T5": {**build(APPROVED), "modified": 2},
        "T6": {**build(APPROVED), "modified": 0},
    }
    store.record_statuses(
        [
            (table, {"state": "online", "bdseq": 1, "ts": "t", "version": "0.1.0", "build": b})
            for table, b in births.items()
        ],
        1.0,
    )
    store.close()
    (tmp_path / "approved-builds.toml").write_text(LIST)
    approved = load_approved_builds(tmp_path / "approved-builds.toml")
    worker = StoreWorker(url, "api")
    await worker.open()
    app = create_app(worker, PitMetrics("p"), pit_id="p", approved=approved)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://pit") as client:
        yield client
    await worker.close()


async def test_a_table_running_a_build_not_approved_has_the_alarm_on_the_api(
    floor: httpx.AsyncClient,
) -> None:
    tables = (await floor.get("/api/tables", auth=("ann", PASSWORD))).json()
    flagged = {
        t["table_id"]: [a["detail"] for a in t["alarms"] if a["alarm"] == UNAPPROVED]
        for t in tables
    }
    assert flagged["T1"] == []
    assert flagged["T2"] == [f"build {OTHER[:16]}… (0.1.0) is not on the approved list"]
    assert flagged["T3"] == ["a development checkout of 0.1.0, not an installed wheel"]
    assert flagged["T4"] == ["its birth names no build (a tablectl older than build identities)"]
    one = (await floor.get("/api/tables/T2", auth=("ann", PASSWORD))).json()
    assert one["build"] == build(OTHER)
    assert [a["alarm"] for a in one["alarms"]] == [UNAPPROVED]


async def test_the_floor_map_and_the_alarms_page_name_the_tables_running_a_build_not_approved(
    floor: httpx.AsyncClient,
) -> None:
    tiles = (await floor.get("/", auth=("ann", PASSWORD))).text
    assert tiles.count(UNAPPROVED) >= 4  # T2 to T5 on the floor map; T1 and T6 run approved ones
    page = (await floor.get("/alarms", auth=("ann", PASSWORD))).text
    assert UNAPPROVED in page
    assert "is not on the approved list" in page
    assert "a development checkout of 0.1.0" in page


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[[build]]\nversion = "0.1.0"\n', "record_sha256 is the 64 hex digits"),
        (f'[[build]]\nversion = ""\nrecord_sha256 = "{APPROVED}"\n', "version is a non-empty"),
        (f'[[build]]\nversion = "1"\nrecord_sha256 = "{APPROVED.upper()}"\n', "64 hex digits"),
        (f'[[build]]\nversion = "1"\nrecord_sha256 = "{APPROVED}"\nwho = "x"\n', "optional note"),
        ('build = "0.1.0"\n', "a list of [[build]] entries"),
        ("[[device]]\n", "a list of [[build]] entries"),
        ("[[build]\n", "not valid TOML"),
    ],
)
def test_a_list_not_of_its_shape_is_refused_naming_why(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "approved-builds.toml"
    path.write_text(text)
    with pytest.raises(ApprovedBuildsError, match=r"approved-builds\.toml") as raised:
        load_approved_builds(path)
    assert problem in str(raised.value)


def test_the_pit_config_names_the_list_relative_to_itself_and_checks_it(tmp_path: Path) -> None:
    config = tmp_path / "pit.toml"
    config.write_text('[pit]\nid = "p"\napproved_builds = "approved-builds.toml"\n')
    with pytest.raises(ConfigError, match=r"pit\.approved_builds: .* cannot be read"):
        load_pit_config(config)
    (tmp_path / "approved-builds.toml").write_text(LIST)
    assert load_pit_config(config).pit.approved_builds == tmp_path / "approved-builds.toml"
    approved = load_approved_builds(tmp_path / "approved-builds.toml")
    assert approved.alarm_for(build(APPROVED)) is None
    assert approved.builds[APPROVED].note == "lab letter 117"
