"""The house-money and blind-structure keys of a profile: bad values are named, in one line."""

from __future__ import annotations

from typing import Any

import pytest

from controller.game.rake import take
from controller.profiles import ProfileError, RakeMode, load_profile


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"rake.mode": "pot"}, "rake.mode = 'pot' needs rake.percent above 0"),
        ({"rake.mode": "time"}, "rake.mode = 'time' needs rake.time_amount above 0"),
        ({"rake.percent": 150}, "rake.percent: Input should be less than or equal to 100"),
        ({"rake.chip_unit": 0}, "rake.chip_unit: Input should be greater than or equal to 1"),
        ({"rake.pots": "side"}, "rake.pots: Input should be 'main' or 'all'"),
        ({"ante.kind": "small_blind"}, "ante.kind: Input should be"),
        ({"straddle.mode": "sleeper"}, "straddle.mode: Input should be"),
        ({"straddle.max": 0}, "straddle.max: Input should be greater than or equal to 1"),
        ({"blinds.new_player": "free"}, "blinds.new_player: Input should be 'post' or 'wait'"),
        ({"rake.cap": -1}, "rake.cap: Input should be greater than or equal to 0"),
        (
            {"betting.structure": "no-limit"},
            "betting.structure: Input should be 'no_limit', 'pot_limit' or 'fixed_limit'",
        ),
        (
            {"betting": {"structure": "spread_limit"}},
            "betting.structure: Input should be 'no_limit', 'pot_limit' or 'fixed_limit'",
        ),
        (
            {"betting.structure": "fixed_limit", "betting.cap": 1},
            "betting.cap: Input should be greater than or equal to 2",
        ),
        (
            {"betting.cap": 5},
            "betting.cap = 5 caps fixed-limit betting only: betting.structure is 'no_limit'",
        ),
        ({"betting.limit": "pot"}, "betting.limit: Extra inputs are not permitted"),
    ],
)
def test_a_bad_house_money_key_is_named(overrides: dict[str, Any], problem: str) -> None:
    with pytest.raises(ProfileError, match="house rules of profile 'rrop-cash'") as caught:
        load_profile("rrop-cash").with_overrides(overrides)
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_shipped_profiles_take_no_rake_and_the_tournament_no_straddle() -> None:
    for name in ("de-charitable", "rrop-cash", "tda-tournament"):
        profile = load_profile(name)
        assert profile.rake_mode is RakeMode.NONE
        assert not profile.drops_from_pots
        assert not profile.run_twice_allowed
    assert load_profile("tda-tournament").straddle_mode == "none"


def test_a_percent_is_exact_and_the_cap_is_the_hands() -> None:
    profile = load_profile("rrop-cash").with_overrides(
        {"rake.mode": "pot", "rake.percent": 0.29, "rake.cap": 40}
    )
    # 0.29 % of 10 000 is 29 exactly, not 28.999…; the cap of 40 leaves 11 for the side pot
    assert take([10_000, 10_000], True, profile).rake == (29, 11)
