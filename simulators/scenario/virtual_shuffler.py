"""The shuffler as the scenario runners keep track of it: the deck's order, what was dealt.

In core mode the virtual shuffler *is* the shuffler: groups come off its order. In device mode
it is what the dealer knows of the real one: the order it loaded, checked against every group the
simulator deals. Either way it is what a stub reshuffle puts back (:func:`returned_cards`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from controller.cards import Card
from controller.deck_order import deck_order
from controller.table.decoder import record_of
from controller.table.event_types import StubReshuffleRequired
from controller.table.events import TableEvent
from controller.table.inputs import Purpose
from controller.table.tray import BOARD_PURPOSES
from simulators.errors import ScenarioError

DEFAULT_COUNTS = {
    Purpose.HOLE: 2,
    Purpose.BURN: 1,
    Purpose.FLOP: 3,
    Purpose.TURN: 1,
    Purpose.RIVER: 1,
    Purpose.BOARD_OTHER: 1,
    Purpose.EXTRA: 1,
}


class DealtGroup(NamedTuple):
    """A group the shuffler dispensed: what for, and its cards."""

    purpose: Purpose
    cards: list[Card]


@dataclass
class VirtualShuffler:
    """The shuffler as the core sees it: deck order, position, shuffle and group counters."""

    base_order: tuple[Card, ...]
    seed: int | None
    live_ids: bool
    order: tuple[Card, ...] = ()
    position: int = 0
    shuffle_id: int = 1000
    shuffles: int = 0
    group: int = 0
    last_group: list[Card] = field(default_factory=list)
    groups: dict[int, DealtGroup] = field(default_factory=dict)  # this deck's groups by number

    def next_order(self, order: list[str] | None, seed: int | None) -> tuple[Card, ...]:
        """The deck the next shuffle gives: explicit, seeded, or the scenario's (then reseeded)."""
        if order is not None or seed is not None:
            return deck_order(order, seed)
        if self.shuffles == 0:
            return self.base_order
        return deck_order(seed=(self.seed or 0) + self.shuffles)

    def shuffle(self, order: list[str] | None, seed: int | None) -> tuple[Card, ...]:
        """Load a new shuffled deck (:meth:`next_order`)."""
        self.order = self.next_order(order, seed)
        self.shuffles += 1
        self.shuffle_id += 1
        self.position = 0
        self.group = 0
        self.groups = {}
        return self.order

    def dispense(self, count: int, purpose: Purpose = Purpose.BOARD_OTHER) -> list[Card]:
        """The next ``count`` cards off the top, as a group for ``purpose``."""
        if self.position + count > len(self.order):
            raise ScenarioError(f"the shuffler has only {len(self.order) - self.position} cards")
        cards = list(self.order[self.position : self.position + count])
        return self.dealt(self.group + 1, purpose, cards)

    def dealt(self, group: int, purpose: Purpose, cards: list[Card]) -> list[Card]:
        """Group number ``group`` left the shuffler: the next ``len(cards)`` cards."""
        self.position += len(cards)
        self.group = group
        self.last_group = list(cards)
        self.groups[group] = DealtGroup(purpose, list(cards))
        return cards

    @property
    def remaining(self) -> int:
        """Cards left in the shuffler."""
        return len(self.order) - self.position


def returned_cards(
    events: list[TableEvent], groups: dict[int, DealtGroup], seen: set[Card]
) -> tuple[list[Card], set[int]]:
    """Every card the table sent back to the stub in ``events``, as the dealer gathers them,
    and the groups whose unread cards went back with them (they are spent).

    ``stub.reshuffle.required`` names the cards it read (``with``) and counts the board cards
    nobody read (``unread``): the dealer puts back every card of a board group (and of a group
    the table names) that was never read anywhere, as they are when the stub is reshuffled (one
    counted unread and turned since is named by a later event). The shuffler's count of the
    reshuffled stub is what checks the whole against the table's ``stub``.
    """
    back: list[Card] = []
    named: set[int] = set()
    unread = False
    for event in events:
        record = record_of(event)
        if not isinstance(record, StubReshuffleRequired):
            continue
        back.extend(c for c in record.back if c not in back)
        unread = unread or bool(event.data.get("unread"))
        named.update(event.data.get("unread_groups", ()))
    spent: set[int] = set()
    if unread:
        for number, group in sorted(groups.items()):
            if group.purpose in BOARD_PURPOSES or number in named:
                back.extend(c for c in group.cards if c not in seen and c not in back)
                spent.add(number)
    return back, spent
