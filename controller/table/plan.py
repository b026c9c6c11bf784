"""What the table needs from the shuffler next: the core's answer to "dispense what now?".

In hand-forming (dealer-assist) mode the host asks the shuffler for each group. The shell calls
:func:`next_dispense` after every input and, when it answers and that request is not already
outstanding, sends it to the shuffler. Keeping this here keeps the pace of the deal a pure
function of the state: one hole group at a time, each after the previous one was read; a
replacement card when one is owed; then the burn and the street once the betting round is over
(no burn where the rules say so, or when an exposed or extra card is the burn). Nothing is asked
while the hand is held, while the deck must be counted again or the stub reshuffled, or once the
board is dealt by hand.
"""

from __future__ import annotations

from typing import NamedTuple

from controller.table.inputs import Purpose
from controller.table.state import Phase, TableState
from controller.table.streets import STREETS, Street


class DispenseRequest(NamedTuple):
    """One group to ask the shuffler for: its purpose, the seat (hole groups) and its size."""

    purpose: Purpose
    seat: int | None
    size: int


def next_dispense(state: TableState) -> DispenseRequest | None:
    """The next group the hand needs from the shuffler, or None (nothing, or wait)."""
    hand = state.hand
    if (
        hand is None
        or hand.irregular.holds
        or hand.deal.recheck
        or hand.deal.reshuffle_due
        or hand.deal.manual_board
        or hand.deal.pending
    ):
        return None
    if hand.deal.shuffle_id is None and not state.deck.ready:
        return None
    owed = next((seat for seat, n in sorted(hand.deal.owed.items()) if n), None)
    if owed is not None:
        return DispenseRequest(Purpose.EXTRA, owed, 1)
    if hand.phase is Phase.DEALING:
        if hand.deal.hole_groups < len(hand.order):
            return DispenseRequest(Purpose.HOLE, hand.deal_order[hand.deal.hole_groups], 2)
        return None
    if hand.phase is not Phase.BOARD or hand.street is Street.RIVER:
        return None
    street = Street(hand.street + 1)
    deal = STREETS[street]
    needs_burn = (
        street not in hand.board_rulings.no_burn
        and street not in hand.board_rulings.burn_for
        and hand.board_rulings.next_burn is None
    )
    if needs_burn and not state.profile.board_group_includes_burn:
        return DispenseRequest(Purpose.BURN, None, 1)
    dealt = max(len(hand.cards.board) - deal.start, 0)
    size = deal.cards - dealt + (1 if needs_burn else 0)
    assert deal.purpose is not None
    return DispenseRequest(deal.purpose, None, size) if size > 0 else None
