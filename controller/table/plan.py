"""What the table needs from the shuffler next: the core's answer to "dispense what now?".

In hand-forming (dealer-assist) mode the host asks the shuffler for each group. The shell calls
:func:`next_dispense` after every input and, when it answers and that request is not already
outstanding, sends it to the shuffler. Keeping this here keeps the pace of the deal a pure
function of the state: one hole group at a time, each after the previous one was delivered, then
the burn and the street once the betting round is over.
"""

from __future__ import annotations

from typing import NamedTuple

from controller.table.betting import Street
from controller.table.inputs import Purpose
from controller.table.state import Phase, TableState

_STREET_PURPOSE = {
    Street.FLOP: Purpose.FLOP,
    Street.TURN: Purpose.TURN,
    Street.RIVER: Purpose.RIVER,
}
_STREET_SIZE = {Street.FLOP: 3, Street.TURN: 1, Street.RIVER: 1}


class DispenseRequest(NamedTuple):
    """One group to ask the shuffler for: its purpose, the seat (hole groups) and its size."""

    purpose: Purpose
    seat: int | None
    size: int


def next_dispense(state: TableState) -> DispenseRequest | None:
    """The next group the hand needs from the shuffler, or None (nothing, or wait)."""
    hand = state.hand
    if hand is None or not state.deck.ready or hand.pending:
        return None
    if hand.phase is Phase.DEALING:
        if hand.hole_groups < len(hand.order):
            return DispenseRequest(Purpose.HOLE, hand.deal_order[hand.hole_groups], 2)
        return None
    if hand.phase is Phase.BOARD:
        street = Street(hand.street + 1)
        burns_needed = street  # one burn before each street
        if len(hand.burns) < burns_needed:
            if state.profile.board_group_includes_burn:
                return DispenseRequest(_STREET_PURPOSE[street], None, _STREET_SIZE[street] + 1)
            return DispenseRequest(Purpose.BURN, None, 1)
        return DispenseRequest(_STREET_PURPOSE[street], None, _STREET_SIZE[street])
    return None
