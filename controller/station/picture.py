"""The station's table as the shared drawing's model
(:class:`controller.view.drawing.TableDrawing`), from the station's view of the daemon's table
(:meth:`controller.station.station.Station.state`).

The view says everything the drawing shows, in the core's own terms: each seat's stack, its bet
in this round, its status and how many cards it holds (their faces once tabled), the button,
the seat to act, the pots in the middle (the core's :func:`controller.game.pots.build_pots` over
what the rounds before this one left there), the board and the holds. So the same picture as the
floor console's table page (:mod:`controller.pit.console.picture`), drawn by the same
:func:`controller.view.svg.table_svg`, every chip once: in front of its seat or in a pot.

What cannot be drawn (a seat number no table has, a card that is not a card) is left out rather
than failing the page; a view of another shape than the daemon sends is the daemon's bug, and the
screen must still show the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.cards import is_card
from controller.view.drawing import (
    BOARD_CARDS,
    MAX_PLACES,
    MIN_PLACES,
    HoldMark,
    PotDrawing,
    SeatDrawing,
    SeatState,
    TableDrawing,
)

#: The view's seat statuses as the drawing says them (folded, dead and mucked hands are out).
STATES = {
    "live": SeatState.PLAYING,
    "all_in": SeatState.ALL_IN,
    "folded": SeatState.FOLDED,
    "dead": SeatState.FOLDED,
    "mucked": SeatState.FOLDED,
    "out": SeatState.SITTING_OUT,
}
#: The most cards a seat is drawn with (two, and one on its way).
SEAT_CARDS = 4


def drawing_of(view: Mapping[str, Any], names: Mapping[int, str] | None = None) -> TableDrawing:
    """The drawing of the station's ``view`` (``names``: the players' names by seat, as the
    dealer set them)."""
    table = view.get("table") or {}
    hand = table.get("hand") if isinstance(table.get("hand"), Mapping) else None
    names = names or {}
    seats = []
    for key, entry in sorted(table.get("seats", {}).items(), key=lambda kv: _seat(kv[0]) or 0):
        number = _seat(key)
        if number is None or not isinstance(entry, Mapping):
            continue
        seats.append(_seat_drawing(number, entry, hand is not None, names.get(number, "")))
    occupied = {s.seat for s in seats}
    places = max([MIN_PLACES, *occupied])
    button = _seat(table.get("button"))
    caption = "no hand in progress"
    pots: tuple[PotDrawing, ...] = ()
    board: tuple[str, ...] = ()
    holds: tuple[HoldMark, ...] = ()
    to_act = None
    if hand is not None:
        street = hand.get("street")
        phase = hand.get("phase")
        caption = " · ".join(
            str(part)
            for part in (f"hand {hand.get('hand_id')}", phase, street if street != phase else None)
            if part
        )
        pots = tuple(
            PotDrawing(p["amount"], tuple(s for s in p.get("eligible", ()) if s in occupied))
            for p in hand.get("pots", ())
            if _chips(p.get("amount"))
        )
        board = tuple(str(c) for c in hand.get("board", ()) if is_card(str(c)))[:BOARD_CARDS]
        holds = tuple(
            HoldMark(
                str(h.get("rule")),
                str(h.get("reason") or h.get("ruling") or ""),
                h.get("seat") if h.get("seat") in occupied else None,
            )
            for h in hand.get("holds", ())
        )
        to_act = hand.get("to_act") if hand.get("to_act") in occupied else None
    return TableDrawing(
        f"Table {table.get('table_id', '')}".strip(),
        tuple(seats),
        places=places,
        caption=caption,
        button=button if button is not None and button <= places else None,
        to_act=to_act,
        pots=pots,
        board=board,
        holds=holds,
    )


def _seat_drawing(number: int, entry: Mapping[str, Any], running: bool, name: str) -> SeatDrawing:
    status = entry.get("status")
    state = STATES.get(str(status), SeatState.SITTING_OUT) if running else SeatState.SEATED
    shown = [str(c) for c in entry.get("shown", ()) if is_card(str(c))]
    count = _chips(entry.get("cards")) or 0
    cards: tuple[str | None, ...] = tuple(shown) or (None,) * count
    bet = entry.get("bet")
    return SeatDrawing(
        number,
        name=name,
        stack=entry["stack"] if _chips(entry.get("stack")) is not None else None,
        bet=bet if _chips(bet) else None,
        cards=cards[:SEAT_CARDS],
        state=state,
    )


def _seat(value: Any) -> int | None:
    """A seat number of the drawing (None: not one)."""
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_PLACES:
        return value
    return None


def _chips(value: Any) -> int | None:
    """A number of chips (None: not one, or negative)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
