"""The table drawn as one SVG: an oval, the seats in their places, cards as card faces, bets,
the button, whose turn it is, the pots, the board and the holds.

A pure function of :class:`~controller.view.drawing.TableDrawing`: no script draws it, so it
shows the same in any browser, and under a strict Content-Security-Policy (presentation
attributes only: no ``style`` attribute, no ``<style>``). It is an image to assistive
technology (``role="img"``) whose ``<title>`` and ``<desc>`` say in words all that it shows.
Every text is escaped, and characters XML cannot hold are replaced, whatever the model holds.

Nothing is said by colour alone: the seat whose turn it is has a thick outline, a "▶ TO ACT"
tag and a yellow name band; a folded, all-in or sitting-out seat says so in words; red suits
differ from black ones by their symbol too. Every text colour is given with the colour behind
it (:data:`TEXT_ROLES`), each pair at least 4.5:1 (WCAG 2.1 AA, 1.4.3; the tests check it).

The picture is 1200 × 800 user units and scales to the width it is given (1280 × 800, 1920 ×
1080 and a phone's width alike); the places of a table are spread clockwise from the dealer's
left, the dealer at the top.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable

from controller.view.drawing import (
    BOARD_CARDS,
    HoldMark,
    PotDrawing,
    SeatDrawing,
    SeatState,
    TableDrawing,
)

WIDTH, HEIGHT = 1200, 800
CX, CY = WIDTH / 2, HEIGHT / 2
#: The felt, and the ellipses the seats, the bets and the button sit on.
FELT_RX, FELT_RY = 400, 225
SEAT_RX, SEAT_RY = 480, 312
BET_RX, BET_RY = 300, 180
BUTTON_RX, BUTTON_RY = 330, 205
#: A seat's plate.
PLATE_W, PLATE_H = 214, 128
BAND_H = 36
#: Cards: on a seat, and on the board.
CARD_W, CARD_H = 48, 68
BOARD_W, BOARD_H = 64, 90
BOARD_GAP = 10

BACKGROUND = "#f6f6f2"
FELT = "#0e5a2c"
RAIL = "#5b3714"
INK = "#111111"
WHITE = "#ffffff"
BAND = "#1c2430"
TURN = "#ffd21f"
OUT = "#e4e4e4"
RED = "#b00020"
BACK = "#1f3f8f"
CHIP = "#f4d35e"

#: Each kind of text: its colour and the colour it is drawn on.
TEXT_ROLES: dict[str, tuple[str, str]] = {
    "band": (WHITE, BAND),
    "band-turn": (INK, TURN),
    "plate": (INK, WHITE),
    "plate-out": ("#333333", OUT),
    "card-black": (INK, WHITE),
    "card-red": (RED, WHITE),
    "felt": (WHITE, FELT),
    "button": (INK, WHITE),
    "tag": (TURN, INK),
    "hold": (INK, TURN),
    "ground": ("#333333", BACKGROUND),
}

SUITS = {"s": ("♠", "spades"), "h": ("♥", "hearts"), "d": ("♦", "diamonds"), "c": ("♣", "clubs")}
RANK_NAMES = {
    "A": "ace",
    "K": "king",
    "Q": "queen",
    "J": "jack",
    "T": "ten",
    "9": "nine",
    "8": "eight",
    "7": "seven",
    "6": "six",
    "5": "five",
    "4": "four",
    "3": "three",
    "2": "two",
}
#: Characters XML 1.0 cannot hold (controls, lone surrogates, U+FFFE/U+FFFF).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: The longest name a plate shows (a longer one ends in an ellipsis; the description has it all).
NAME_CHARS = 14


def table_svg(drawing: TableDrawing, *, id_prefix: str = "table") -> str:
    """``drawing`` as an SVG document fragment (an ``<svg>`` element), its ids starting with
    ``id_prefix`` (unique on the page that shows it)."""
    prefix = _safe_id(id_prefix)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'class="table-drawing" aria-labelledby="{prefix}-title {prefix}-desc" '
        f'font-family="system-ui, \'DejaVu Sans\', sans-serif" data-places="{drawing.places}">',
        f'<title id="{prefix}-title">{_text(title(drawing))}</title>',
        f'<desc id="{prefix}-desc">{_text(description(drawing))}</desc>',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="{BACKGROUND}"/>',
        f'<ellipse cx="{CX}" cy="{CY}" rx="{FELT_RX}" ry="{FELT_RY}" fill="{FELT}" '
        f'stroke="{RAIL}" stroke-width="22"/>',
        _label(CX, 40, "Dealer", "ground", size=20, weight="bold"),
        *_middle(drawing),
    ]
    for place in range(1, drawing.places + 1):
        seat = drawing.seat(place)
        if seat is None:
            parts.append(_empty_place(drawing, place))
        else:
            holds = [h for h in drawing.holds if h.seat == place]
            parts.append(_seat(drawing, seat, holds))
    if drawing.button is not None:
        parts.append(_button(drawing, drawing.button))
    parts.append("</svg>")
    return "".join(parts)


# ----------------------------------------------------------------------------- in words


def title(drawing: TableDrawing) -> str:
    """The drawing's title: the table, the hand and whose turn it is."""
    words = [drawing.title]
    if drawing.caption:
        words.append(drawing.caption)
    if drawing.to_act is not None:
        words.append(f"seat {drawing.to_act} to act")
    return ": ".join(words[:2]) + (", " + words[2] if len(words) > 2 else "")


def description(drawing: TableDrawing) -> str:
    """Everything the drawing shows, in sentences."""
    sentences = []
    occupied = sorted(drawing.seats, key=lambda s: s.seat)
    sentences.append(
        f"{drawing.places} places, {len(occupied)} seated."
        + (f" The button is at seat {drawing.button}." if drawing.button is not None else "")
        + (f" Seat {drawing.to_act} is to act." if drawing.to_act is not None else "")
    )
    for seat in occupied:
        sentences.append(_seat_words(seat, drawing))
    if drawing.pots:
        sentences.append("; ".join(_pot_words(i, pot) for i, pot in enumerate(drawing.pots)) + ".")
    sentences.append(
        "Board: " + ", ".join(card_name(c) for c in drawing.board) + "."
        if drawing.board
        else "No board card."
    )
    for hold in drawing.holds:
        sentences.append(_hold_words(hold))
    return " ".join(sentences)


def card_text(card: str) -> str:
    """A card as it is written on its face: rank and suit symbol (``"A♠"``, ``"10♥"``)."""
    rank = "10" if card[0] == "T" else card[0]
    return rank + SUITS[card[1]][0]


def card_name(card: str) -> str:
    """A card in words (``"ace of spades"``)."""
    return f"{RANK_NAMES[card[0]]} of {SUITS[card[1]][1]}"


def drawn_cards(seat: SeatDrawing) -> tuple[str | None, ...]:
    """The cards a seat is drawn with: none once folded (they are in the muck) or sitting out."""
    if seat.state in (SeatState.FOLDED, SeatState.SITTING_OUT):
        return ()
    return seat.cards


def pot_name(index: int) -> str:
    """The first pot is the main pot, the others side pots in the order they were made."""
    return "Main pot" if index == 0 else f"Side pot {index}"


def _seat_words(seat: SeatDrawing, drawing: TableDrawing) -> str:
    words = [seat.label if seat.name else f"Seat {seat.seat}"]
    if seat.state is not SeatState.SEATED:
        words.append(seat.state.value)
    if seat.stack is not None:
        words.append(f"stack {seat.stack}")
    if seat.bet:
        words.append(f"bet {seat.bet}")
    cards = drawn_cards(seat)
    shown = [c for c in cards if c is not None]
    hidden = len(cards) - len(shown)
    if shown:
        words.append("cards " + ", ".join(card_name(c) for c in shown))
    if hidden:
        words.append(f"{hidden} card{'s' if hidden != 1 else ''} face down")
    if seat.seat == drawing.button:
        words.append("the button")
    if seat.seat == drawing.to_act:
        words.append("to act")
    return ", ".join(words) + "."


def _pot_words(index: int, pot: PotDrawing) -> str:
    seats = "seat" if len(pot.eligible) == 1 else "seats"
    eligible = f" ({seats} {', '.join(map(str, pot.eligible))})" if pot.eligible else ""
    return f"{pot_name(index)}: {pot.amount}{eligible}"


def _hold_words(hold: HoldMark) -> str:
    where = f"on seat {hold.seat}" if hold.seat is not None else "on the board"
    reason = f": {hold.reason}" if hold.reason else ""
    return f"Hold {hold.rule} {where}{reason}."


# ----------------------------------------------------------------------------- geometry


def angle(place: int, places: int) -> float:
    """The angle of a place (radians, clockwise from the right on screen): the places share the
    ring with the dealer, at the top, seat 1 at the dealer's left."""
    return math.radians(-90 + place * 360 / (places + 1))


def on_ring(
    place: int, places: int, rx: float, ry: float, turn: float = 0.0
) -> tuple[float, float]:
    """The point of ``place`` on the ellipse of radii ``rx``, ``ry`` (``turn``: degrees on)."""
    a = angle(place, places) + math.radians(turn)
    return CX + rx * math.cos(a), CY + ry * math.sin(a)


def plate_box(place: int, places: int) -> tuple[float, float, float, float]:
    """The seat plate's rectangle: x, y, width, height."""
    x, y = on_ring(place, places, SEAT_RX, SEAT_RY)
    return x - PLATE_W / 2, y - PLATE_H / 2, PLATE_W, PLATE_H


# ----------------------------------------------------------------------------- parts


def _middle(drawing: TableDrawing) -> Iterable[str]:
    """The pots above the board, the board, and the holds on the board under it."""
    left = CX - (BOARD_CARDS * BOARD_W + (BOARD_CARDS - 1) * BOARD_GAP) / 2
    top = CY - BOARD_H / 2
    yield '<g class="board">'
    for i in range(BOARD_CARDS):
        x = left + i * (BOARD_W + BOARD_GAP)
        if i < len(drawing.board):
            yield _card(x, top, drawing.board[i], BOARD_W, BOARD_H)
        else:
            yield (
                f'<rect x="{x:.0f}" y="{top:.0f}" width="{BOARD_W}" height="{BOARD_H}" rx="6" '
                f'fill="none" stroke="{WHITE}" stroke-opacity="0.5" stroke-width="2" '
                f'stroke-dasharray="6 5"/>'
            )
    yield "</g>"
    pots = list(enumerate(drawing.pots))
    shown = pots if len(pots) <= 4 else [*pots[:3]]
    lines = [_pot_words(i, pot) if i else f"{pot_name(i)}: {pot.amount}" for i, pot in shown]
    if len(pots) > len(shown):
        rest = sum(p.amount for _, p in pots[len(shown) :])
        lines.append(f"+ {len(pots) - len(shown)} more side pots: {rest}")
    yield '<g class="pots">'
    for n, line in enumerate(reversed(lines)):
        yield _label(CX, top - 18 - n * 32, line, "felt", size=26, weight="bold")
    yield "</g>"
    board_holds = [h for h in drawing.holds if h.seat is None]
    for n, hold in enumerate(board_holds[:2]):
        y = top + BOARD_H + 14 + n * 44
        yield _hold_badge(CX, y, hold)


def _seat(drawing: TableDrawing, seat: SeatDrawing, holds: list[HoldMark]) -> str:
    place = seat.seat
    x, y, w, h = plate_box(place, drawing.places)
    turn = seat.seat == drawing.to_act
    out = seat.state in (SeatState.FOLDED, SeatState.SITTING_OUT)
    body = OUT if out else WHITE
    text_role = "plate-out" if out else "plate"
    parts = [
        f'<g class="seat{" to-act" if turn else ""}" id="{_safe_id(f"seat-{place}")}" '
        f'data-seat="{place}" data-state="{_text(seat.state.value)}">'
    ]
    if turn:
        parts.append(
            f'<rect x="{x - 8:.0f}" y="{y - 8:.0f}" width="{w + 16}" height="{h + 16}" rx="14" '
            f'fill="{INK}"/>'
        )
    dash = ' stroke-dasharray="8 6"' if seat.state is SeatState.SITTING_OUT else ""
    parts.append(
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{w}" height="{h}" rx="10" fill="{body}" '
        f'stroke="{BAND}" stroke-width="3"{dash}/>'
    )
    band, band_role = (TURN, "band-turn") if turn else (BAND, "band")
    parts.append(
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{w}" height="{BAND_H}" rx="10" fill="{band}"/>'
    )
    name = ("▶ " if turn else "") + _short(seat.label, NAME_CHARS)
    parts.append(_label(x + 12, y + 26, name, band_role, size=22, weight="bold", anchor="start"))
    # cards on the left of the plate, the stack and the state on the right
    cards = drawn_cards(seat)
    if cards:
        room = 108 - CARD_W
        step = min(CARD_W + 6, room / (len(cards) - 1)) if len(cards) > 1 else 0
        for i, card in enumerate(cards):
            cx = x + 10 + i * step
            cy = y + BAND_H + 12
            parts.append(
                _card(cx, cy, card, CARD_W, CARD_H)
                if card is not None
                else _card_back(cx, cy, CARD_W, CARD_H)
            )
    right = x + 126
    if seat.stack is not None:
        parts.append(_label(right, y + BAND_H + 20, "stack", text_role, size=17, anchor="start"))
        parts.append(
            _label(
                right,
                y + BAND_H + 46,
                f"{seat.stack}",
                text_role,
                size=26,
                weight="bold",
                anchor="start",
            )
        )
    if seat.state not in (SeatState.SEATED, SeatState.PLAYING):
        # beside the cards, or where they would be (a folded or sitting-out seat shows none)
        left = right if cards else x + 12
        parts.append(
            _label(
                left,
                y + BAND_H + 72,
                seat.state.value.upper(),
                text_role,
                size=18,
                weight="bold",
                anchor="start",
            )
        )
    if turn:
        parts.append(_tag(x + w / 2, y - 8, "▶ TO ACT"))
    for n, hold in enumerate(holds[:1]):
        # across the plate's lower edge: the space between two plates is the next seat's
        parts.append(_hold_badge(x + w / 2, y + h - 12 + n * 44, hold))
    if seat.bet:
        parts.append(_bet(drawing, place, seat.bet))
    parts.append("</g>")
    return "".join(parts)


def _empty_place(drawing: TableDrawing, place: int) -> str:
    x, y = on_ring(place, drawing.places, SEAT_RX, SEAT_RY)
    return (
        f'<g class="place empty" data-seat="{place}">'
        f'<circle cx="{x:.0f}" cy="{y:.0f}" r="30" fill="{BACKGROUND}" stroke="#666666" '
        f'stroke-width="2" stroke-dasharray="6 5"/>'
        f"{_label(x, y + 8, str(place), 'ground', size=22, weight='bold')}</g>"
    )


def _bet(drawing: TableDrawing, place: int, amount: int) -> str:
    x, y = on_ring(place, drawing.places, BET_RX, BET_RY)
    return (
        f'<g class="bet" data-seat="{place}">'
        f'<circle cx="{x - 22:.0f}" cy="{y:.0f}" r="14" fill="{CHIP}" stroke="{INK}" '
        f'stroke-width="3" stroke-dasharray="5 4"/>'
        f"{_label(x - 2, y + 9, str(amount), 'felt', size=24, weight='bold', anchor='start')}</g>"
    )


def _button(drawing: TableDrawing, place: int) -> str:
    x, y = on_ring(place, drawing.places, BUTTON_RX, BUTTON_RY, turn=-13)
    return (
        f'<g class="dealer-button" data-seat="{place}">'
        f'<circle cx="{x:.0f}" cy="{y:.0f}" r="19" fill="{WHITE}" stroke="{INK}" '
        f'stroke-width="3"/>{_label(x, y + 7, "D", "button", size=20, weight="bold")}</g>'
    )


def _card(x: float, y: float, card: str, w: int, h: int) -> str:
    role = "card-red" if card[1] in "hd" else "card-black"
    rank = "10" if card[0] == "T" else card[0]
    big = h >= BOARD_H
    size = 32 if big else 26
    return (
        f'<g class="card" data-card="{card}">'
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{w}" height="{h}" rx="6" fill="{WHITE}" '
        f'stroke="{INK}" stroke-width="2"/>'
        f"{_label(x + w / 2, y + size + 2, rank, role, size=size, weight='bold')}"
        f"{_label(x + w / 2, y + h - 10, SUITS[card[1]][0], role, size=size)}</g>"
    )


def _card_back(x: float, y: float, w: int, h: int) -> str:
    return (
        f'<g class="card face-down">'
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{w}" height="{h}" rx="6" fill="{BACK}" '
        f'stroke="{INK}" stroke-width="2"/>'
        f'<rect x="{x + 6:.0f}" y="{y + 6:.0f}" width="{w - 12}" height="{h - 12}" rx="3" '
        f'fill="none" stroke="{WHITE}" stroke-width="2"/></g>'
    )


def _tag(x: float, bottom: float, text: str) -> str:
    w = 150
    return (
        f'<g class="turn-tag"><rect x="{x - w / 2:.0f}" y="{bottom - 34:.0f}" width="{w}" '
        f'height="32" rx="8" fill="{INK}"/>'
        f"{_label(x, bottom - 10, text, 'tag', size=20, weight='bold')}</g>"
    )


def _hold_badge(x: float, y: float, hold: HoldMark) -> str:
    text = f"⚠ HOLD {_short(hold.rule, 16)}"
    w = 30 + 13 * len(text)
    where = str(hold.seat) if hold.seat is not None else "board"
    return (
        f'<g class="hold" data-on="{where}">'
        f'<rect x="{x - w / 2:.0f}" y="{y:.0f}" width="{w}" height="36" rx="8" fill="{TURN}" '
        f'stroke="{INK}" stroke-width="3"/>'
        f"{_label(x, y + 26, text, 'hold', size=20, weight='bold')}</g>"
    )


def _label(
    x: float,
    y: float,
    text: str,
    role: str,
    *,
    size: int,
    weight: str = "normal",
    anchor: str = "middle",
) -> str:
    fill = TEXT_ROLES[role][0]
    bold = ' font-weight="bold"' if weight == "bold" else ""
    return (
        f'<text x="{x:.0f}" y="{y:.0f}" font-size="{size}"{bold} text-anchor="{anchor}" '
        f'fill="{fill}" class="t-{role}">{_text(text)}</text>'
    )


def _short(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _text(value: str) -> str:
    """Text as XML holds it: escaped, and what XML cannot hold replaced (U+FFFD)."""
    return html.escape(_NOT_XML.sub("\ufffd", value), quote=True)


def _safe_id(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", value) or "table"
