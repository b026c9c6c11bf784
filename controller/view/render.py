"""Drawing the table view with rich."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from controller.view.model import TableView

_SUITS = {"s": ("♠", "white"), "h": ("♥", "red"), "d": ("♦", "red"), "c": ("♣", "white")}


def card_text(cards: list[str]) -> Text:
    """Cards with their suit symbols, red and black."""
    text = Text()
    for card in cards:
        symbol, colour = _SUITS.get(card[1:], ("?", "white"))
        text.append(f"{card[0]}{symbol} ", style=f"bold {colour}")
    return text


def render(view: TableView) -> RenderableType:
    """The whole screen: seats, board and pot, devices, and the event stream."""
    seats = Table(title=f"table {view.table_id}  ·  hand {view.hand_id or '-'}  ·  {view.street}")
    for column in ("seat", "", "stack", "bet", "cards", "status"):
        seats.add_column(column)
    for number, seat in sorted(view.seats.items()):
        seats.add_row(
            str(number),
            "D" if number == view.button else "",
            str(seat.stack),
            str(seat.bet or ""),
            card_text(seat.cards),
            f"{seat.status} {seat.category}".strip(),
        )
    board = Text("board  ")
    board.append_text(card_text(view.board))
    board.append(f"   pot {view.pot}")
    devices = "  ".join(f"{name}: {health}" for name, health in sorted(view.devices.items()))
    parts: list[RenderableType] = [seats, board, Text(f"devices  {devices or '-'}")]
    if view.hold:
        parts.append(Text(f"HELD  {view.hold}", style="bold yellow"))
    parts.append(
        Text(
            f"hands completed {view.hands} of {view.dealt} dealt   "
            f"irregularities {view.irregularities}"
        )
    )
    log = Panel("\n".join(view.log), title="events (seq, type, rules)")
    return Group(*parts, log)
