"""``tablectl scenario from-phh``: hand histories with antes, straddles and rake play in the core
to where the history says."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from controller.cli import main
from controller.phh import hand_to_phh
from controller.profiles import AnteKind
from controller.rules.start import table_ante_seat
from simulators.autoplay import Style, random_table
from simulators.scenario.cli import envelopes
from simulators.scenario.core_runner import run_core
from simulators.scenario.expect import check
from simulators.scenario.model import parse_scenario
from simulators.scenario.phh_import import PhhImportError, phh_to_scenario
from tests.core.test_differential import Straddler
from tests.helpers import run_file

PHH = Path(__file__).resolve().parents[1] / "phh"


def play(text: str, **options: Any) -> tuple[dict[str, Any], list[str]]:
    """Turn PHH into a scenario, play it in the core; its house rules and the failures."""
    toml = phh_to_scenario(text, name="imported", **options)
    scenario = parse_scenario(toml, "imported.toml")
    run = run_core(scenario)
    verdict = check(envelopes(scenario, run.events), scenario.expect, scenario.expect_not)
    return scenario.scenario.house_rules, verdict.failures


@pytest.mark.parametrize(
    ("name", "rules"),
    [
        ("wsop-big-blind-ante", {"ante.kind": "big_blind"}),
        ("straddled-cash", {"straddle.mode": "utg", "straddle.max": 1}),
        ("mississippi-straddle", {"straddle.mode": "mississippi"}),
    ],
)
def test_a_hand_history_plays_to_its_finishing_stacks(name: str, rules: dict[str, Any]) -> None:
    text = (PHH / f"{name}.phh").read_text(encoding="utf-8")
    assert "finishing_stacks" in text
    house, failures = play(text)
    assert failures == []
    assert rules.items() <= house.items()


def test_a_history_that_ends_elsewhere_fails_its_expectation() -> None:
    text = (PHH / "straddled-cash.phh").read_text(encoding="utf-8")
    wrong = text.replace("finishing_stacks = [199,", "finishing_stacks = [198,")
    _, failures = play(wrong)
    assert failures
    assert "hand.completed" in failures[0]


def test_a_raked_history_plays_with_the_rake_given_as_house_rules() -> None:
    text = (PHH / "mississippi-straddle.phh").read_text(encoding="utf-8")
    raked = text.replace("finishing_stacks = [250, 495, 500, 765, 490]", "_rake = 25")
    rake = {"rake.mode": "pot", "rake.percent": 5, "rake.cap": 30}
    _, failures = play(raked, house_rules=rake)
    assert failures == []  # 5 % of the 500-chip pot
    _, failures = play(raked.replace("_rake = 25", "_rake = 24"), house_rules=rake)
    assert failures


def test_a_run_twice_history_plays_both_runouts() -> None:
    text = (PHH / "run-twice.phh").read_text(encoding="utf-8")
    house, failures = play(text)
    assert failures == []
    assert house["run_twice.allowed"] is True
    with pytest.raises(PhhImportError, match="_runouts = 2"):
        phh_to_scenario(text.replace("_runouts = 2", ""), name="twice")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (('variant = "NT"', 'variant = "FL"'), "this table plays NT"),
        (('"d dh p1 Qs9s"', '"d dh p1 ????"'), "hole cards are unknown"),
        (("[1, 2, 4, 0, 0, 0]", "[1, 2, 5, 0, 0, 0]"), "twice the blind before it"),
        (("[1, 2, 4, 0, 0, 0]", "[1, 2, 0, 4, 0, 0]"), "straddles this table cannot take"),
        (("antes = [0, 0, 0, 0, 0, 0]", "antes = [0, 0, 1, 0, 2, 0]"), "cannot post"),
    ],
)
def test_a_history_the_table_cannot_play_is_named(change: tuple[str, str], reason: str) -> None:
    text = (PHH / "straddled-cash.phh").read_text(encoding="utf-8").replace(*change)
    with pytest.raises(PhhImportError, match=reason):
        phh_to_scenario(text, name="bad")


def test_the_verb_writes_a_scenario_and_names_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hand.toml"
    source = str(PHH / "wsop-big-blind-ante.phh")
    assert main(["scenario", "from-phh", source, "--out", str(out), "--house", "rake.cap=5"]) == 0
    doc = tomllib.loads(out.read_text(encoding="utf-8"))
    assert doc["scenario"]["house_rules"]["rake.cap"] == 5
    assert doc["table"]["ante"] == 600
    bad = tmp_path / "bad.phh"
    bad.write_text('variant = "FL"\n', encoding="utf-8")
    assert main(["scenario", "from-phh", str(bad)]) == 2
    assert "this table plays NT" in capsys.readouterr().err


house_money = st.sampled_from(
    [
        {},
        {"ante.kind": "big_blind"},
        {"ante.kind": "button", "straddle.mode": "mississippi"},
        {"straddle.mode": "utg", "straddle.max": 3},
        {"rake.mode": "pot", "rake.percent": 10, "rake.cap": 5, "straddle.max": 2},
    ]
)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), house=house_money)
@example(seed=1076, house={})  # a big blind shorter than the blind: it posts what it has
@example(seed=4169587, house={})  # its ante first: the big blind left is short, nothing to call
def test_exported_hands_come_back_through_from_phh(seed: int, house: dict[str, Any]) -> None:
    """A hand played here, exported as PHH and imported again, ends with the same stacks."""
    rng = random.Random(seed)
    scenario = random_table(rng)
    rules = {"odd_chip.max_per_player": 0, **house}
    meta = scenario.scenario.model_copy(update={"house_rules": rules})
    dealer = Straddler(scenario.model_copy(update={"scenario": meta}), rng, Style(all_in=0.3))
    state = dealer.run.state
    assert dealer.play_hand()
    hand = dealer.run.state.last_hand
    assert hand is not None
    kind = state.profile.ante_kind
    text = hand_to_phh(
        hand,
        table_id="R",
        blinds=state.blinds,
        ante=state.ante,
        ante_seat=table_ante_seat(hand, kind) if kind is not AnteKind.EACH and state.ante else None,
    )
    rake = {k: v for k, v in house.items() if k.startswith("rake.")}
    _, failures = play(text, house_rules=rake)
    assert failures == []


@pytest.mark.parametrize("name", ["rule-RUN-TWICE.toml", "run-twice-from-the-flop.toml"])
def test_a_hand_run_twice_exports_both_runouts_and_comes_back(name: str) -> None:
    run = run_file(name)
    hand = run.state.last_hand
    assert hand is not None
    text = hand_to_phh(hand, table_id="T1", blinds=(1, 2), ante=1)
    doc = tomllib.loads(text)
    assert doc["_runouts"] == 2
    boards = [a for a in doc["actions"] if a.startswith("d db")]
    assert boards[:3] == ["d db 2s8h9c", "d db Kd", "d db 4c"]
    _, failures = play(text)
    assert failures == []
