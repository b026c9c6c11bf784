"""A picture of the table folded from its events, for the live view.

The view knows only what the events say: it is what a pit or surveillance screen could build
from the MQTT stream. Fed the surveillance stream it shows hole cards; fed the public stream it
shows what the pit may see.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.table import event_types as et
from controller.table.decoder import decode
from controller.table.events import EventData
from controller.table.inputs import ActionKind


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
        record = decode(env)
        kind = record.type
        self.table_id = env.get("table_id", self.table_id)
        self.hand_id = env.get("hand_id") or self.hand_id
        handler = _HANDLERS.get(type(record))
        if handler is not None:
            handler(self, record)
        if env.get("rules") or kind.startswith(
            ("hand.", "pot.", "board.", "irregularity", "integrity")
        ):
            self.log.append(_line(env))
        if env.get("rules") and isinstance(record, _IRREGULAR):
            self.irregularities += 1


#: The events that tell of an irregularity (counted when they cite a rule).
_IRREGULAR = (
    et.IrregularityDetected,
    et.IntegrityAlarm,
    et.HandHold,
    et.HandMisdeal,
    et.HandVoid,
    et.CardExposed,
    et.BoardPremature,
    et.BoardRedealRequired,
    et.SeatHandDead,
)


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


def _started(view: TableView, e: et.HandStarted) -> None:
    view.dealt += 1
    view.button = e.button
    view.board = []
    view.pot = 0
    view.street = "preflop"
    view.hold = ""
    view.seats = {int(s): SeatView(stack=c) for s, c in e.stacks.items()}


def _action(view: TableView, e: et.BettingAction) -> None:
    seat = view.seats.get(e.seat)
    if seat is None:
        return
    seat.stack = e.stack
    if e.action is ActionKind.POST:
        seat.bet += e.amount or 0
        view.pot += e.amount or 0
    else:
        seat.bet = e.to if e.to is not None else seat.bet
        view.pot = e.pot if e.pot is not None else view.pot
    if e.action is ActionKind.FOLD:
        seat.status = "folded"
    elif e.all_in:
        seat.status = "all in"


def _round_closed(view: TableView, e: et.BettingRoundClosed) -> None:
    view.pot = e.pot
    _return(view, e.returned or {})
    for seat in view.seats.values():
        seat.bet = 0


def _return(view: TableView, returned: Mapping[str, int]) -> None:
    for seat_id, chips in returned.items():
        seat = view.seats.get(int(seat_id))
        if seat is not None:
            seat.stack += chips
            seat.bet = 0


def _delivered(view: TableView, e: et.DealGroupDelivered) -> None:
    seat = view.seats.get(e.seat)
    if seat is not None and e.cards is not None:
        seat.cards = seat.cards + list(e.cards) if e.replacement else list(e.cards)


def _board(view: TableView, e: et.BoardDealt) -> None:
    view.board = list(e.board)
    view.street = e.street


def _tabled(view: TableView, e: et.ShowdownHandTabled) -> None:
    seat = view.seats.get(e.seat)
    if seat is not None:
        seat.cards = list(e.cards)
        seat.status = "tabled"
        seat.category = e.category or ""


def _mucked(view: TableView, e: et.ShowdownHandMucked) -> None:
    seat = view.seats.get(e.seat)
    if seat is not None:
        seat.status = "mucked"


def _dead(view: TableView, e: et.SeatHandDead) -> None:
    seat = view.seats.get(e.seat)
    if seat is not None:
        seat.status = f"dead ({e.reason})"


def _awarded(view: TableView, e: et.PotAwarded) -> None:
    for seat_id, chips in e.payouts.items():
        seat = view.seats.get(int(seat_id))
        if seat is not None:
            seat.stack += chips
            seat.status = "winner"
    view.pot = 0


def _completed(view: TableView, e: et.HandCompleted) -> None:
    view.hands += 1
    for seat_id, chips in e.stacks.items():
        seat = view.seats.setdefault(int(seat_id), SeatView())
        seat.stack = chips
    view.street = "complete"


def _misdeal(view: TableView, e: et.HandMisdeal) -> None:
    _ended(view, "misdeal", e.returned)


def _void(view: TableView, e: et.HandVoid) -> None:
    _ended(view, "void", e.returned)


def _ended(view: TableView, street: str, returned: Mapping[str, int]) -> None:
    view.street = street
    view.hold = ""
    view.pot = 0
    _return(view, returned)


def _hold(view: TableView, e: et.HandHold) -> None:
    view.hold = f"{e.rule}: {e.reason}"


def _resume(view: TableView, e: et.HandResume) -> None:
    view.hold = ""


def _device(view: TableView, e: et.DeviceStatus) -> None:
    if e.health is not None:
        view.devices[e.device] = e.health
    elif e.fault is not None:
        view.devices[e.device] = f"fault {e.fault}"
    elif e.cleared is not None:
        view.devices[e.device] = "online"


_HANDLERS: dict[type[EventData], Callable[[TableView, Any], None]] = {
    et.HandStarted: _started,
    et.BettingAction: _action,
    et.BettingRoundClosed: _round_closed,
    et.DealGroupDelivered: _delivered,
    et.BoardDealt: _board,
    et.ShowdownHandTabled: _tabled,
    et.ShowdownHandMucked: _mucked,
    et.SeatHandDead: _dead,
    et.PotAwarded: _awarded,
    et.HandCompleted: _completed,
    et.HandMisdeal: _misdeal,
    et.HandVoid: _void,
    et.HandHold: _hold,
    et.HandResume: _resume,
    et.DeviceStatus: _device,
}
