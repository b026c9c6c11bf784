from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cards import (
    STANDARD_DECK,
    CardError,
    card_code,
    card_from_code,
    parse_card,
)


def test_standard_deck_has_52_distinct_cards() -> None:
    assert len(STANDARD_DECK) == 52
    assert len(set(STANDARD_DECK)) == 52


@pytest.mark.parametrize(("code", "card"), [(0, "2c"), (21, "Td"), (24, "Kd"), (51, "As")])
def test_card_codes_match_tsp1(code: int, card: str) -> None:
    assert card_from_code(code) == card
    assert card_code(parse_card(card)) == code


@pytest.mark.parametrize("text", ["", "A", "Ax", "1s", "AsK", "joker", "11h"])
def test_parse_card_rejects_non_cards(text: str) -> None:
    with pytest.raises(CardError, match="not a card"):
        parse_card(text)


def test_parse_card_normalises_case_and_ten() -> None:
    assert parse_card("td") == "Td"
    assert parse_card("10h") == "Th"


@given(st.integers(min_value=0, max_value=51))
def test_code_round_trip(code: int) -> None:
    assert card_code(card_from_code(code)) == code


@pytest.mark.parametrize("code", [52, 53, 0xFD, 0xFE, 0xFF, -1])
def test_special_codes_are_not_cards(code: int) -> None:
    with pytest.raises(CardError):
        card_from_code(code)
