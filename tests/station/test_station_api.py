"""The dealer's station against a real table: ``tablectl run`` with a virtual shuffler and a badge
reader, mosquitto, and the station's JSON API over HTTP (tests/station/rig.py).

Each test proves one promise of docs/station.md: who may log in and how, that nothing is sent for
nobody, that every event a command causes names the dealer, that amounts are judged before they
go, that the broker is not needed, and that bad input is refused with its reason.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from controller.cards import Card
from controller.decks import load_deck
from controller.station.screens import holds, pad
from tests.integration.broker import Broker
from tests.integration.conftest import Collector
from tests.station.rig import (
    ANN_BADGE,
    PINS,
    Running,
    Table,
    make_table,
    station_running,
)
from tests.waiting import until

#: What a dealer's own commands cause (the rest comes from the devices and has no ``by``).
COMMANDED = {"hand.started", "pot.awarded", "showdown.hand.tabled"}


def requested(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events a request caused: a command's (``by`` names who gave it) or a refusal's
    (the devices keep reporting meanwhile, and their events name nobody)."""
    return [e for e in events if e.get("by") is not None or e["type"] == "command.rejected"]


def hand_in(view: dict[str, Any]) -> dict[str, Any] | None:
    hand: dict[str, Any] | None = view["table"].get("hand")
    return hand


async def play_hand(running: Running, raise_to: int | None = None, award: bool = True) -> str:
    """Play one whole hand through the API as the dealer would: start it, let the seat to act
    call or check (seat 3 raises to ``raise_to`` preflop, when given), table every live hand at
    showdown, push the award (``award=False``: stop when it is proposed). The hand's id."""
    answer = await running.post("/api/hand/start")
    assert answer.status_code == 200, answer.text
    started = await running.until_view(lambda v: hand_in(v) is not None, "the hand to start")
    hand_id = started["table"]["hand"]["hand_id"]
    raised = raise_to is None
    while True:
        view = await running.until_view(
            lambda v: hand_in(v) is None or _ready(hand_in(v)), "the table to wait for the dealer"
        )
        hand = hand_in(view)
        if hand is None:
            return str(hand_id)
        if not award and hand["phase"] == "award" and not hand["holds"]:
            return str(hand_id)
        if hand["holds"]:  # RR-SD-4 at the award: the dealer confirms the losers killed
            hold = hand["holds"][0]
            assert hold["dealer_may_confirm"], hold
            answer = await running.post(f"/api/holds/{hold['id']}/confirm")
        elif hand["phase"] == "betting":
            options = hand["options"]
            if not raised and options["seat"] == 3:
                answer = await running.post("/api/actions/raise", {"amount": raise_to})
                raised = True
            else:
                action = "check" if options["can_check"] else "call"
                answer = await running.post(f"/api/actions/{action}")
        elif hand["phase"] == "showdown":
            seat = next(
                s
                for s in hand["showdown_order"]
                if view["table"]["seats"][str(s)]["status"] in ("live", "all_in")
                and "shown" not in view["table"]["seats"][str(s)]
            )
            answer = await running.post("/api/showdown/table", {"seat": seat})
        else:
            answer = await running.post("/api/award")
        assert answer.status_code == 200, answer.text
        # the view once it shows what the answer did (a device's event may come between)
        seq = max([e["seq"] for e in answer.json()["events"]], default=view["seq"] + 1)
        await running.until_view(lambda v, seq=seq: v["seq"] >= seq, "the answer's events")


def _ready(hand: dict[str, Any] | None) -> bool:
    """Whether the hand waits for the dealer (not for the devices)."""
    if hand is None or hand["holds"]:
        return True
    return (
        (hand["phase"] == "betting" and "options" in hand)
        or hand["phase"] == "showdown"
        or (hand["phase"] == "award" and "proposal" in hand)
    )


async def test_log_in_by_typed_id_and_pin_then_out(table: Table) -> None:
    async with station_running(table.config) as running:
        answer = await running.login("ann", PINS["ann"])
        assert answer.status_code == 200, answer.text
        assert answer.json()["dealer"] == {"id": "ann", "name": "Ann Example", "roles": ["dealer"]}
        cookie = answer.headers["set-cookie"].lower()
        assert "httponly" in cookie
        assert "samesite=strict" in cookie
        view = await running.view()
        assert view["table"]["seats"]["1"]["name"] == "Seat 1"
        assert (await running.post("/api/logout")).status_code == 200
        assert (await running.client.get("/api/view")).status_code == 401


async def test_log_in_by_a_badge_read_on_the_badge_zone_never_foul_foreign(table: Table) -> None:
    async with station_running(table.config) as running:
        before = len(table.events())
        table.badge(ANN_BADGE)
        await until(lambda: running.station.pending_badge() is not None, 30, "the badge read")
        assert running.station.pending_badge().uid == ANN_BADGE  # type: ignore[union-attr]
        state = (await running.client.get("/api/state")).json()
        assert state["badge"] == {"known": True, "name": "Ann Example", "card": False}
        answer = await running.login(None, PINS["ann"])
        assert answer.status_code == 200, answer.text
        assert answer.json()["dealer"]["id"] == "ann"
        # the read never reached the core: no foreign card (FOUL-FOREIGN), no event of it
        since = table.events()[before:]
        assert not [
            e for e in since if e["type"] == "integrity.alarm" or ANN_BADGE in json.dumps(e)
        ]


async def test_a_card_or_an_unknown_tag_on_the_badge_reader_logs_nobody_in(table: Table) -> None:
    card = load_deck("house-a").uid(Card("As"))
    async with station_running(table.config) as running:
        table.badge(card)
        await until(lambda: running.station.pending_badge() is not None, 30, "the card read")
        assert (await running.client.get("/api/state")).json()["badge"]["card"] is True
        answer = await running.login(None, PINS["ann"])
        assert answer.status_code == 422
        assert "playing card" in answer.json()["error"]
        assert (await running.login(card, PINS["ann"])).status_code == 401
        running.station.badge = None
        table.badge("04ffffffffffff")  # a tag nobody has
        await until(lambda: running.station.pending_badge() is not None, 30, "the tag read")
        assert (await running.login(None, PINS["ann"])).status_code == 401
        assert (await running.client.get("/api/state")).json()["dealer"] is None


async def test_five_wrong_pins_lock_that_badge_not_the_station(table: Table) -> None:
    async with station_running(table.config) as running:
        table.badge(ANN_BADGE)
        await until(lambda: running.station.pending_badge() is not None, 30, "the badge read")
        for _ in range(5):
            answer = await running.login(None, "0000")
            assert answer.status_code == 401
        # the sixth try waits, the right PIN too, by the badge or by the typed id
        locked = await running.login(None, PINS["ann"])
        assert locked.status_code == 429, locked.text
        assert int(locked.headers["retry-after"]) >= 1
        assert (await running.login("ann", PINS["ann"])).status_code == 429
        # another dealer logs in at the same station at once
        other = await running.login("bob", PINS["bob"])
        assert other.status_code == 200, other.text
        assert other.json()["dealer"]["id"] == "bob"
        # once the wait is over, ann's right PIN lets her in (and clears her count)
        await until(
            lambda: running.station.lockouts.wait("ann", running.station.clock()) == 0,
            30,
            "ann's wait to end",
        )
        assert (await running.login("ann", PINS["ann"])).status_code == 200


async def test_nobody_logged_in_can_do_nothing(table: Table) -> None:
    async with station_running(table.config) as running:
        before = len(table.events())
        refused = [
            await running.post("/api/hand/start"),
            *[
                await running.post(f"/api/actions/{a}", {"amount": 4})
                for a in ("fold", "check", "call", "bet", "raise", "allin")
            ],
            await running.post("/api/holds/T1-00001-h1/confirm"),
            await running.post("/api/holds/T1-00001-h1/reject"),
            await running.post("/api/floor", {"reason": "a dispute"}),
            await running.post("/api/award"),
            await running.post("/api/showdown/table", {"seat": 1}),
            await running.post("/api/logout"),
            await running.client.get("/api/view"),
            await running.client.put("/api/seats/1/name", json={"name": "Zed"}),
        ]
        assert [r.status_code for r in refused] == [401] * len(refused)
        assert all(r.json()["error"] == "log in first" for r in refused)
        assert not requested(table.events()[before:])  # nothing reached the table


async def test_a_whole_hand_through_the_api_names_the_dealer_in_every_event_de_1552(
    table: Table,
) -> None:
    async with station_running(table.config) as running:
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        start = len(table.events())
        hand_id = await play_hand(running, raise_to=6)
    events = [e for e in table.events()[start:] if e.get("hand_id") == hand_id]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "hand.started"
    assert "pot.awarded" in kinds  # DE-1552: the dealer pushed the award
    assert kinds[-1] == "hand.completed"
    by = {e["type"]: e.get("by") for e in events if e.get("by") is not None}
    assert set(by) >= COMMANDED
    assert all(e.get("by") in (None, {"person": "ann", "role": "dealer"}) for e in events)
    raises = [
        e for e in events if e["type"] == "betting.action" and e["data"].get("action") == "raise"
    ]
    assert raises
    assert raises[0]["data"]["to"] == 6
    assert raises[0]["by"] == {"person": "ann", "role": "dealer"}


async def test_an_illegal_raise_is_refused_before_it_is_sent(table: Table) -> None:
    async with station_running(table.config) as running:
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        assert (await running.post("/api/hand/start")).status_code == 200
        view = await running.until_view(
            lambda v: (hand_in(v) or {}).get("phase") == "betting", "the first betting round"
        )
        assert view["table"]["hand"]["options"]["min_to"] == 4
        pad = (await running.view())["table"]["hand"]["pad"]  # the core's menu, for the pad
        assert pad["seat"] == 3
        assert pad["actions"] == ["fold", "call", "raise", "allin"]
        assert pad["quick"][0] == {"label": "minimum", "to": 4}
        before = len(table.events())
        answer = await running.post("/api/actions/raise", {"amount": 3})
        assert answer.status_code == 409
        assert answer.json()["error"] == "the minimum raise is to 4, not 3"
        over = await running.post("/api/actions/raise", {"amount": 1000})
        assert over.json()["error"] == "seat 3 has only 100 in total, cannot go to 1000"
        check = await running.post("/api/actions/check")
        assert check.json()["error"] == "seat 3 cannot check: 2 to call"
        turn = await running.post("/api/actions/call", {"seat": 1})
        assert turn.json()["error"] == "it is seat 3's turn, not seat 1's"
        assert not requested(table.events()[before:])  # refused here: no command.rejected
        assert (await running.post("/api/actions/raise", {"amount": 4})).status_code == 200


async def test_the_dealer_plays_a_hand_with_the_broker_stopped(
    table: Table, broker: Broker
) -> None:
    broker.stop()
    async with station_running(table.config) as running:
        await running.until_view(lambda v: v["link"]["broker"] == "down", "the broker down")
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        start = len(table.events())
        hand_id = await play_hand(running)
        kinds = [e["type"] for e in table.events()[start:] if e.get("hand_id") == hand_id]
        assert kinds[-1] == "hand.completed"


async def test_an_idle_dealer_is_logged_out(tmp_path: Path, broker: Broker) -> None:
    table = make_table(tmp_path / "table", broker, station="idle_logout = 1\n")
    table.daemon.start()
    try:
        async with station_running(table.config) as running:
            assert (await running.login("ann", PINS["ann"])).status_code == 200
            assert (await running.client.get("/api/view")).status_code == 200

            # a page that keeps reading the table keeps nobody logged in
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while (state := (await running.client.get("/api/state")).json())["dealer"]:
                assert loop.time() < deadline, "no idle log-out"
                await asyncio.sleep(0.1)  # the page's own pace of reading
            assert state["ended"] == "idle"
            before = len(table.events())
            assert (await running.post("/api/hand/start")).status_code == 401
            assert not requested(table.events()[before:])
    finally:
        table.daemon.close()


async def test_bad_input_is_refused_clearly_and_changes_nothing(table: Table) -> None:
    async with station_running(table.config) as running:
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        before = len(table.events())
        client = running.client
        malformed = await client.post(
            "/api/login", content=b'{"pin": "12', headers={"content-type": "application/json"}
        )
        assert malformed.status_code == 400
        assert malformed.json()["error"].startswith("not JSON")
        huge = await client.post("/api/floor", json={"reason": "x" * 100_000})
        assert huge.status_code == 413
        assert "over 8192 bytes" in huge.json()["error"]
        form = await client.post("/api/hand/start", data={"button": "1"})
        assert form.status_code == 415
        unknown_seat = await running.post("/api/actions/call", {"seat": 9})
        assert unknown_seat.status_code == 422
        assert unknown_seat.json()["error"] == "seat 9 is not at this table"
        boolean = await running.post("/api/actions/call", {"seat": True})
        assert boolean.status_code == 422
        assert boolean.json()["error"] == "seat: a whole number"
        extra = await running.post("/api/award", {"pot": 1})
        assert extra.status_code == 422
        assert "unknown field 'pot'" in extra.json()["error"]
        not_a_seat = await client.put("/api/seats/eleven/name", json={"name": "Zed"})
        assert not_a_seat.status_code == 422
        nowhere = await client.get("/api/nowhere")
        assert nowhere.status_code == 404
        assert nowhere.json() == {"error": "Not Found"}
        array = await client.post(
            "/api/floor", content=b"[]", headers={"content-type": "application/json"}
        )
        assert array.status_code == 400
        assert not requested(table.events()[before:])
        # the same station goes on serving
        assert (await running.post("/api/hand/start")).status_code == 200


async def test_the_dealer_changes_between_hands_only(table: Table) -> None:
    async with station_running(table.config) as running:
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        assert (await running.post("/api/hand/start")).status_code == 200
        await running.until_view(lambda v: hand_in(v) is not None, "the hand")
        out = await running.post("/api/logout")
        assert out.status_code == 409
        assert "log out between hands" in out.json()["error"]
        other = await running.login("bob", PINS["bob"])
        assert other.status_code == 409
        assert "dealt by ann" in other.json()["error"]
        assert (await running.login("ann", PINS["ann"])).status_code == 200  # the same dealer
        floor = await running.login("cat", PINS["cat"])  # the floor takes over
        assert floor.status_code == 200, floor.text
        assert floor.json()["dealer"]["id"] == "cat"
        await running.until_view(lambda v: (hand_in(v) or {}).get("phase") == "betting", "betting")
        folded = await running.post("/api/actions/fold")
        assert folded.status_code == 200, folded.text
        last = [e for e in table.events() if e["type"] == "betting.action"][-1]
        assert last["by"] == {"person": "cat", "role": "floor"}


async def test_a_seat_count_hold_is_the_floors_and_the_dealer_calls_the_floor(
    table: Table, broker: Broker
) -> None:
    async with (
        Collector(broker, table.daemon.topics) as collector,
        station_running(table.config) as running,
    ):
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        assert (await running.post("/api/hand/start")).status_code == 200
        await running.until_view(lambda v: "options" in (hand_in(v) or {}), "the betting")
        held = await table.request(
            "hold", rule="SEAT-COUNT", reason="seat 2 shows one card", seat=2
        )
        assert held["status"] == "ok", held
        view = await running.until_view(lambda v: (hand_in(v) or {}).get("holds"), "the hold")
        hold = view["table"]["hand"]["holds"][0]
        assert hold["dealer_may_confirm"] is False
        station_view = await running.view()
        assert station_view["table"]["hand"]["holds"][0]["may_rule"] is False
        confirm = await running.post(f"/api/holds/{hold['id']}/confirm")
        assert confirm.status_code == 403
        assert confirm.json()["error"] == "SEAT-COUNT is the floor's ruling: call the floor"
        called = await running.post("/api/floor", {"hold": hold["id"], "reason": "two cards seen"})
        assert called.status_code == 200, called.text
        floor = [e for e in table.events() if e["type"] == "floor.called"]
        assert len(floor) == 1
        assert floor[0]["by"] == {"person": "ann", "role": "dealer"}
        assert floor[0]["data"] == {
            "reason": "two cards seen",
            "hold": hold["id"],
            "rule": "SEAT-COUNT",
            "seat": 2,
        }
        assert floor[0]["rules"] == ["SEAT-COUNT"]
        await collector.wait_for(lambda c: any(e["type"] == "floor.called" for e in c.public))
        missing = await running.post("/api/floor", {"hold": "T1-00001-h9"})
        assert missing.status_code == 404


async def test_a_floor_call_waits_for_the_broker_like_any_event(
    table: Table, broker: Broker
) -> None:
    async with station_running(table.config) as running:
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        # Connected once first: before its first connection a table is starting, not in an
        # outage, and what it journals then is historical only by its age.
        await running.until_view(lambda v: v["link"]["broker"] == "up", "the broker up")
        broker.stop()
        await running.until_view(lambda v: v["link"]["broker"] == "down", "the broker down")
        called = await running.post("/api/floor", {"reason": "a player disputes the pot"})
        assert called.status_code == 200, called.text
        assert [e["type"] for e in table.events()][-1] == "floor.called"
        broker.start()
        async with Collector(broker, table.daemon.topics) as collector:
            await collector.wait_for(
                lambda c: any(e["type"] == "floor.called" for e in c.public), timeout=60
            )
            floor = next(e for e in collector.public if e["type"] == "floor.called")
        assert floor["historical"] is True
        assert floor["data"]["hold"] is None
        assert floor["by"] == {"person": "ann", "role": "dealer"}


async def test_a_disputed_award_holds_the_hand_until_the_floor_rules_floor_call(
    table: Table, broker: Broker
) -> None:
    async with (
        Collector(broker, table.daemon.topics) as collector,
        station_running(table.config) as running,
    ):
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        hand_id = await play_hand(running, award=False)
        proposed = await running.view()
        assert "Push award" in [b.label for b in pad(proposed).buttons]
        # a player disputes the award: the dealer calls the floor from the award's panel
        called = await running.post("/api/floor", {"reason": "the award is disputed"})
        assert called.status_code == 200, called.text
        held = await running.until_view(lambda v: (hand_in(v) or {}).get("holds"), "the hold")
        (hold,) = held["table"]["hand"]["holds"]
        assert (hold["rule"], hold["ruling"], hold["reason"]) == (
            "FLOOR-CALL",
            "continue",
            "the award is disputed",
        )
        assert hold["dealer_may_confirm"] is False
        floor = [e for e in table.events() if e["type"] == "floor.called"]
        assert [(e["data"]["hold"], e["data"]["rule"], e["by"]) for e in floor] == [
            (hold["id"], "FLOOR-CALL", {"person": "ann", "role": "dealer"})
        ]
        await collector.wait_for(lambda c: any(e["type"] == "floor.called" for e in c.public))
        # the station shows the hand held, waiting for the floor: no Push award on its panel
        shown = await running.view()
        assert shown["table"]["hand"]["holds"][0]["may_rule"] is False
        panel = pad(shown)
        assert panel.mode == "held"
        assert panel.note.startswith("The floor is called")
        assert "Push award" not in [b.label for b in panel.buttons]
        (listed,) = holds(shown)
        assert [b.label for b in listed.buttons] == ["Call the floor"]
        # pushed all the same, the daemon refuses it with the reason; the dealer cannot rule
        before = len(table.events())
        push = await running.post("/api/award")
        assert push.status_code == 409, push.text
        assert push.json()["error"] == (
            f"the hand is held ({hold['id']}, FLOOR-CALL: the award is disputed): "
            "confirm, reject or override it first"
        )
        confirm = await running.post(f"/api/holds/{hold['id']}/confirm")
        assert confirm.status_code == 403
        assert confirm.json()["error"] == "FLOOR-CALL is the floor's ruling: call the floor"
        assert "pot.awarded" not in [e["type"] for e in table.events()[before:]]
        # the floor confirms (a signed floor command, as the pit's console sends it)
        ruled = await table.request("confirm", hold=hold["id"])
        assert ruled["status"] == "ok", ruled
        await running.until_view(
            lambda v: not (hand_in(v) or {}).get("holds"), "the floor's ruling"
        )
        resumed = [e for e in table.events() if e["type"] == "hand.resume"][-1]
        assert resumed["by"] == {"person": "rig floor supervisor", "role": "floor"}
        assert resumed["data"]["rule"] == "FLOOR-CALL"
        assert await push_the_award(running) == hand_id
    kinds = [e["type"] for e in table.events() if e.get("hand_id") == hand_id]
    assert kinds[-2:] == ["pot.awarded", "hand.completed"]


async def push_the_award(running: Running) -> str:
    """Push the award of the hand in play (and confirm the losers killed, RR-SD-4, where the
    house lets the dealer): the hand's id."""
    view = await running.view()
    hand_id = str(view["table"]["hand"]["hand_id"])
    push = await running.post("/api/award")
    assert push.status_code == 200, push.text
    await running.until_view(lambda v: bool((hand_in(v) or {"holds": 1})["holds"]), "the push")
    hand = hand_in(await running.view())
    if hand is not None:  # RR-SD-4: the losing hands are not in the muck yet
        (hold,) = hand["holds"]
        assert hold["rule"] == "RR-SD-4", hold
        answer = await running.post(f"/api/holds/{hold['id']}/confirm")
        assert answer.status_code == 200, answer.text
        await running.until_view(lambda v: hand_in(v) is None, "the hand's end")
    return hand_id


async def test_a_hold_the_house_names_is_the_dealers_to_confirm_seat_count(
    tmp_path: Path, broker: Broker
) -> None:
    table = make_table(
        tmp_path / "table",
        broker,
        table_extra='house_rules = { dealer_may_confirm = ["SEAT-COUNT"] }\n',
    )
    table.daemon.start()
    try:
        async with station_running(table.config) as running:
            assert (await running.login("ann", PINS["ann"])).status_code == 200
            assert (await running.post("/api/hand/start")).status_code == 200
            await running.until_view(lambda v: "options" in (hand_in(v) or {}), "the betting")
            assert (await table.request("hold", rule="SEAT-COUNT", seat=2))["status"] == "ok"
            view = await running.until_view(lambda v: (hand_in(v) or {}).get("holds"), "the hold")
            hold = view["table"]["hand"]["holds"][0]
            assert hold["dealer_may_confirm"] is True
            answer = await running.post(f"/api/holds/{hold['id']}/confirm")
            assert answer.status_code == 200, answer.text
            resumed = [e for e in table.events() if e["type"] == "hand.resume"]
            assert resumed[-1]["by"] == {"person": "ann", "role": "dealer"}
    finally:
        table.daemon.close()


async def test_the_live_stream_sends_the_state_as_it_changes(table: Table) -> None:
    async with station_running(table.config) as running:
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        states: list[dict[str, Any]] = []
        async with running.client.stream("GET", "/api/stream") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.aiter_lines()

            async def next_state() -> dict[str, Any]:
                async for line in lines:
                    if line.startswith("data: "):
                        state: dict[str, Any] = json.loads(line[6:])
                        states.append(state)
                        return state
                raise AssertionError("the stream ended")

            first = await next_state()
            assert first["dealer"]["id"] == "ann"
            assert (await running.client.get("/healthz")).json()["live"] == 1
            assert "hand" not in first["view"]["table"]
            assert (await running.post("/api/hand/start")).status_code == 200
            while "hand" not in (await next_state())["view"]["table"]:
                pass
        assert states[-1]["view"]["table"]["hand"]["hand_id"] == "T1-00001"

        async def live() -> int:
            return int((await running.client.get("/healthz")).json()["live"])

        # the closed stream's slot is freed once the server sees the client go
        async with asyncio.timeout(30):
            while await live() != 0:
                await asyncio.sleep(0.1)


async def test_healthz_says_whether_the_table_is_in_reach(table: Table) -> None:
    async with station_running(table.config) as running:
        answer = await running.client.get("/healthz")
        assert answer.status_code == 200
        assert answer.json() == {"status": "ok", "table": "T1", "daemon": "connected", "live": 0}
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        table.daemon.kill()
        await until(lambda: not running.station.link.connected, 30, "the watch to break")
        assert (await running.client.get("/healthz")).json()["daemon"] == "unreachable"
        assert (await running.login("ann", PINS["ann"])).status_code == 200
        refused = await running.post("/api/hand/start")
        assert refused.status_code == 503
        assert refused.json()["error"].startswith("the table is out of reach")
