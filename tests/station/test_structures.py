"""The station at a pot-limit and at a fixed-limit table (docs/station.md, "The action pad"):
against a real table (tests/station/rig.py, its profile's ``betting.structure`` in its house
rules), the pad offers what the table's structure allows, the page says which structure it is,
and the station's own check refuses an amount before it is sent with the words the daemon's
judge gives for it (RR-PL, RR-BR-5/6, RR-BR-3/4): the same entry sent to the daemon straight
is refused in those words, citing the rule. And over random hands at such tables (the views the
core itself made, tests/station/screens_views.py), the station's check takes and refuses exactly
what the core's checker does, in its words, and the pad's sizes are the structure's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from controller.rules.menu import check_amount
from controller.station.legal import IllegalError, check_action
from controller.station.screens import facts, pad
from controller.table.inputs import ActionKind
from simulators.autoplay import Style
from tests.integration.broker import Broker
from tests.station.rig import PINS, Running, Table, make_table, station_running
from tests.station.screens_views import hand_states, station
from tests.station.test_pages import station_view
from tests.station.test_station_api import hand_in, requested


def structured(tmp_path: Path, broker: Broker, house: str) -> Iterator[Table]:
    """The rig's table (three seats of 100, blinds 1 and 2: seat 3 acts first) with ``house``."""
    made = make_table(
        tmp_path / "table",
        broker,
        table_extra=f'house_rules = {{ dealer_may_confirm = ["RR-SD-4"], {house} }}\n',
    )
    made.daemon.start()
    yield made
    made.daemon.close()


@pytest.fixture
def pot_limit(tmp_path: Path, broker: Broker) -> Iterator[Table]:
    yield from structured(tmp_path, broker, '"betting.structure" = "pot_limit"')


@pytest.fixture
def fixed_limit(tmp_path: Path, broker: Broker) -> Iterator[Table]:
    yield from structured(tmp_path, broker, '"betting.structure" = "fixed_limit"')


async def first_round(running: Running) -> dict[str, Any]:
    """Log in, start a hand, and the view once its first betting round waits for seat 3."""
    assert (await running.login("ann", PINS["ann"])).status_code == 200
    assert (await running.post("/api/hand/start")).status_code == 200
    return await running.until_view(
        lambda v: (
            (hand_in(v) or {}).get("phase") == "betting"
            and (hand_in(v) or {}).get("menu", {}).get("seat") == 3
        ),
        "the first betting round",
    )


async def page(running: Running) -> str:
    answer = await running.client.get("/")
    assert answer.status_code == 200
    return re.sub(r"\s+", " ", answer.text)


async def refused_alike(running: Running, table: Table, action: str, amount: int, rule: str) -> str:
    """The station refuses the entry before it sends it; the daemon, sent it straight,
    refuses it in the same words citing ``rule``. Those words."""
    before = len(table.events())
    answer = await running.post(f"/api/actions/{action}", {"amount": amount})
    assert answer.status_code == 409, answer.text
    words = str(answer.json()["error"])
    assert not requested(table.events()[before:])  # nothing was sent
    straight = await table.request("action", seat=3, action=action, amount=amount)
    assert (straight["status"], straight["error"]) == ("error", words)
    rejected = [e for e in table.events()[before:] if e["type"] == "command.rejected"]
    assert [(e["data"]["reason"], e["rules"]) for e in rejected] == [(words, [rule])]
    return words


async def test_rr_pl_the_station_refuses_a_raise_over_the_pot_in_the_cores_words(
    pot_limit: Table,
) -> None:
    async with station_running(pot_limit.config) as running:
        view = await first_round(running)
        assert view["table"]["betting"] == {"structure": "pot_limit"}
        pad = (await running.view())["table"]["hand"]["pad"]
        # blinds 1 and 2: call 2, then raise the pot of 5: at most to 7, the pad's "pot"
        assert (pad["min_to"], pad["max_to"]) == (4, 7)
        assert {"label": "pot", "to": 7} in pad["quick"]
        assert "allin" not in pad["actions"]  # all in for 100 is more than the pot
        html = await page(running)
        assert "<dt>Betting</dt><dd>Pot-limit</dd>" in html
        assert "Pot · 7" in html
        assert "a bet or raise is to 4 … 7" in html
        words = await refused_alike(running, pot_limit, "raise", 8, "RR-PL")
        assert words == "the most a pot-limit raise is to 7, not 8"
        before = len(pot_limit.events())
        assert (await running.post("/api/actions/raise", {"amount": 7})).status_code == 200
        (raised,) = [e for e in pot_limit.events()[before:] if e["type"] == "betting.action"]
        assert (raised["data"]["to"], raised["rules"]) == (7, ["DE-1548", "RR-PL"])


async def test_rr_br_5_6_the_station_offers_only_the_fixed_size(fixed_limit: Table) -> None:
    async with station_running(fixed_limit.config) as running:
        view = await first_round(running)
        assert view["table"]["betting"] == {"structure": "fixed_limit", "bets": [2, 4], "cap": 4}
        pad = (await running.view())["table"]["hand"]["pad"]
        assert (pad["min_to"], pad["max_to"], pad["quick"]) == (4, 4, [{"label": "fixed", "to": 4}])
        html = await page(running)
        assert "<dt>Betting</dt><dd>Fixed-limit 2 / 4, a bet and 3 raises</dd>" in html
        assert "Fixed · 4" in html
        assert "Pot ·" not in html
        assert "a bet or raise is to 4<" in html  # one size: no range
        words = await refused_alike(running, fixed_limit, "raise", 5, "RR-BR-5/6")
        assert words == "a fixed-limit raise is to 4, not 5"
        # a bet and three raises, three players who can bet: seat 3 may only call or fold
        for seat, to in ((3, 4), (1, 6), (2, 8)):
            answer = await running.post("/api/actions/raise", {"seat": seat, "amount": to})
            assert answer.status_code == 200, answer.text
            seq = max(e["seq"] for e in answer.json()["events"])
            await running.until_view(lambda v, seq=seq: v["seq"] >= seq, "the raise")
        view = await running.until_view(
            lambda v: (hand_in(v) or {}).get("menu", {}).get("seat") == 3, "seat 3's turn again"
        )
        assert view["table"]["hand"]["menu"]["actions"] == ["fold", "call"]
        assert view["table"]["hand"]["limits"]["raises"] == 4
        html = await page(running)
        assert "the betting is capped: call or fold" in html
        words = await refused_alike(running, fixed_limit, "raise", 10, "RR-BR-3/4")
        assert words == "the betting is capped at 4 bets and raises: seat 3 may only call or fold"


HOUSES = (
    {"betting.structure": "pot_limit"},
    {"betting.structure": "fixed_limit"},
    {"betting.structure": "fixed_limit", "betting.cap": 5},
)
RAISING = Style(fold=0.15, aggressive=0.55, all_in=0.3)


def stations_reason(
    table: dict[str, Any], seat: int, action: ActionKind, amount: int | None
) -> str | None:
    """None when the station would send the entry, else the reason it refuses it with."""
    try:
        check_action(table, seat, action.value, amount)
    except IllegalError as exc:
        return exc.reason
    return None


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**30), house=st.sampled_from(HOUSES))
def test_rr_pl_rr_br_5_6_the_stations_check_is_the_cores_at_every_turn(
    seed: int, house: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    at = station(tmp_path_factory.mktemp("structures"))
    fixed = house["betting.structure"] == "fixed_limit"
    turns = 0
    for daemon, state in hand_states(seed, 2, RAISING, house):
        view = station_view(at, daemon)
        words = dict(facts(view))["Betting"]
        assert words.startswith("Fixed-limit" if fixed else "Pot-limit")
        hand = view["table"].get("hand")
        shown = pad(view)
        if hand is None or shown.mode != "betting":
            continue
        turns += 1
        offered = hand["pad"]
        seat = offered["seat"]
        if offered["can_raise"]:
            low, high = offered["min_to"], offered["max_to"]
            if fixed:  # the one size, and nothing else
                assert (low, shown.quick) == (high, (("Fixed", high),))
            else:  # the largest quick size is the most: the pot after the call, or the stack
                assert max(to for _, to in shown.quick) == high
                assert dict(shown.quick).get("Pot", high) == high
        kind = ActionKind.RAISE if hand["round"]["current"] else ActionKind.BET
        amounts = {offered["min_to"] - 1, offered["min_to"], offered["max_to"]}
        amounts |= {offered["max_to"] + 1, offered["call_to"] + 1, *(to for _, to in shown.quick)}
        entries = [(kind, a) for a in amounts if a > 0] + [(ActionKind.ALLIN, None)]
        for action, amount in entries:
            core = check_amount(state, seat, action, amount)
            assert stations_reason(view["table"], seat, action, amount) == core, (action, amount)
    assume(turns > 0)  # a table of short stacks may be all in on the blinds
