"""Which zones the hand can change now: where a reader should look first.

A reader that polls its antennas one after another (a FEIG line: an ISO 15693 inventory takes
163 ms an antenna, ``docs/protocols/feig-isc.md``) sees a card put down sooner the fewer antennas
it reads between two looks at that card's zone. The table tells every reader, after each input,
the zones where the hand can make a card arrive or depart next (:func:`zones_in_play`); a reader
reads those every sweep and the others less often. It is a hint, never a rule: a card put down
anywhere else is still seen, later, and judged the same.

* No hand: the muck and the shuffler's input (cards collected), and every zone still holding a
  card of the last hand.
* Hole cards going out (``dealing``): the seats dealt in, and the muck.
* A betting round (``betting``), the showdown and the award: the live hands' seats (a fold or a
  muck lifts their cards) and the muck.
* Waiting for the next street (``board``): the burn, the board and the muck.

Pure: a function of the table state alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.table.inputs import Zone, ZoneKind
from controller.table.state import HandState, Phase, TableState
from controller.table.tray import location

MUCK = Zone(ZoneKind.MUCK)
BURN = Zone(ZoneKind.BURN)
BOARD = Zone(ZoneKind.BOARD)
SHUFFLER_IN = Zone(ZoneKind.SHUFFLER_IN)


def _seats(seats: Iterable[int]) -> set[Zone]:
    return {Zone(ZoneKind.SEAT, seat) for seat in seats}


def _holding(hand: HandState) -> set[Zone]:
    """The zones where cards of ``hand`` lie."""
    zones = {location(hand, card) for card in hand.cards.where}
    return {zone for zone in zones if zone is not None}


def zones_in_play(state: TableState) -> frozenset[Zone]:
    """The zones where a card can arrive or depart next, as the hand stands."""
    hand = state.hand
    if hand is None:
        last = state.last_hand
        return frozenset({MUCK, SHUFFLER_IN, *(_holding(last) if last is not None else ())})
    if hand.phase is Phase.DEALING:
        return frozenset({MUCK, *_seats(hand.order)})
    if hand.phase is Phase.BOARD:
        return frozenset({MUCK, BURN, BOARD})
    return frozenset({MUCK, *_seats(hand.live)})
