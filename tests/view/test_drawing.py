"""The table drawn as SVG (controller/view/svg.py) from its model (controller/view/drawing.py):
its structure, what it says in words, escaping, contrast, and every seat count."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cards import STANDARD_DECK
from controller.view.drawing import (
    HoldMark,
    PotDrawing,
    SeatDrawing,
    SeatState,
    TableDrawing,
)
from controller.view.svg import HEIGHT, TEXT_ROLES, WIDTH, plate_box, table_svg

NS = {"svg": "http://www.w3.org/2000/svg"}
SVG = "{http://www.w3.org/2000/svg}"


def parsed(drawing: TableDrawing) -> ET.Element:
    """The drawing as XML (ParseError: not well-formed)."""
    return ET.fromstring(table_svg(drawing))


def texts(element: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in element.iter(f"{SVG}text")]


def seat_group(root: ET.Element, seat: int) -> ET.Element:
    (group,) = [g for g in root.iter(f"{SVG}g") if g.get("id") == f"seat-{seat}"]
    return group


def luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of ``#rrggbb``."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


HAND = TableDrawing(
    "Table T1",
    (
        SeatDrawing(1, stack=960, bet=40, cards=(None, None), state=SeatState.PLAYING),
        SeatDrawing(2, name="Ann", stack=0, bet=200, cards=("Ah", "Td"), state=SeatState.ALL_IN),
        SeatDrawing(3, stack=500, state=SeatState.FOLDED, cards=("2c", "3c")),
        SeatDrawing(4, stack=800, state=SeatState.SITTING_OUT),
    ),
    places=6,
    caption="hand T1-00042 · flop",
    button=4,
    to_act=1,
    pots=(PotDrawing(120, (1, 2)), PotDrawing(60, (1,))),
    board=("As", "Kd", "7c"),
    holds=(HoldMark("SEAT-COUNT", "three cards at seat 2", 2), HoldMark("FLOP-PREM")),
)


def test_the_drawing_is_an_image_whose_title_and_description_say_what_it_shows() -> None:
    root = parsed(HAND)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    assert root.get("viewBox") == f"0 0 {WIDTH} {HEIGHT}"
    assert root.get("width") is None  # it takes the width the page gives it
    title, desc = root.find("svg:title", NS), root.find("svg:desc", NS)
    assert title is not None
    assert desc is not None
    assert root.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"
    assert title.text == "Table T1: hand T1-00042 · flop, seat 1 to act"
    words = desc.text or ""
    for said in (
        "6 places, 4 seated.",
        "The button is at seat 4.",
        "Seat 1 is to act.",
        "Seat 1, in the hand, stack 960, bet 40, 2 cards face down, to act.",
        "2 · Ann, all in, stack 0, bet 200, cards ace of hearts, ten of diamonds.",
        "Seat 3, folded, stack 500.",  # its cards are in the muck: neither drawn nor said
        "Seat 4, sitting out, stack 800, the button.",
        "Main pot: 120 (seats 1, 2); Side pot 1: 60 (seat 1).",
        "Board: ace of spades, king of diamonds, seven of clubs.",
        "Hold SEAT-COUNT on seat 2: three cards at seat 2.",
        "Hold FLOP-PREM on the board.",
    ):
        assert said in words, (said, words)


def test_each_seat_is_drawn_in_its_place_with_what_it_holds() -> None:
    root = parsed(HAND)
    seats = {g.get("data-seat"): g for g in root.iter(f"{SVG}g") if g.get("class", "") == "seat"}
    assert set(seats) == {"2", "3", "4"}  # seat 1 is to act: class "seat to-act"
    one = seat_group(root, 1)
    assert one.get("class") == "seat to-act"
    # whose turn: a tag in words and an arrow on the name, not colour alone
    assert "▶ TO ACT" in texts(one)
    assert "▶ Seat 1" in texts(one)
    assert [g.get("class") for g in one.iter(f"{SVG}g")].count("card face-down") == 2
    two = seat_group(root, 2)
    assert [g.get("data-card") for g in two.iter(f"{SVG}g") if g.get("class") == "card"] == [
        "Ah",
        "Td",
    ]
    assert {"A", "♥", "10", "♦", "ALL IN", "0", "2 · Ann"} <= set(texts(two))
    red = [t for t in two.iter(f"{SVG}text") if t.text in ("♥", "♦", "A", "10")]
    assert {t.get("class") for t in red} == {"t-card-red"}
    assert "FOLDED" in texts(seat_group(root, 3))
    assert not [g for g in seat_group(root, 3).iter(f"{SVG}g") if g.get("class") == "card"]
    assert "SITTING OUT" in texts(seat_group(root, 4))
    # the bets, in front of their seats
    bets = {g.get("data-seat"): texts(g) for g in root.iter(f"{SVG}g") if g.get("class") == "bet"}
    assert bets == {"1": ["40"], "2": ["200"]}
    (button,) = [g for g in root.iter(f"{SVG}g") if g.get("class") == "dealer-button"]
    assert button.get("data-seat") == "4"
    assert texts(button) == ["D"]
    empty = sorted(
        g.get("data-seat") or "" for g in root.iter(f"{SVG}g") if "empty" in (g.get("class") or "")
    )
    assert empty == ["5", "6"]


def test_pots_board_and_holds_are_where_they_belong() -> None:
    root = parsed(HAND)
    (pots,) = [g for g in root.iter(f"{SVG}g") if g.get("class") == "pots"]
    assert texts(pots) == ["Side pot 1: 60 (seat 1)", "Main pot: 120"]
    (board,) = [g for g in root.iter(f"{SVG}g") if g.get("class") == "board"]
    assert [g.get("data-card") for g in board.findall("svg:g", NS)] == ["As", "Kd", "7c"]
    assert {"7", "♣"} <= set(texts(board))
    holds = {g.get("data-on"): texts(g) for g in root.iter(f"{SVG}g") if g.get("class") == "hold"}
    assert holds == {"2": ["⚠ HOLD SEAT-COUNT"], "board": ["⚠ HOLD FLOP-PREM"]}
    # the seat's hold is drawn on that seat
    assert "⚠ HOLD SEAT-COUNT" in texts(seat_group(root, 2))


def test_text_is_escaped_and_what_xml_cannot_hold_is_replaced() -> None:
    hostile = '<script>alert("x")</script> & \x00\x1b\ud800'
    drawing = TableDrawing(
        hostile,
        (SeatDrawing(1, name=hostile), SeatDrawing(2)),
        caption=hostile,
        holds=(HoldMark(hostile, hostile, 1),),
    )
    svg = table_svg(drawing, id_prefix='x" onload="y')
    assert "<script" not in svg
    assert 'onload="' not in svg
    svg.encode("utf-8")  # no lone surrogate left
    root = ET.fromstring(svg)
    title = root.find("svg:title", NS)
    assert title is not None
    assert title.text == '<script>alert("x")</script> & \ufffd\ufffd\ufffd: ' + (
        '<script>alert("x")</script> & \ufffd\ufffd\ufffd'
    )
    assert all(e.get("onload") is None for e in root.iter())


def test_every_text_colour_reaches_wcag_aa_contrast_on_its_background() -> None:
    for role, (fill, background) in TEXT_ROLES.items():
        assert contrast(fill, background) >= 4.5, role
    for text in parsed(HAND).iter(f"{SVG}text"):
        role = (text.get("class") or "")[2:]
        assert text.get("fill") == TEXT_ROLES[role][0], role


@pytest.mark.parametrize("places", range(2, 11))
def test_every_seat_count_draws_every_seat_apart_and_inside_the_picture(places: int) -> None:
    seats = tuple(
        SeatDrawing(n, name=f"P{n}", stack=100, bet=10, cards=(None, None), state=SeatState.PLAYING)
        for n in range(1, places + 1)
    )
    drawing = TableDrawing("T", seats, places=places, button=1, to_act=places)
    root = parsed(drawing)
    drawn = sorted(int(g.get("data-seat") or 0) for g in root.iter(f"{SVG}g") if g.get("id"))
    assert drawn == list(range(1, places + 1))
    boxes = [plate_box(n, places) for n in range(1, places + 1)]
    for x, y, w, h in boxes:
        assert x >= 0, (places, x)
        assert x + w <= WIDTH, (places, x)
        assert y >= 40, (places, y)  # under the dealer's label
        assert y + h <= HEIGHT, (places, y)
    for (ax, ay, aw, ah), (bx, by, bw, bh) in itertools.combinations(boxes, 2):
        apart = ax + aw <= bx or bx + bw <= ax or ay + ah <= by or by + bh <= ay
        assert apart, (places, (ax, ay), (bx, by))
    # clockwise from the dealer's left: seat 1 right of the top, the last seat left of it
    first, last = boxes[0], boxes[-1]
    assert first[0] > WIDTH / 2 - first[2] / 2 > last[0]


@pytest.mark.parametrize(
    ("made", "error"),
    [
        (lambda: TableDrawing("T", places=11), "places: 11"),
        (lambda: TableDrawing("T", (SeatDrawing(1), SeatDrawing(1))), "seats drawn twice: 1"),
        (lambda: TableDrawing("T", (SeatDrawing(7),), places=6), "seat 7 is not one of 1 to 6"),
        (lambda: TableDrawing("T", button=0), "button: seat 0"),
        (lambda: TableDrawing("T", (SeatDrawing(1),), to_act=2), "to_act: seat 2 is not occupied"),
        (lambda: TableDrawing("T", board=("As", "Xx")), "'Xx' is not a card"),
        (lambda: TableDrawing("T", board=tuple(STANDARD_DECK[:6])), "board: 6 cards"),
        (lambda: SeatDrawing(1, cards=("10s",)), "'10s' is not a card"),
        (lambda: SeatDrawing(1, bet=-5), "seat 1: bet: -5 chips"),
        (lambda: SeatDrawing(1, stack=True), "seat 1: stack: True is not a number"),
        (lambda: PotDrawing(-1), "pot: -1 chips"),
        (lambda: TableDrawing("T", holds=(HoldMark("X", seat=12),)), "hold X: seat 12"),
    ],
)
def test_a_model_no_table_can_be_is_refused_with_what_is_wrong(made: object, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        made()  # type: ignore[operator]


CARDS = st.sampled_from(STANDARD_DECK)
TEXT = st.text(max_size=30)
AMOUNTS = st.none() | st.integers(min_value=0, max_value=10**9)


@st.composite
def drawings(draw: st.DrawFn) -> TableDrawing:
    places = draw(st.integers(min_value=2, max_value=10))
    numbers = draw(st.sets(st.integers(min_value=1, max_value=places)))
    seats = tuple(
        SeatDrawing(
            n,
            name=draw(TEXT),
            stack=draw(AMOUNTS),
            bet=draw(AMOUNTS),
            cards=tuple(draw(st.lists(st.none() | CARDS, max_size=4))),
            state=draw(st.sampled_from(SeatState)),
        )
        for n in sorted(numbers)
    )
    seat_or_none = st.none() | st.integers(min_value=1, max_value=places)
    pots = st.lists(
        st.builds(
            PotDrawing,
            st.integers(min_value=0, max_value=10**9),
            st.lists(st.integers(min_value=1, max_value=places), max_size=10).map(tuple),
        ),
        max_size=10,
    )
    return TableDrawing(
        draw(TEXT),
        seats,
        places=places,
        caption=draw(TEXT),
        button=draw(seat_or_none),
        to_act=draw(st.none() | st.sampled_from(sorted(numbers))) if numbers else None,
        pots=tuple(draw(pots)),
        board=tuple(draw(st.lists(CARDS, max_size=5, unique=True))),
        holds=tuple(draw(st.lists(st.builds(HoldMark, TEXT, TEXT, seat_or_none), max_size=4))),
    )


@given(drawings())
def test_any_model_renders_well_formed_xml_with_every_seat_present(drawing: TableDrawing) -> None:
    root = parsed(drawing)
    occupied = {s.seat for s in drawing.seats}
    drawn = {int(g.get("data-seat") or 0) for g in root.iter(f"{SVG}g") if g.get("id")}
    assert drawn == occupied
    empty = {
        int(g.get("data-seat") or 0)
        for g in root.iter(f"{SVG}g")
        if "empty" in (g.get("class") or "")
    }
    assert empty == set(range(1, drawing.places + 1)) - occupied
    desc = root.find("svg:desc", NS)
    assert desc is not None
    for seat in drawing.seats:
        assert f"{seat.seat}" in (desc.text or "")
    assert len([g for g in root.iter(f"{SVG}g") if "to-act" in (g.get("class") or "")]) == (
        drawing.to_act is not None
    )
