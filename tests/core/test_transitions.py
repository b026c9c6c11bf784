"""Every phase change is a row of one table (controller/table/flow.py)."""

from __future__ import annotations

import pytest

from controller.table.flow import TRANSITIONS, Move, move
from controller.table.state import Phase
from tests.helpers import run_file


def test_every_move_has_a_row_and_the_award_is_the_only_way_to_the_push() -> None:
    assert set(TRANSITIONS) == set(Move)
    into_award = {m for m, rows in TRANSITIONS.items() if Phase.AWARD in rows.values()}
    assert into_award == {Move.POT_DECIDED}


def test_a_move_the_table_does_not_list_is_refused_as_a_bug() -> None:
    hand = run_file("normal-hand-4-seats.toml").state.last_hand
    assert hand is not None
    assert hand.phase is Phase.AWARD
    dealing = hand.copy()
    dealing.phase = Phase.DEALING
    with pytest.raises(AssertionError, match="no move ROUND_CLOSED from dealing"):
        move(dealing, Move.ROUND_CLOSED)
    betting = hand.copy()
    betting.phase = Phase.BETTING
    move(betting, Move.ROUND_CLOSED)
    assert betting.phase is Phase.BOARD
