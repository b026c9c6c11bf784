"""The four streets of Hold'em and what each deals: the one table every rule reads.

A street's board cards, where they start on the board, the shuffler purpose that deals them, and
the rule that a card of it turned too soon breaks (RR Hold'em 3-4) are written here once.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from controller.rules.ids import Rule
from controller.table.inputs import Purpose


class Street(IntEnum):
    """The four betting rounds of Hold'em."""

    PREFLOP = 0
    FLOP = 1
    TURN = 2
    RIVER = 3

    @property
    def label(self) -> str:
        """Lower-case name as events write it."""
        return STREETS[self].label


class StreetDeal(NamedTuple):
    """What one street puts on the board."""

    label: str
    cards: int  # board cards dealt for it
    start: int  # the board position of its first card
    purpose: Purpose | None  # the shuffler group that deals them
    premature: Rule | None  # its card turned before the round before it closed

    @property
    def board_after(self) -> int:
        """How many board cards are out once it is dealt."""
        return self.start + self.cards


STREETS: dict[Street, StreetDeal] = {
    Street.PREFLOP: StreetDeal("preflop", 0, 0, None, None),
    Street.FLOP: StreetDeal("flop", 3, 0, Purpose.FLOP, Rule.FLOP_PREM),
    Street.TURN: StreetDeal("turn", 1, 3, Purpose.TURN, Rule.TURN_PREM),
    Street.RIVER: StreetDeal("river", 1, 4, Purpose.RIVER, Rule.RIVER_PREM),
}
#: Every board card out: the river is dealt.
FULL_BOARD = STREETS[Street.RIVER].board_after
#: The street a shuffler board group is for, by its purpose.
STREET_OF: dict[Purpose, Street] = {
    deal.purpose: street for street, deal in STREETS.items() if deal.purpose is not None
}


_FOLLOWING = {street: Street(street + 1) for street in Street if street < Street.RIVER}


def following(street: Street) -> Street | None:
    """The street after ``street`` (None after the river)."""
    return _FOLLOWING.get(street)  # a lookup, not Street(n): an enum call costs a dozen
