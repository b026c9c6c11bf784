"""What the station offers between hands, as the profile allows, against a real table
(tests/station/rig.py): a seat sitting hands out, the blinds it then owes posted from the
station's button (MISSED-BLINDS), and a straddle (STRADDLE). Each step: the page shows the
button, and the request the button sends does it, journaled in the dealer's name."""

from __future__ import annotations

import re
from typing import Any

from tests.station.rig import PINS, Running, Table, station_running
from tests.station.test_station_api import _ready, hand_in

ANN = {"person": "ann", "role": "dealer"}


async def page(running: Running) -> str:
    """The table screen as the dealer's browser gets it."""
    answer = await running.client.get("/")
    assert answer.status_code == 200
    assert 'data-page="table"' in answer.text
    return answer.text


def buttons(html: str) -> list[str]:
    """The visible text of every button of the page."""
    return [
        re.sub(r"\s+", " ", b).strip() for b in re.findall(r"<button[^>]*>(.*?)</button>", html)
    ]


async def between_hands(running: Running) -> dict[str, Any]:
    view = await running.until_view(lambda v: hand_in(v) is None, "the hand to end")
    table: dict[str, Any] = view["table"]
    return table


async def test_a_seat_sits_out_then_posts_what_it_owes_from_the_stations_button_missed_blinds(
    table: Table,
) -> None:
    async with station_running(table.config) as running:
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        html = await page(running)
        assert 'aria-labelledby="sits-out-label"' in html  # three seats: one may sit out
        assert "Seat 3" in buttons(html)
        # a hand with every seat (so seat 3 is no new player: it returns), then seat 3 sits out
        assert (await running.post("/api/hand/start")).status_code == 200
        await finish(running)
        owes: dict[str, str] = {}
        for _ in range(4):  # until the blinds have passed seat 3 while it sat out
            dealt = await running.post("/api/hand/start", {"seats": [1, 2]})
            assert dealt.status_code == 200, dealt.text
            begun = await running.until_view(lambda v: hand_in(v) is not None, "the hand")
            assert begun["table"]["seats"]["3"]["status"] == "out"
            await finish(running)
            owes = (await between_hands(running))["owes"]
            if "3" in owes:
                break
        assert "3" in owes, owes
        debt = {"small": "the small blind", "big": "the big blind", "both": "both blinds"}
        label = f"Post {debt[owes['3']]}: seat 3"
        assert label in buttons(await page(running))
        before = len(table.events())
        posted = await running.post("/api/post", {"seat": 3})
        assert posted.status_code == 200, posted.text
        posting = [e for e in table.events()[before:] if e["type"] == "seat.posting"]
        assert len(posting) == 1
        assert posting[0]["by"] == ANN
        assert posting[0]["rules"] == ["MISSED-BLINDS"]
        await running.until_view(lambda v: 3 in v["table"].get("posting", []), "the post")
        html = await page(running)
        assert label not in buttons(html)
        assert "Seat 3 has posted" in html
        # the next hand deals seat 3 in, and it posts what it owed
        started_answer = await running.post("/api/hand/start")
        assert started_answer.status_code == 200, started_answer.text
        begun = await running.until_view(lambda v: hand_in(v) is not None, "the hand")
        assert 3 in begun["table"]["hand"]["order"]
        started = [e for e in table.events() if e["type"] == "hand.started"][-1]
        posts = [
            e
            for e in table.events()
            if e["type"] == "betting.action"
            and e.get("hand_id") == started["hand_id"]
            and e["data"].get("seat") == 3
            and e["data"].get("action") == "post"
        ]
        assert posts, "seat 3 posted nothing"
        await finish(running)


async def test_a_straddle_named_at_the_station_is_posted_straddle(table: Table) -> None:
    async with station_running(table.config) as running:
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        html = await page(running)
        assert 'aria-labelledby="straddles-label"' in html  # rrop-cash takes one straddle
        await between_hands(running)
        before = len(table.events())
        two = await running.post("/api/hand/start", {"straddles": [1, 2]})
        assert two.status_code == 409  # the daemon judges: one straddle a hand here
        assert two.json()["error"] == "at most 1 straddle(s) a hand (straddle.max)"
        assert not [e for e in table.events()[before:] if e["type"] == "hand.started"]
        # the first straddle is under the gun: the one seat of the three the daemon takes
        ok = None
        for seat in (1, 2, 3):
            answer = await running.post("/api/hand/start", {"straddles": [seat]})
            if answer.status_code == 200:
                ok = seat
                break
            assert answer.status_code == 409, answer.text
            assert "straddle" in answer.json()["error"]
        assert ok is not None
        started = [e for e in table.events() if e["type"] == "hand.started"][-1]
        assert started["by"] == ANN
        assert started["data"]["straddles"] == {str(ok): 4}
        assert "STRADDLE" in started["rules"]
        await finish(running)


async def finish(running: Running) -> None:
    """Play the hand in progress to its end through the API, as the dealer would: Check or Call,
    Table at the showdown, Confirm RR-SD-4 (the house lets the dealer), Push award."""
    await running.until_view(lambda v: hand_in(v) is not None, "the hand to start")
    while True:
        view = await running.until_view(
            lambda v: hand_in(v) is None or _ready(hand_in(v)), "the table to wait for the dealer"
        )
        hand = hand_in(view)
        if hand is None:
            return
        seats = view["table"]["seats"]
        if hand["holds"]:
            answer = await running.post(f"/api/holds/{hand['holds'][0]['id']}/confirm")
        elif hand["phase"] == "betting":
            action = "check" if hand["options"]["can_check"] else "call"
            answer = await running.post(f"/api/actions/{action}")
        elif hand["phase"] == "showdown":
            seat = next(
                s
                for s in hand["showdown_order"]
                if seats[str(s)]["status"] in ("live", "all_in") and "shown" not in seats[str(s)]
            )
            answer = await running.post("/api/showdown/table", {"seat": seat})
        else:
            answer = await running.post("/api/award")
        assert answer.status_code == 200, answer.text
        seq = max([e["seq"] for e in answer.json()["events"]], default=view["seq"] + 1)
        await running.until_view(lambda v, seq=seq: v["seq"] >= seq, "the answer's events")
