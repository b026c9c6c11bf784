"""The console's event lists in plain words and the floor's local time
(controller/pit/console/sentences.py, local_time.py): a sentence for every event type, cards
only for those who see them, times in the configured zone with the UTC stamp kept, the raw
envelope one click away."""

from __future__ import annotations

import html
import re
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.config import ConfigError
from controller.pit.config import parse_pit_config
from controller.pit.console.local_time import LocalTime
from controller.pit.console.sentences import SENTENCES, sentence
from controller.pit.console.views import Viewer, event_view
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.users import add_user
from controller.pit.web.app import create_app
from controller.pit.worker import StoreWorker
from controller.table import event_types as et
from controller.table.decoder import decode
from controller.table.event_types import EVENT_TYPES
from controller.table.events import EventData, Recorded
from controller.table.inputs import ActionKind
from tests.pit.test_store import envelope, event_in

PASSWORD = "a long enough password"
FLOOR = Viewer("ann", frozenset({"floor"}), None)
SURVEILLANCE = Viewer("sam", frozenset({"surveillance"}), None)


def test_every_event_type_has_its_sentence() -> None:
    missing = set(EVENT_TYPES) - set(SENTENCES)
    assert not missing, f"event types without a sentence: {sorted(missing)}"


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_record_of_each_type_is_said_in_one_line(event_type: str, data: st.DataObject) -> None:
    record = data.draw(st.builds(EVENT_TYPES[event_type]))
    for cards in (False, True):
        said = sentence(record, cards=cards)
        assert said == " ".join(said.split())
        assert said
        assert "ActionKind." not in said
        assert "Purpose." not in said


@pytest.mark.parametrize(
    ("record", "said"),
    [
        (
            et.BettingAction(3, ActionKind.RAISE, 160, False, to=40, put_in=30),
            "Seat 3 raises to 40",
        ),
        (
            et.BettingAction(1, ActionKind.POST, 95, False, blind="small", amount=5),
            "Seat 1 posts the small blind of 5",
        ),
        (et.BettingAction(2, ActionKind.CALL, 0, True, to=200), "Seat 2 calls 200 (all in)"),
        (et.BettingAction(4, ActionKind.FOLD, 50, False), "Seat 4 folds"),
        (et.BoardDealt("flop", ("As", "Kd", "7c"), ("As", "Kd", "7c")), "Flop: A♠ K♦ 7♣"),  # type: ignore[arg-type]
        (
            et.BoardDealt("turn", ("Th",), ("As", "Kd", "7c", "Th")),  # type: ignore[arg-type]
            "Turn: 10♥ (board A♠ K♦ 7♣ 10♥)",
        ),
        (
            et.HandHold(
                "T1-00001-h1", "SEAT-COUNT", "two cards seen at seat 2", "continue", seat=2
            ),
            "Hold SEAT-COUNT at seat 2: two cards seen at seat 2. Proposed ruling: continue",
        ),
        (
            et.HandResume(hold="h1", rule="SEAT-COUNT", decision="continue", by="confirm"),
            "Hold SEAT-COUNT confirmed: continue; play resumes",
        ),
        (
            et.PotAwarded((et.PotShare(120, (2, 3), {"2": 120}, {}),), {"2": 120}),
            "Seat 2 wins 120 from the main pot",
        ),
        (
            et.PotAwarded(
                (
                    et.PotShare(40, (3,), {"3": 40}, {}),
                    et.PotShare(120, (2, 3), {"2": 60, "3": 60}, {}),
                ),
                {"2": 60, "3": 100},
            ),
            "Seat 2 wins 60 and seat 3 wins 60 from the main pot; seat 3 wins 40 from side pot 1",
        ),
        (
            et.BettingRoundClosed("preflop", 80, returned={"3": 20}),
            "Preflop betting closed: pot 80; seat 3: 20 returned uncalled",
        ),
        (
            et.DeviceStatus("shuffler", fault="jam", detail="door open"),
            "Device shuffler fault: jam: door open",
        ),
    ],
)
def test_an_event_reads_as_a_person_would_say_it(record: EventData, said: str) -> None:
    assert sentence(record, cards=True) == said


def test_cards_are_named_to_those_who_see_them_and_the_board_to_everyone() -> None:
    delivered = et.DealGroupDelivered(2, 3, 2, cards=("As", "Kd"))  # type: ignore[arg-type]
    assert sentence(delivered, cards=True) == "Seat 2 received 2 cards: A♠ K♦"
    assert sentence(delivered, cards=False) == "Seat 2 received 2 cards"
    tabled = et.ShowdownHandTabled(5, ("Qs", "Qh"), category="pair")  # type: ignore[arg-type]
    assert sentence(tabled, cards=False) == "Seat 5 tables their hand (pair)"
    exposed = et.CardExposed(4, "7d", "exposed")  # type: ignore[arg-type]
    assert sentence(exposed, cards=False) == "A card exposed at seat 4 (exposed)"
    assert sentence(exposed, cards=True) == "7♦ exposed at seat 4 (exposed)"
    board = et.BoardDealt("river", ("2c",), ("As", "Kd", "7c", "Th", "2c"))  # type: ignore[arg-type]
    assert "2♣" in sentence(board, cards=False)


def test_an_event_the_console_cannot_read_says_so() -> None:
    broken = decode({"type": "betting.action", "data": {"seat": "three"}})
    assert isinstance(broken, Recorded)
    assert sentence(broken, cards=True) == (
        "betting.action: not read (its data is not as this console knows it)"
    )
    unknown = decode({"type": "table.levitated", "data": {}})
    assert sentence(unknown, cards=True).startswith("table.levitated: not read")


def test_a_row_has_its_sentence_local_time_with_the_utc_stamp_and_its_raw_envelope() -> None:
    body = envelope(7, "deal.group.delivered", data={"seat": 2, "group": 3, "count": 2})
    body["ts"] = "2026-07-01T10:00:05.250Z"
    body["data"]["cards"] = ["As", "Kd"]  # as the surveillance view merges them in
    body["secure"] = True
    berlin = LocalTime(ZoneInfo("Europe/Berlin"))
    seen = event_view(body, SURVEILLANCE, berlin)
    assert seen["sentence"] == "Seat 2 received 2 cards: A♠ K♦"
    assert seen["when"] == {
        "text": "2026-07-01 12:00:05 CEST",
        "datetime": "2026-07-01T10:00:05.250Z",
        "utc": "2026-07-01T10:00:05.250Z (UTC)",
    }
    assert '"cards": [\n' in seen["raw"]
    hidden = event_view(body, FLOOR, berlin)
    assert hidden["sentence"] == "Seat 2 received 2 cards"
    assert "As" not in hidden["raw"]
    assert '"seq": 7' in hidden["raw"]


@pytest.mark.parametrize(
    ("stamp", "zone", "text"),
    [
        ("2026-01-15T23:30:00.999Z", "Europe/Berlin", "2026-01-16 00:30:00 CET"),
        ("2026-07-01T10:00:00Z", "America/New_York", "2026-07-01 06:00:00 EDT"),
        (1767225600.5, "Asia/Tokyo", "2026-01-01 09:00:00 JST"),  # a Unix time: the pit's own
        ("2026-03-29T01:30:00Z", "Europe/London", "2026-03-29 02:30:00 BST"),
    ],
)
def test_a_time_is_written_in_the_zone_to_the_second(stamp: Any, zone: str, text: str) -> None:
    written = LocalTime(ZoneInfo(zone)).of(stamp)
    assert written is not None
    assert written["text"] == text
    moment = datetime.fromisoformat(written["datetime"])
    assert moment.tzinfo is not None
    assert moment.utcoffset() == UTC.utcoffset(None)


@pytest.mark.parametrize(
    "stamp", ["", "yesterday", "2026-07-01T10:00:00", None, True, [1], "9999-12-31T23:59:59-23:00"]
)
def test_what_is_not_a_time_is_shown_as_it_came(stamp: Any) -> None:
    assert LocalTime(ZoneInfo("Pacific/Kiritimati")).of(stamp) is None


@pytest.fixture
def tz_tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_without_a_zone_configured_the_host_s_is_used(tz_tokyo: None) -> None:
    written = LocalTime().of("2026-07-01T10:00:00Z")
    assert written is not None
    assert written["text"] == "2026-07-01 19:00:00 JST"
    assert LocalTime().name == "JST"


def test_a_time_zone_the_host_does_not_know_is_refused_in_the_config() -> None:
    config = {"pit": {"id": "p"}, "web": {"time_zone": "Europe/Atlantis"}}
    with pytest.raises(ConfigError, match=r"Europe/Atlantis.*not a time zone this host knows"):
        parse_pit_config(config)
    assert parse_pit_config({"pit": {"id": "p"}, "web": {"time_zone": "Asia/Tokyo"}}).web.zone == (
        ZoneInfo("Asia/Tokyo")
    )
    assert parse_pit_config({"pit": {"id": "p"}}).web.zone is None


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    url = f"sqlite:///{tmp_path / 'pit.sqlite'}"
    store = Store(url)
    store.migrate()
    add_user(store, "ann", ["floor"], PASSWORD)
    started = {
        "button": 1,
        "seats": [1, 2],
        "small_blind": 1,
        "big_blind": 2,
        "blinds": [5, 10],
        "ante": 0,
        "stacks": {"1": 100, "2": 100},
    }
    raised = {"seat": 1, "action": "raise", "stack": 60, "all_in": False, "to": 40, "put_in": 35}
    store.ingest(
        [
            event_in(envelope(1, "hand.started", data=started)),
            event_in(envelope(2, "betting.action", data=raised)),
        ]
    )
    store.close()
    worker = StoreWorker(url, "api")
    await worker.open()
    app = create_app(worker, PitMetrics("p"), pit_id="p", time_zone=ZoneInfo("Asia/Tokyo"))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://pit", auth=("ann", PASSWORD)
    ) as test_client:
        yield test_client
    await worker.close()


async def test_the_table_and_hand_pages_say_the_events_in_words_in_the_floor_s_time(
    client: httpx.AsyncClient,
) -> None:
    for path in ("/tables/T1", "/hands/T1-00001?table=T1&epoch=e1"):
        page = (await client.get(path)).text
        assert "Times in Asia/Tokyo" in page, path
        assert "Seat 1 raises to 40" in page
        assert "Hand started: button seat 1, blinds 5/10, 2 seats dealt in (1, 2)" in page
        # 00:00:02 UTC on New Year's Day is 09:00:02 in Tokyo; the stamp itself is kept
        assert (
            '<time datetime="2026-01-01T00:00:02.000Z" title="2026-01-01T00:00:02.000Z (UTC)">'
            "2026-01-01 09:00:02 JST</time>" in page
        ), path
        # the raw envelope, a click away (no script: a details element)
        raw = re.search(
            r"<details class=\"raw\"[^>]*><summary[^>]*>Raw event <code>betting.action</code>"
            r"</summary><pre>(.*?)</pre>",
            page,
            re.S,
        )
        assert raw is not None, path
        assert '"put_in": 35' in html.unescape(raw.group(1))
        assert "stacks={" not in page  # no more raw dumps in the list itself
    hands = (await client.get("/hands")).text
    assert "times in Asia/Tokyo" in hands
    assert "2026-01-01 09:00:01 JST" in hands
