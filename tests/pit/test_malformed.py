"""What a table publishes, of any shape, never breaks the pit: refused with the table named, or
stored in the shape the pages expect; every page and GET route answers (200 or 4xx, never 5xx).

Messages go through the real ingest (routing, parsing, the batch's commit into a real store) and
the pages are requested from the real app on uvicorn, as a logged-in floor supervisor who is also
surveillance (every section: cards, buttons, forms).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.mqtt import Message, Topic
from controller.pit.config import PitConfig
from controller.pit.ingest import Ingest
from controller.pit.live import StreamLimits
from controller.pit.published import (
    MAX_DEPTH,
    RejectedError,
    load,
    load_checked,
    parse_answer,
    parse_device,
)
from controller.pit.service import PitService
from controller.pit.users import csrf_token
from controller.pit.web.app import create_app
from tests.integration.broker import free_port
from tests.pit.test_store import envelope
from tests.pit.web import PASSWORD, new_store, serving

TABLES = ("T1", "T2", "T 3", "T<4>", "Ü5")
PREFIX = "tables"


@dataclass
class Floor:
    """A pit process's ingest, store and web console; a logged-in client of it."""

    ingest: Ingest
    app: Any
    client: httpx.AsyncClient
    mid: int = 0

    async def publish(self, messages: list[tuple[str, bytes]]) -> None:
        """Messages as the broker delivers them, then the ingest's commit."""
        for topic, payload in messages:
            self.mid += 1
            message = Message(Topic(topic), payload, 1, False, self.mid, None)
            self.ingest.take(message)
        await self.ingest.flush()


@pytest.fixture
async def floor(tmp_path: Path) -> AsyncIterator[Floor]:
    url = new_store(tmp_path, {"sam": ["floor", "surveillance"]})
    config = PitConfig(
        pit={"id": "p", "secure": True, "confirm": False},
        store={"url": url},
        broker={"host": "127.0.0.1", "port": free_port()},
    )
    service = PitService(config)  # its ingest, live board and answer handlers, not run
    await service.writer.open()
    await service.scanner.open()
    await service.reader.open()
    app = create_app(
        service.reader,
        service.metrics,
        pit_id="p",
        rulings=service.rulings,
        board=service.board,
        streams=StreamLimits(per_session=1000, per_user=1000, total=1000, interval=0),
    )
    async with (
        serving(app) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
    ):
        login = await client.post("/login", data={"username": "sam", "password": PASSWORD})
        assert login.status_code == 200
        floor = Floor(service.ingest, app, client)
        # one well-formed table and hand, so that every route has something to show
        hand = envelope(1, "hand.started", data={"button": 1, "seats": [1, 2]})
        await floor.publish(
            [
                (f"{PREFIX}/T1/status", json.dumps({"state": "online", "bdseq": 1}).encode()),
                (f"{PREFIX}/T1/events", json.dumps(hand).encode()),
            ]
        )
        yield floor
    for worker in (service.reader, service.scanner, service.writer):
        await worker.close()


# --------------------------------------------------------------------------- what tables send

GOOD_SEQ = 3  # a status's bdseq or a state's seq, made newer than any before when published
SEQS = itertools.count(10)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def maybe(good: Any) -> st.SearchStrategy[Any]:
    """Mostly the right value, sometimes anything."""
    return st.one_of(st.just(good), st.just(good), st.just(good), VALUES)


def fields(
    names: dict[str, Any], required: tuple[str, ...] = ()
) -> st.SearchStrategy[dict[str, Any]]:
    """An object with ``required`` and some of ``names`` (each mostly its good value, sometimes
    anything), and a stray key or two."""
    known = st.fixed_dictionaries(
        {name: maybe(names[name]) for name in required},
        optional={name: maybe(good) for name, good in names.items() if name not in required},
    )
    stray = st.dictionaries(st.text(max_size=6), VALUES, max_size=1)
    return st.tuples(known, stray).map(lambda parts: {**parts[1], **parts[0]})


EVENT_TYPES = (
    "hand.started",
    "hand.completed",
    "hand.hold",
    "hand.resume",
    "pot.awarded",
    "pot.rake.taken",
    "board.runout.started",
    "house.time.collected",
    "betting.action",
    "integrity.alarm",
    "device.status",
    "deal.group.delivered",
    "journal.epoch.started",
    "hand.misdeal",
)
DATA = fields(
    {
        "button": 1,
        "seats": [1, 2],
        "blinds": [1, 2],
        "ante": 0,
        "stacks": {"1": 100},
        "straddles": {"3": 4},
        "pots": [{"amount": 10}],
        "payouts": {"1": 10},
        "rake": 1,
        "jackpot": 1,
        "waived": "no flop",
        "run": 2,
        "total": 5,
        "hold": "h1",
        "rule": "SEAT-COUNT",
        "reason": "a reason",
        "ruling": "misdeal",
        "decision": "misdeal",
        "by": "confirm",
        "seat": 3,
        "blind": "ante",
        "fault": "jam",
        "detail": "d",
        "cards": ["As", "Kd"],
        "previous": "e0",
    }
)


@st.composite
def events(draw: st.DrawFn, table: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(EVENT_TYPES))
    body = envelope(
        draw(st.integers(min_value=1, max_value=40)),
        kind,
        table=table,
        hand=draw(st.sampled_from([f"{table}-00001", None])),
        data=draw(DATA),
        rules=draw(st.lists(st.sampled_from(["SEAT-COUNT", "ANTE-TABLE"]), max_size=2)),
        severity=draw(st.sampled_from(["info", "critical", "hold"])),
    )
    body["by"] = draw(maybe({"person": "ann", "role": "floor"}))
    for name in draw(st.lists(st.sampled_from(sorted(body)), max_size=2)):
        body[name] = draw(VALUES)  # an envelope field of another shape
    return body


STATUS = fields(
    {
        "state": "online",
        "bdseq": GOOD_SEQ,
        "ts": "2026-01-01T00:00:00Z",
        "version": "1",
        "degraded": True,
        "alarms": [{"alarm": "journal.full", "detail": "full", "since": "2026-01-01"}],
    },
    required=("state", "bdseq"),
)
ALARMS = st.lists(
    fields({"alarm": "journal.full", "detail": "d", "since": "s"}) | VALUES, max_size=3
)
STATE = fields(
    {
        "epoch": "e1",
        "seq": GOOD_SEQ,
        "button": 1,
        "blinds": [1, 2],
        "seats": {"1": {"stack": 100, "status": "live", "in_hand": True, "committed": 2}},
        "hand": {
            "hand_id": "T1-00001",
            "phase": "betting",
            "street": "flop",
            "pot": 3,
            "board": ["As"],
            "to_act": 1,
            "holds": [{"rule": "SEAT-COUNT", "ruling": "misdeal"}],
        },
        "last_hand": "T1-00000",
    },
    required=("epoch", "seq", "seats", "hand"),
)
SEATS = st.dictionaries(
    st.sampled_from(["1", "2", "x", "-1"]),
    fields({"stack": 1, "status": "live", "in_hand": True, "committed": 1, "cards": 2}) | VALUES,
    max_size=2,
)
HAND = fields(
    {
        "hand_id": "T1-00001",
        "pot": 1,
        "board": ["As"],
        "to_act": 2,
        "holds": [{"rule": "R", "ruling": "x"}],
        "phase": "p",
    }
)
DEVICE = fields({"health": "failed", "approved": False, "detail": "jam", "device": "reader"})
ANSWER = fields(
    {
        "transaction": "t-1",
        "status": "ok",
        "command": "replay",
        "data": {"missing": [[1, 2]], "last_seq": 4, "sent": 1},
        "error": "e",
    }
)
RAW = st.sampled_from(
    [
        b"1e999999",
        b'{"state": "online", "bdseq": 1e999999}',
        b'{"state": "online", "bdseq": NaN}',
        b"-Infinity",
        b"[" * 3000 + b"]" * 3000,
        b'{"epoch": "e1", "seq": ' + b"9" * 5000 + b"}",
        b'{"state": "online", "bdseq": 1, "version": "\\ud800"}',
        b'{"state": "online", "bdseq": 1, "version": "a\\u0000b"}',
        b"\xff\xfe",
        b"",
        b"{}",
        b"[]",
        b"null",
    ]
)


def encoded(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


@st.composite
def messages(draw: st.DrawFn) -> list[tuple[str, bytes]]:
    out = []
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        table = draw(st.sampled_from(TABLES[:1] * 3 + TABLES))
        head = f"{PREFIX}/{table}"
        kind = draw(
            st.sampled_from(["events", "secure", "replay", "status", "state", "device", "answer"])
        )
        if draw(st.integers(min_value=0, max_value=14)) == 0:
            payload = draw(RAW)
        elif kind in ("events", "secure", "replay"):
            payload = encoded(draw(events(table)))
        elif kind == "status":
            body = draw(STATUS)
            if body.get("bdseq") == GOOD_SEQ:
                body["bdseq"] = next(SEQS)  # newer than what the table said before
            if draw(st.booleans()):
                body["alarms"] = draw(ALARMS)
            payload = encoded(body)
        elif kind == "state":
            body = draw(STATE)
            if body.get("seq") == GOOD_SEQ:
                body["seq"] = next(SEQS)  # newer than the state stored
            if draw(st.booleans()):
                body["seats"] = draw(SEATS)
            if draw(st.booleans()):
                body["hand"] = draw(HAND | VALUES)
            payload = encoded(body)
        elif kind == "device":
            payload = encoded(draw(DEVICE | VALUES))
        else:
            payload = encoded(draw(ANSWER | VALUES))
        topic = {
            "events": f"{head}/events",
            "secure": f"{head}/secure/events",
            "replay": f"{head}/replay/p",
            "status": f"{head}/status",
            "state": f"{head}/state",
            "device": f"{head}/devices/{draw(st.sampled_from(['reader', 'shuffler', 'a b']))}",
            "answer": f"{head}/response/{draw(st.sampled_from(['replay', 'stored', 'confirm']))}",
        }[kind]
        out.append((topic, payload))
    return out


# --------------------------------------------------------------------------- every page

STATIC = (
    "/healthz",
    "/metrics",
    "/openapi.json",
    "/login",
    "/",
    "/holds",
    "/hands",
    "/alarms",
    "/api/me",
    "/api/tables",
    "/api/holds",
    "/api/holds?all=true",
    "/api/hands",
    "/api/alarms",
    "/api/gaps",
    "/api/rejects",
    "/api/archive",
)
PER_TABLE = (
    "/tables/{table}",
    "/api/tables/{table}",
    "/api/tables/{table}/events",
    "/api/tables/{table}/events?stream=secure",
)
PER_HAND = ("/hands/{hand_id}", "/api/hands/{hand_id}", "/api/hands/{hand_id}/phh")
LIVE = ("/api/live/floor", "/api/live/holds", "/api/live/alarms", "/api/live/tables/{table}")


async def every_page(floor: Floor, touched: set[str]) -> set[str]:
    """Request every page and GET route (those of a table and its hands for the tables
    ``touched``, and T1); the route templates requested."""
    client = floor.client
    asked: set[str] = set()

    async def live(template: str, table: str) -> None:
        path = template.format(table=quote(table, safe=""))
        async with client.stream("GET", path) as answer:
            assert answer.status_code < 500, (path, answer.status_code)
            if answer.status_code == 200:
                first = await anext(answer.aiter_raw())
                assert first.startswith(b"retry:"), first[:200]
        asked.add(template)

    async def get(template: str, **params: str) -> httpx.Response:
        path = template.format(**{k: quote(v, safe="") for k, v in params.items()})
        answer = await client.get(path)
        assert answer.status_code < 500, (path, answer.status_code, answer.text[:500])
        asked.add(template.split("?", maxsplit=1)[0])
        return answer

    await asyncio.gather(*(get(path) for path in STATIC))
    shown = touched | {"T1"}
    tables = [t for t in (await get("/api/tables")).json() if t["table_id"] in shown]
    hands = [h for h in (await get("/api/hands")).json() if h["table_id"] in shown]
    await asyncio.gather(
        *(get(path, table=t["table_id"]) for t in tables for path in PER_TABLE),
        *(get(path, hand_id=h["hand_id"]) for h in hands for path in PER_HAND),
        *(live(template, t["table_id"]) for t in tables for template in LIVE[3:]),
        *(live(template, "") for template in LIVE[:3]),
    )
    return asked


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=messages())
async def test_whatever_tables_publish_every_page_and_route_answers(
    floor: Floor, batch: list[tuple[str, bytes]]
) -> None:
    await floor.publish(batch)
    asked = await every_page(floor, {topic.split("/")[1] for topic, _ in batch})
    routes = {
        route.path
        for route in floor.app.routes
        if "GET" in (getattr(route, "methods", None) or ()) and route.path != "/static"
    }
    assert routes <= asked, routes - asked  # every GET route, not only those known when written


# --------------------------------------------------------------------------- the cases found


async def test_a_status_whose_alarms_are_other_objects_is_refused_and_shown_not_a_500(
    floor: Floor,
) -> None:
    status = {"state": "online", "bdseq": 5, "alarms": [{"code": 7}, {"alarm": {"x": 1}}]}
    await floor.publish([(f"{PREFIX}/T2/status", json.dumps(status).encode())])
    page = await floor.client.get("/alarms")
    assert page.status_code == 200
    assert "T2" in page.text
    assert "status: alarms.0.alarm: Field required" in page.text
    (refused,) = (await floor.client.get("/api/rejects?table=T2")).json()
    assert refused["topic"] == f"{PREFIX}/T2/status"
    assert refused["table_id"] == "T2"
    # the floor map counts it; nothing of it was taken as the table's status
    assert "1 message refused" in (await floor.client.get("/")).text
    assert "T2" not in [t["table_id"] for t in (await floor.client.get("/api/tables")).json()]


@pytest.mark.parametrize(
    "number", [b"1e999999", b"-1e999999", b"NaN", b"Infinity", b"-Infinity", b"1E400"]
)
def test_numbers_json_cannot_hold_are_refused(number: bytes) -> None:
    with pytest.raises(RejectedError, match="not JSON"):
        load(b'{"state": "online", "bdseq": 1, "x": [' + number + b"]}")
    with pytest.raises(RejectedError):
        parse_device(b'{"health": "online", "detail": ' + number + b"}")
    with pytest.raises(RejectedError):
        parse_answer(b'{"status": "ok", "data": {"last_seq": ' + number + b"}}", "replay")
    assert math.isfinite(load(b"1e300"))


async def test_an_event_with_a_field_of_the_wrong_type_is_stored_that_field_left_out(
    floor: Floor,
) -> None:
    body = envelope(2, "hand.started", data={"button": "one", "seats": "1 and 2", "stacks": [100]})
    await floor.publish([(f"{PREFIX}/T1/events", json.dumps(body).encode())])
    hands = (await floor.client.get("/api/hands")).json()
    (hand,) = [h for h in hands if h["hand_id"] == "T1-00001"]
    assert (hand["button"], hand["seats"], hand["stacks_before"]) == (None, None, None)
    refused = (await floor.client.get("/api/rejects?table=T1")).json()
    assert "left out of what the pit derives from it: button" in refused[0]["reason"]
    events = (await floor.client.get("/api/tables/T1/events")).json()
    assert [e["seq"] for e in events] == [1, 2]  # the event is the table's: kept


async def test_a_json_body_with_a_number_json_cannot_hold_is_refused(floor: Floor) -> None:
    login = floor.client.cookies.get("tablectl_pit_session")
    assert login is not None
    answer = await floor.client.post(
        "/api/holds/h1/override",
        content=b'{"decision": "misdeal", "x": NaN}',
        headers={"Content-Type": "application/json", "X-CSRF-Token": csrf_token(login)},
    )
    assert answer.status_code == 422
    assert answer.json()["detail"] == "the body is not JSON"


def _outcome(text: str | bytes) -> tuple[str, str]:
    """What reading ``text`` gives: the value (as its repr) or the reason it is refused."""
    try:
        return "value", repr(load(text))
    except RejectedError as exc:
        return "refused", str(exc)


def _checked(text: str) -> tuple[str, str]:
    try:
        return "value", repr(load_checked(text))
    except RejectedError as exc:
        return "refused", str(exc)


#: Texts near each limit the fast reading relies on: escapes, nesting, long integers, numbers
#: no double holds.
EDGES = st.sampled_from(
    [
        "\\u0000",
        "\\ud800",
        "\\u00e9",
        "\ufeff",
        "\u00e9",
        "[" * MAX_DEPTH,
        "]" * MAX_DEPTH,
        "{",
        "9" * 30,
        "9" * 31,
        "-" + "9" * 30,
        "1e999999",
        "1E400",
        "NaN",
        "-Infinity",
        ".5",
        "\x00",
        '"',
        ",",
    ]
)


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    """JSON a table may send (escaped or not, nested near the limit) and text that is nearly
    JSON."""
    digits = st.integers(min_value=29, max_value=32).map(lambda n: int("9" * n))
    value = draw(VALUES | digits | digits.map(lambda n: -n) | digits.map(lambda n: n / 7))
    depth = draw(st.integers(min_value=0, max_value=MAX_DEPTH + 2))
    for _ in range(depth):
        value = draw(st.sampled_from([[value], {"k": value}]))
    text = json.dumps(value, allow_nan=True, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:at] + draw(EDGES) + text[at:]
    return text


@given(text=json_texts())
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_reading_without_checking_each_value_takes_and_refuses_what_checking_does(
    text: str,
) -> None:
    assert _outcome(text) == _checked(text)
    assert _outcome(text.encode("utf-8", "surrogatepass")) == _checked(text)


def test_a_text_read_without_checking_each_value_still_has_its_limits() -> None:
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert _outcome(deep) == ("refused", f"not JSON: nested deeper than {MAX_DEPTH} levels")
    assert _outcome("[" + "9" * 31 + "]")[0] == "refused"
    assert _outcome('["a\\u0000b"]') == ("refused", "a string holds a NUL character")
    assert _outcome("[" + "9" * 30 + "]") == ("value", repr([int("9" * 30)]))
    assert _outcome("\ufeff[1]")[0] == "refused"  # a byte order mark is not JSON's
