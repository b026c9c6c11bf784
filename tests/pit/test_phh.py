"""The pit's PHH, written from a hand's stored events, says what the core's own export says."""

from __future__ import annotations

import random
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.envelope import envelope
from controller.phh import PhhError, hand_to_phh, table_phh
from controller.pit.phh import NoHistoryError, phh_from_events
from simulators.autoplay import AutoDealer, Style, random_table
from simulators.scenario.primitives import CoreRun
from tests.helpers import SCENARIOS, run_file

#: The shipped scenarios of the house's money and the blind structures: rake, jackpot drop, time,
#: straddles, table antes, missed blinds and hands run twice.
HOUSE_SCENARIOS = sorted(
    path.name
    for pattern in (
        "house-*.toml",
        "straddle-*.toml",
        "run-twice-*.toml",
        "missed-blinds-*.toml",
        "ante-*.toml",
        "rule-HOUSE-*.toml",
        "rule-STRADDLE.toml",
        "rule-RUN-TWICE.toml",
        "rule-ANTE-TABLE.toml",
        "rule-MISSED-BLINDS.toml",
        "rule-RR-BR-3-4-*.toml",  # fixed-limit: FT
    )
    for path in SCENARIOS.glob(pattern)
)


def _envelopes(events: list, table: str, hand_id: str, *, secure: bool) -> list[dict]:  # type: ignore[type-arg]
    return [
        envelope(e, table_id=table, epoch="e", seq=i, secure=secure)
        for i, e in enumerate(events, start=1)
        if e.hand_id == hand_id
    ]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_phh_from_the_secure_events_is_the_core_s_phh(seed: int) -> None:
    rng = random.Random(seed)
    scenario = random_table(rng)
    dealer = AutoDealer(scenario, rng, Style(fold=0.15, aggressive=0.3, all_in=0.3))
    assert dealer.play_hand()
    state = dealer.run.state
    hand = state.last_hand
    assert hand is not None
    table = scenario.table.id
    expected = hand_to_phh(hand, table_id=table, blinds=state.blinds, ante=state.ante)
    bodies = _envelopes(dealer.run.events, table, hand.hand_id, secure=True)
    assert phh_from_events(bodies) == expected


def core_phh(run: CoreRun) -> str:
    """What ``tablectl journal export --phh`` writes of a run's last hand."""
    return table_phh(run.state, "T1")


@pytest.mark.parametrize("name", HOUSE_SCENARIOS)
def test_house_money_and_blind_structures_are_the_core_s_phh(name: str) -> None:
    run = run_file(name)
    hand = run.state.last_hand
    assert hand is not None
    bodies = _envelopes(run.events, "T1", hand.hand_id, secure=True)
    assert phh_from_events(bodies) == core_phh(run)


def test_the_house_scenarios_cover_every_feature() -> None:
    """Each field the house's money adds is written by at least one of the scenarios."""
    fields = {"_rake", "_rake_pots", "_jackpot_drop", "_runouts"}
    written: set[str] = set()
    straddled = table_ante = False
    for name in HOUSE_SCENARIOS:
        run = run_file(name)
        hand = run.state.last_hand
        assert hand is not None
        doc = tomllib.loads(
            phh_from_events(_envelopes(run.events, "T1", hand.hand_id, secure=True))
        )
        written |= fields & doc.keys()
        straddled |= any(b > 2 for b in doc["blinds_or_straddles"])
        table_ante |= doc["ante_trimming_status"] is False and any(doc["antes"])
    assert written == fields
    assert straddled
    assert table_ante


def test_the_public_view_shows_tabled_cards_and_hides_the_rest() -> None:
    for seed in range(200):  # a hand where someone folded and someone tabled
        rng = random.Random(seed)
        scenario = random_table(rng)
        dealer = AutoDealer(scenario, rng, Style(fold=0.4, aggressive=0.1, all_in=0.0))
        assert dealer.play_hand()
        hand = dealer.run.state.last_hand
        assert hand is not None
        if hand.chips.folded and hand.showdown.tabled:
            break
    else:
        raise AssertionError("no hand with a fold and a showdown")
    table = scenario.table.id
    public = tomllib.loads(
        phh_from_events(_envelopes(dealer.run.events, table, hand.hand_id, secure=False))
    )
    secure = tomllib.loads(
        phh_from_events(_envelopes(dealer.run.events, table, hand.hand_id, secure=True))
    )
    assert public["finishing_stacks"] == secure["finishing_stacks"]
    position = {seat: f"p{i + 1}" for i, seat in enumerate(hand.order)}
    for seat in hand.order:
        line = next(a for a in public["actions"] if a.startswith(f"d dh {position[seat]} "))
        if seat in hand.showdown.tabled:
            assert line == f"d dh {position[seat]} {''.join(hand.deal.dealt[seat])}"
        elif seat in hand.chips.folded:
            assert line == f"d dh {position[seat]} ????"


def test_a_hand_not_completed_has_no_history() -> None:
    run = run_file("normal-hand-4-seats.toml")
    hand = run.state.last_hand
    assert hand is not None
    bodies = _envelopes(run.events, "T1", hand.hand_id, secure=True)
    unfinished = [b for b in bodies if b["type"] != "hand.completed"]
    with pytest.raises(NoHistoryError, match="not completed"):
        phh_from_events(unfinished)


def test_rr_pl_a_pot_limit_hand_has_no_phh_from_the_core_nor_from_the_pit() -> None:
    """PHH has no variant for pot-limit hold'em (phh-std, "Required fields"): both exports say
    so rather than write it as no-limit."""
    run = run_file("rule-RR-PL-pot-limit-hand.toml")
    hand = run.state.last_hand
    assert hand is not None
    with pytest.raises(PhhError, match="pot-limit"):
        core_phh(run)
    bodies = _envelopes(run.events, "T1", hand.hand_id, secure=True)
    started = next(b for b in bodies if b["type"] == "hand.started")
    assert started["data"]["betting"] == "pot_limit"
    with pytest.raises(NoHistoryError, match="no variant for pot-limit hold'em"):
        phh_from_events(bodies)
