"""The station's pages without a browser: what each part of the screen shows for views the core
itself made (tests/station/screens_views.py: random hands into the pure core), and the pages as
the station serves them (uvicorn on a free port, asked with httpx).

* the drawing shows every chip once (POT-SEP), whose turn it is, the button, the board and the
  holds, as the view says (hypothesis: any random table, any moment of its hands);
* the action pad offers exactly what the core's menu allows, and each quick size is an amount
  the core takes (DE-1548);
* a hold shows Confirm and Reject only where the house lets the dealer (``dealer_may_confirm``,
  SEAT-COUNT), always Call the floor, and every ruling has its plain words;
* the pages: the fixed surface (Dealer, PIN, Log in; the buttons by their text; Amount), no
  inline script or style under the station's Content-Security-Policy, a player's name escaped,
  the live stream's sections and the page's turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from controller.aio import cancel_and_wait
from controller.pit.http import listen, web_server
from controller.station.app import create_app
from controller.station.desk import COOKIE
from controller.station.legal import IllegalError, check_action
from controller.station.pages import screen, sections
from controller.station.picture import SEAT_CARDS, drawing_of
from controller.station.screens import RULINGS, holds, pad, status
from controller.station.station import Station
from controller.table.decoder import record_of
from controller.table.engine import apply
from controller.table.event_types import CommandRejected
from controller.table.inputs import CallFloor, RaiseHold, RunItTwice
from controller.table.state import Phase, TableState
from controller.table.values import Ruling
from simulators.autoplay import Style
from simulators.scenario.core_runner import run_at_once
from simulators.scenario.model import Scenario, ScenarioMeta, TableSpec
from tests.station.screens_views import (
    ANN,
    Recording,
    daemon_view,
    hand_states,
    hand_views,
    show,
    station,
)
from tests.waiting import until

#: The fixed surface's buttons of the action pad (design §3.14), by their visible text.
PAD_BUTTONS = ("Fold", "Check", "Call", "Bet", "Raise", "All in")
#: A style that makes all-ins and side pots often.
WILD = Style(fold=0.2, aggressive=0.4, all_in=0.4)
#: One that shoves almost every time it bets: every player all in before the river.
ALL_IN = Style(fold=0.05, aggressive=0.6, all_in=0.9)


def hand_clock(state: TableState) -> datetime:
    """A time for an input at ``state`` (the core judges running it twice without the clock)."""
    del state
    return datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def at(tmp_path_factory: pytest.TempPathFactory) -> Station:
    return station(tmp_path_factory.mktemp("station"))


def station_view(at: Station, view: dict[str, Any]) -> dict[str, Any]:
    """``view`` as the station gives it to its dealer (names, ``may_rule``, the pad)."""
    show(at, view)
    state = at.state(at.desk.session or at.desk.login(ANN, "t", at.clock(), None))
    made: dict[str, Any] = state["view"]
    return made


def total_drawn(view: dict[str, Any]) -> int:
    drawing = drawing_of(view)
    return (
        sum(s.stack or 0 for s in drawing.seats)
        + sum(s.bet or 0 for s in drawing.seats)
        + sum(p.amount for p in drawing.pots)
    )


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**30))
def test_the_drawing_shows_every_chip_once_and_what_the_view_says_pot_sep(seed: int) -> None:
    for view in hand_views(seed, style=WILD):
        table = view["table"]
        hand = table.get("hand")
        in_play = hand["pot"] if hand else 0
        assert total_drawn(view) == sum(s["stack"] for s in table["seats"].values()) + in_play
        drawing = drawing_of(view)
        assert drawing.button == table["button"]
        if hand is not None:
            assert drawing.to_act == hand.get("to_act")
            assert list(drawing.board) == hand["board"]
            assert [p.amount for p in drawing.pots] == [
                p["amount"] for p in hand["pots"] if p["amount"]
            ]
            for seat in drawing.seats:
                entry = table["seats"][str(seat.seat)]
                assert (seat.bet or 0) == entry.get("bet", 0)
                held = len(entry.get("shown", ())) or entry.get("cards", 0)
                assert len(seat.cards) == min(held, SEAT_CARDS)
                faces = [c for c in seat.cards if c is not None]
                assert faces == entry.get("shown", [])[:SEAT_CARDS]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**30))
def test_the_pad_offers_what_the_core_allows_and_every_quick_size_is_legal_de_1548(
    seed: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    at = station(tmp_path_factory.mktemp("pad"))
    betting = 0
    for daemon in hand_views(seed, style=WILD):
        view = station_view(at, daemon)
        hand = view["table"].get("hand")
        shown = pad(view)
        if hand is None:
            assert shown.mode == "start"
            assert shown.buttons[0].label == "Start hand"
            continue
        if shown.mode != "betting":
            assert not [b for b in shown.buttons if b.label in PAD_BUTTONS]
            continue
        betting += 1
        offered = hand["pad"]
        actions = [b for b in shown.buttons if b.post.startswith("/api/actions/")]
        enabled = {b.post.removeprefix("/api/actions/") for b in actions if b.enabled}
        assert enabled == set(offered["actions"])
        assert [b.label for b in shown.buttons][:6] == list(PAD_BUTTONS)
        if offered["can_raise"]:
            assert shown.amount == (offered["min_to"], offered["max_to"])
            kind = "raise" if hand["round"]["current"] else "bet"
            for _, to in shown.quick:
                assert offered["min_to"] <= to <= offered["max_to"]
                # the core takes it: the station would send it
                assert check_action(view["table"], None, kind, to)[2] == to
            below = offered["min_to"] - 1
            if below > offered["call_to"]:
                with pytest.raises(IllegalError):
                    check_action(view["table"], None, kind, below)
        else:
            assert shown.amount is None
            assert shown.quick == ()
    # a table of short stacks may be all in on the blinds: no betting round to look at
    assume(betting > 0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**30))
def test_run_it_twice_is_offered_whenever_the_core_takes_it_run_twice(
    seed: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Offered at every moment the core would take it; offered otherwise only while the next
    street's cards are on their way, which the view does not show (the core refuses it then
    with its reason)."""
    at = station(tmp_path_factory.mktemp("twice"))
    seen = {"taken": 0}
    for daemon, state in hand_states(seed, 3, ALL_IN, {"run_twice.allowed": True}):
        view = station_view(at, daemon)
        offered = any(b.label == "Run it twice" for b in pad(view).buttons)
        if state.hand is None:
            assert not offered
            continue
        _, events = apply(state, RunItTwice(hand_clock(state)))
        record = record_of(events[0])
        if not isinstance(record, CommandRejected):
            assert offered, daemon["table"]["hand"]
            seen["taken"] += 1
        elif offered:
            assert record.reason == "the next street has begun: they agree before its burn"
    # every hand may end before anyone is all in: nothing to offer then
    assume(seen["taken"] > 0)


def held_view(dealer_may_confirm: list[str]) -> dict[str, Any]:
    """The daemon's view of a hand held by surveillance for SEAT-COUNT at seat 2."""
    scenario = Scenario(
        scenario=ScenarioMeta(name="held", house_rules={"dealer_may_confirm": dealer_may_confirm}),
        table=TableSpec(id="T1", stacks={1: 100, 2: 100, 3: 100}, button=1),
    )
    dealer = Recording(scenario, random.Random(1))
    dealer.views = []

    async def deal() -> None:
        await dealer.feed(dealer.start_command())
        await dealer.shuffle("ok", None, None, 7)
        await dealer.deal_hole()
        await dealer.feed(RaiseHold(dealer.tick(), "SEAT-COUNT", "seat 2 shows one card", 2))

    run_at_once(deal())
    return daemon_view(dealer, len(dealer.run.events))


@pytest.mark.parametrize("house", [[], ["SEAT-COUNT"]])
def test_a_hold_shows_confirm_only_where_the_house_lets_the_dealer_seat_count(
    at: Station, house: list[str]
) -> None:
    view = station_view(at, held_view(house))
    (hold,) = holds(view)
    assert hold.rule == "SEAT-COUNT"
    assert hold.seat == 2
    assert hold.plain == RULINGS[Ruling.CONTINUE]
    assert hold.may_rule is bool(house)
    labels = [b.label for b in hold.buttons]
    assert labels == (["Confirm", "Reject", "Call the floor"] if house else ["Call the floor"])
    floor = hold.buttons[-1]
    assert floor.post == "/api/floor"
    assert dict(floor.body) == {"hold": hold.id, "reason": "a ruling on SEAT-COUNT is needed"}
    assert pad(view).mode == "held"  # nothing else goes on while the hand is held
    assert not pad(view).buttons


def disputed_award_view(dealer_may_confirm: list[str]) -> dict[str, Any]:
    """The daemon's view of a hand at its award, the dealer having called the floor on it."""
    scenario = Scenario(
        scenario=ScenarioMeta(name="held", house_rules={"dealer_may_confirm": dealer_may_confirm}),
        table=TableSpec(id="T1", stacks={1: 100, 2: 100, 3: 100}, button=1),
    )
    dealer = Recording(scenario, random.Random(1), Style(fold=0.0, aggressive=0.0, muck_loser=0.0))
    dealer.views = []

    async def play() -> None:
        await dealer.feed(dealer.start_command())
        await dealer.shuffle("ok", None, None, 7)
        await dealer.deal_hole()
        while (hand := dealer.run.state.hand) is not None and hand.phase is not Phase.AWARD:
            await dealer.next_move(hand)
        await dealer.feed(CallFloor(dealer.tick(), "the award is disputed"))

    run_at_once(play())
    return daemon_view(dealer, len(dealer.run.events))


@pytest.mark.parametrize("house", [[], ["FLOOR-CALL"]])
def test_floor_call_a_disputed_award_shows_held_waiting_for_the_floor(
    at: Station, house: list[str]
) -> None:
    view = station_view(at, disputed_award_view(house))
    shown = pad(view)
    assert shown.mode == "held"
    assert shown.note.startswith("The floor is called: nothing goes on")
    assert not shown.buttons  # no Push award until the floor rules
    (hold,) = holds(view)
    assert (hold.rule, hold.reason, hold.may_rule) == (
        "FLOOR-CALL",
        "the award is disputed",
        bool(house),
    )
    labels = [b.label for b in hold.buttons]
    assert labels == (["Confirm", "Reject", "Call the floor"] if house else ["Call the floor"])
    assert dict(hold.buttons[-1].body) == {"hold": hold.id, "reason": "the floor is still awaited"}


def test_every_ruling_has_its_plain_words() -> None:
    assert set(RULINGS) == set(Ruling)
    assert all(words.endswith(".") for words in RULINGS.values())


def test_the_status_strip_says_each_link_in_words() -> None:
    shown = status(
        {
            "table_id": "T1",
            "daemon": {"connected": True},
            "dealer": {"id": "ann", "name": "Ann Example"},
            "view": {
                "link": {"broker": "down", "alarms": ["disk.low"]},
                "devices": {
                    "shuffler": {"health": "online", "approved": False},
                    "reader": {"health": "offline"},
                },
            },
        }
    )
    assert shown.dealer == "Ann Example"
    assert shown.items == (
        ("Table", "connected", "ok"),
        ("Broker", "down (events kept)", "bad"),
        ("Alarm", "disk.low", "bad"),
        ("Reader", "offline", "bad"),
        ("Shuffler", "online (not approved)", "bad"),
    )
    out = status({"table_id": "T1", "daemon": {"connected": False, "problem": "no socket"}})
    assert out.items == (("Table", "out of reach: no socket", "bad"),)
    assert pad(None, "no socket").mode == "offline"


# ----------------------------------------------------------------------------- served


@contextlib.asynccontextmanager
async def served(at: Station) -> AsyncIterator[httpx.AsyncClient]:
    """The station's app on a free port (its link not connected: the tests give the view)."""
    listener = listen("127.0.0.1", 0)
    server = web_server(create_app(at), header_timeout=10, keepalive_timeout=30, trusted_proxies=[])
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        await until(lambda: server.started, 30, "the station to serve")
        base = f"http://127.0.0.1:{listener.getsockname()[1]}"
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            yield client
    finally:
        server.should_exit = True
        await asyncio.wait([task], timeout=10)
        await cancel_and_wait([task])
        listener.close()


def betting_view() -> dict[str, Any]:
    """A view of the first betting round of a hand (three seats)."""
    for view in hand_views(5, hands=1):
        if view["table"].get("hand", {}).get("phase") == "betting":
            return view
    raise AssertionError("no betting round")


def inline(html: str) -> list[str]:
    """What the Content-Security-Policy would refuse: inline scripts, styles, handlers."""
    found = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    found += re.findall(r"<style\b", html)
    found += re.findall(r"<[a-zA-Z][^>]*\s(?:style|on[a-z]+)=", html)
    return found


async def test_the_log_in_page_has_the_fixed_surface_and_no_inline_script(tmp_path: Path) -> None:
    at = station(tmp_path)
    show(at, betting_view())
    async with served(at) as client:
        page = await client.get("/")
        assert page.status_code == 200
        csp = page.headers["content-security-policy"]
        assert "default-src 'self'" in csp
        assert "frame-ancestors 'none'" in csp
        html = page.text
        assert 'data-page="login"' in html
        assert '<label for="dealer">Dealer</label>' in html
        assert '<label for="pin">PIN</label>' in html
        assert ">Log in</button>" in html
        assert not inline(html)
        for name in ("Start hand", *PAD_BUTTONS, "Log out"):
            assert f">{name}</button>" not in html  # nothing to do for nobody
        assert "<svg" in html  # the table as anyone at it sees it
        script = await client.get("/static/station.js")
        assert script.status_code == 200
        assert "javascript" in script.headers["content-type"]
        assert (await client.get("/static/station.css")).status_code == 200
        assert (await client.get("/static/none.js")).status_code == 404


async def test_the_table_page_has_the_pad_by_its_words_and_a_name_is_escaped(
    tmp_path: Path,
) -> None:
    at = station(tmp_path)
    show(at, betting_view())
    at.names[1] = '<img src=x onerror="alert(1)">'
    at.desk.login(ANN, "token", at.clock(), None)
    async with served(at) as client:
        client.cookies.set(COOKIE, "token")
        html = (await client.get("/")).text
        assert 'data-page="table"' in html
        for name in (*PAD_BUTTONS, "Call the floor", "Log out"):
            assert re.search(rf">{re.escape(name)}</button>", html), name
        assert '<label for="amount">Amount</label>' in html
        assert "<img" not in html
        assert "&lt;img src=x onerror=" in html
        assert not inline(html)


async def test_the_live_stream_sends_what_changed_and_the_pages_turn(tmp_path: Path) -> None:
    at = station(tmp_path)
    views = list(hand_views(5, hands=1))
    show(at, views[0])
    at.desk.login(ANN, "token", at.clock(), None)
    async with served(at) as client:
        client.cookies.set(COOKIE, "token")
        async with client.stream("GET", "/live") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.aiter_lines()

            async def next_update() -> dict[str, Any]:
                async for line in lines:
                    if line.startswith("data: "):
                        update: dict[str, Any] = json.loads(line[6:])
                        return update
                raise AssertionError("the stream ended")

            first = await next_update()
            assert first["page"] == "table"
            assert set(first["sections"]) == {"status", "table", "facts", "holds", "pad"}
            betting = next(v for v in views if v["table"].get("hand", {}).get("phase") == "betting")
            show(at, betting)
            update = await next_update()
            assert update["seq"] == betting["seq"]
            assert "pad" in update["sections"]
            assert 'data-mode="betting"' in update["sections"]["pad"]
            assert "status" not in update["sections"]  # unchanged: not sent again
            at.desk.expire(at.clock() + 10_000)  # the idle log-out
            at.changed()
            ended = await next_update()
            assert ended["page"] == "login"  # the page loads itself again: the log-in
            assert set(ended["sections"]) == {"status", "badge", "table"}


def test_every_page_mode_renders(at: Station) -> None:
    """Each mode of the action panel over a few random hands renders, with its buttons."""
    modes = set()
    for daemon in hand_views(11, hands=3, style=WILD):
        show(at, daemon)
        session = at.desk.session or at.desk.login(ANN, "t", at.clock(), None)
        page, context = screen(at, session)
        parts = sections(page, context)
        modes.add(context["pad"].mode)
        for button in context["pad"].buttons:
            assert f">{button.label}</button>" in parts["pad"]
    assert {"start", "dealing", "betting", "showdown", "award"} <= modes
