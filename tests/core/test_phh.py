"""PHH export: completed hands load in pokerkit and replay to the same stacks."""

from __future__ import annotations

import random
import tomllib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pokerkit import HandHistory

from controller.phh import hand_to_phh
from simulators.autoplay import AutoDealer, Style, random_table
from tests.helpers import run_file


class _SeparatePots(HandHistory):
    """pokerkit configured to split every pot on its own (POT-SEP); see tests/oracle.py."""

    def create_state(self) -> Any:
        state = super().create_state()
        state.can_win_now = lambda player_index: True  # type: ignore[method-assign]
        return state


def replay(text: str) -> list[int]:
    history = _SeparatePots.loads(text)
    states = list(history)
    assert states
    state = states[-1]
    assert not state.status, "pokerkit did not finish the hand"
    return list(state.stacks)


def test_the_normal_hand_exports_to_phh() -> None:
    run = run_file("normal-hand-4-seats.toml")
    hand = run.state.last_hand
    assert hand is not None
    text = hand_to_phh(hand, table_id="T1", blinds=(1, 2), ante=0)
    doc = tomllib.loads(text)
    assert doc["variant"] == "NT"
    assert doc["seats"] == [1, 2, 3, 4]
    assert doc["actions"][:4] == ["d dh p1 AsKd", "d dh p2 7h7c", "d dh p3 2s9d", "d dh p4 QhJh"]
    assert "p3 cbr 6" in doc["actions"]
    assert "d db AhKh2c" in doc["actions"]
    assert doc["_burn_cards"] == ["3c", "5d", "4s"]
    assert doc["finishing_stacks"] == [194, 194, 194, 218]
    assert replay(text) == [194, 194, 194, 218]


@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_completed_hands_replay_in_pokerkit_to_the_same_stacks(seed: int) -> None:
    rng = random.Random(seed)
    scenario = random_table(rng)
    scenario = scenario.model_copy(
        update={
            "scenario": scenario.scenario.model_copy(
                update={"house_rules": {"odd_chip.max_per_player": 0}}
            )
        }
    )
    dealer = AutoDealer(scenario, rng, Style(fold=0.15, aggressive=0.3, all_in=0.3))
    assert dealer.play_hand()
    hand = dealer.run.state.last_hand
    assert hand is not None
    text = hand_to_phh(
        hand,
        table_id="R",
        blinds=dealer.run.state.blinds,
        ante=dealer.run.state.ante,
    )
    assert replay(text) == [dealer.run.state.stacks[s] for s in hand.order]
