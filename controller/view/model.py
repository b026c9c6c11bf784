"""A picture of the table folded from its events, for the live view.

The view knows only what the events say: it is what a pit or surveillance screen could build
from the MQTT stream. Fed the surveillance stream it shows hole cards; fed the public stream it
shows what the pit may see.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SeatView:
    """One seat as the screen shows it."""

    stack: int = 0
    bet: int = 0
    cards: list[str] = field(default_factory=list)
    status: str = ""  # folded, dead, all in, mucked, tabled, winner
    category: str = ""


@dataclass
class TableView:
    """The table as the events describe it."""

    table_id: str = ""
    hand_id: str | None = None
    dealt: int = 0  # hands started
    hands: int = 0  # hands completed (a misdeal or a void is dealt, not completed)
    button: int | None = None
    seats: dict[int, SeatView] = field(default_factory=dict)
    board: list[str] = field(default_factory=list)
    pot: int = 0
    street: str = ""
    hold: str = ""
    devices: dict[str, str] = field(default_factory=dict)
    log: deque[str] = field(default_factory=lambda: deque(maxlen=14))
    irregularities: int = 0

    def apply(self, env: Mapping[str, Any]) -> None:
        """Fold one event envelope into the view."""
        kind = env["type"]
        data = env.get("data", {})
        self.table_id = env.get("table_id", self.table_id)
        self.hand_id = env.get("hand_id") or self.hand_id
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, data)
        if env.get("rules") or kind.startswith(
            ("hand.", "pot.", "board.", "irregularity", "integrity")
        ):
            self.log.append(_line(env))
        if env.get("rules") and kind in _IRREGULAR:
            self.irregularities += 1


_IRREGULAR = {
    "irregularity.detected",
    "integrity.alarm",
    "hand.hold",
    "hand.misdeal",
    "hand.void",
    "card.exposed",
    "board.premature",
    "board.redeal.required",
    "seat.hand.dead",
}


#: The data fields the event panel shows, in this order.
_BRIEF = ("seat", "street", "reason", "card", "cards", "payouts", "order")


def _line(env: Mapping[str, Any]) -> str:
    rules = ",".join(env.get("rules", []))
    data = env.get("data", {})
    brief = "  ".join(
        f"{key} {_shown(data[key])}" for key in _BRIEF if data.get(key) not in (None, [], {}, "")
    )
    return f"{env.get('seq', ''):>5} {env['type']:<24} {rules:<20} {brief}"


def _shown(value: Any) -> str:
    """A data value as a person reads it: cards and seats separated by spaces, a mapping as
    ``key:value`` pairs (payouts: seat:chips), never Python's own notation."""
    if isinstance(value, Mapping):
        return " ".join(f"{k}:{_shown(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return " ".join(_shown(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _started(view: TableView, data: Mapping[str, Any]) -> None:
    view.dealt += 1
    view.button = data.get("button")
    view.board = []
    view.pot = 0
    view.street = "preflop"
    view.hold = ""
    view.seats = {int(s): SeatView(stack=c) for s, c in data.get("stacks", {}).items()}


def _action(view: TableView, data: Mapping[str, Any]) -> None:
    seat = view.seats.get(data.get("seat", 0))
    if seat is None:
        return
    seat.stack = data.get("stack", seat.stack)
    if data.get("action") == "post":
        seat.bet += data.get("amount", 0)
        view.pot += data.get("amount", 0)
    else:
        seat.bet = data.get("to", seat.bet)
        view.pot = data.get("pot", view.pot)
    if data.get("action") == "fold":
        seat.status = "folded"
    elif data.get("all_in"):
        seat.status = "all in"


def _round_closed(view: TableView, data: Mapping[str, Any]) -> None:
    view.pot = data.get("pot", view.pot)
    for seat_id, chips in data.get("returned", {}).items():
        seat = view.seats.get(int(seat_id))
        if seat:
            seat.stack += chips
    for seat in view.seats.values():
        seat.bet = 0


def _delivered(view: TableView, data: Mapping[str, Any]) -> None:
    seat = view.seats.get(data.get("seat", 0))
    if seat is not None and "cards" in data:
        seat.cards = (
            seat.cards + list(data["cards"]) if data.get("replacement") else list(data["cards"])
        )


def _board(view: TableView, data: Mapping[str, Any]) -> None:
    view.board = list(data.get("board", view.board))
    view.street = data.get("street", view.street)


def _tabled(view: TableView, data: Mapping[str, Any]) -> None:
    seat = view.seats.get(data.get("seat", 0))
    if seat is not None:
        seat.cards = list(data.get("cards", seat.cards))
        seat.status = "tabled"
        seat.category = data.get("category", "")


def _mucked(view: TableView, data: Mapping[str, Any]) -> None:
    seat = view.seats.get(data.get("seat", 0))
    if seat is not None:
        seat.status = "mucked"


def _dead(view: TableView, data: Mapping[str, Any]) -> None:
    seat = view.seats.get(data.get("seat", 0))
    if seat is not None:
        seat.status = f"dead ({data.get('reason', '')})"


def _awarded(view: TableView, data: Mapping[str, Any]) -> None:
    for seat_id, chips in data.get("payouts", {}).items():
        seat = view.seats.get(int(seat_id))
        if seat is not None:
            seat.stack += chips
            seat.status = "winner"
    view.pot = 0


def _completed(view: TableView, data: Mapping[str, Any]) -> None:
    view.hands += 1
    for seat_id, chips in data.get("stacks", {}).items():
        seat = view.seats.setdefault(int(seat_id), SeatView())
        seat.stack = chips
    view.street = "complete"


def _ended(view: TableView, data: Mapping[str, Any]) -> None:
    view.street = "misdeal" if "button" in data else "void"
    view.hold = ""
    view.pot = 0
    for seat_id, chips in data.get("returned", {}).items():
        seat = view.seats.get(int(seat_id))
        if seat is not None:
            seat.stack += chips
            seat.bet = 0


def _hold(view: TableView, data: Mapping[str, Any]) -> None:
    view.hold = f"{data.get('rule', '')}: {data.get('reason', '')}"


def _resume(view: TableView, data: Mapping[str, Any]) -> None:
    view.hold = ""


def _device(view: TableView, data: Mapping[str, Any]) -> None:
    name = data.get("device", "?")
    if "health" in data:
        view.devices[name] = str(data["health"])
    elif "fault" in data:
        view.devices[name] = f"fault {data['fault']}"
    elif "cleared" in data:
        view.devices[name] = "online"


_HANDLERS = {
    "hand.started": _started,
    "betting.action": _action,
    "betting.round.closed": _round_closed,
    "deal.group.delivered": _delivered,
    "board.dealt": _board,
    "showdown.hand.tabled": _tabled,
    "showdown.hand.mucked": _mucked,
    "seat.hand.dead": _dead,
    "pot.awarded": _awarded,
    "hand.completed": _completed,
    "hand.misdeal": _ended,
    "hand.void": _ended,
    "hand.hold": _hold,
    "hand.resume": _resume,
    "device.status": _device,
}
