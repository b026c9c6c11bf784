"""The table page's drawing from the pit's view of a table and its events
(controller/pit/console/picture.py): seats, bets of the round, the pots (POT-SEP), holds."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.pit.console.picture import picture, round_bets
from controller.pit.console.views import table_view
from controller.view.drawing import SeatState
from controller.view.svg import table_svg
from tests.pit.test_store import envelope

HAND = "T1-00007"


def state(seats: dict[str, dict[str, Any]], **hand: Any) -> dict[str, Any]:
    """A public snapshot (controller/shell/snapshot.py) of table T1 in hand HAND."""
    return {
        "schema": "tablectl.state/1",
        "table_id": "T1",
        "seq": 40,
        "button": 3,
        "blinds": [5, 10],
        "seats": seats,
        "hand": {
            "hand_id": HAND,
            "phase": "betting",
            "street": "flop",
            "board": ["As", "Kd", "7c"],
            "pot": 0,
            "to_act": 1,
            "holds": [],
            **hand,
        },
    }


def seat(stack: int, committed: int, status: str = "live", cards: int = 2) -> dict[str, Any]:
    return {
        "stack": stack,
        "in_hand": True,
        "status": status,
        "committed": committed,
        "cards": cards,
    }


def action(seq: int, seat_: int, kind: str, **data: Any) -> dict[str, Any]:
    body = {"seat": seat_, "action": kind, "stack": 0, "all_in": False, **data}
    return envelope(seq, "betting.action", hand=HAND, data=body)


def started(seq: int) -> dict[str, Any]:
    data = {
        "button": 3,
        "seats": [1, 2, 3, 4],
        "small_blind": 1,
        "big_blind": 2,
        "blinds": [5, 10],
        "ante": 0,
        "stacks": {"1": 100, "2": 100, "3": 100, "4": 100},
    }
    return envelope(seq, "hand.started", hand=HAND, data=data)


def closed(seq: int, street: str, pot: int) -> dict[str, Any]:
    return envelope(seq, "betting.round.closed", hand=HAND, data={"street": street, "pot": pot})


TABLE_ROW = {"table_id": "T1", "online": True, "epoch": "e1"}

# preflop: every seat put 20 in; seat 4 folded. On the flop seat 2 is all in for 30 more, seat 3
# called 30, seat 1 is to act with nothing in front of it yet.
FLOP = state(
    {
        "1": seat(80, 20),
        "2": seat(0, 50),
        "3": seat(50, 50),
        "4": seat(80, 20, "folded", 0),
        "5": {"stack": 300, "in_hand": False},
    },
    pot=140,
    holds=[
        {"id": "h1", "rule": "SEAT-COUNT", "ruling": "continue", "reason": "3 cards", "seat": 2}
    ],
)
FLOP_EVENTS = [
    started(1),
    action(2, 1, "post", blind="small", amount=5),
    action(3, 2, "post", blind="big", amount=10),
    action(4, 3, "raise", to=20, put_in=20),
    action(5, 4, "call", to=20, put_in=20),
    action(6, 1, "call", to=20, put_in=15),
    action(7, 2, "call", to=20, put_in=10),
    closed(8, "preflop", 80),
    envelope(
        9,
        "board.dealt",
        hand=HAND,
        data={"street": "flop", "cards": ["As", "Kd", "7c"], "board": ["As", "Kd", "7c"]},
    ),
    action(10, 2, "allin", to=30, put_in=30, all_in=True),
    action(11, 3, "call", to=30, put_in=30),
]


def test_the_round_bets_are_what_each_seat_put_in_since_the_round_began() -> None:
    newest_first = list(reversed(FLOP_EVENTS))
    assert round_bets(newest_first, HAND) == {2: 30, 3: 30}
    preflop = FLOP_EVENTS[:7]
    assert round_bets(preflop, HAND) == {1: 20, 2: 20, 3: 20, 4: 20}
    # the events read begin mid-round: the bets are not known (and none is drawn)
    assert round_bets(FLOP_EVENTS[10:], HAND) is None
    assert round_bets(FLOP_EVENTS, "T1-00008") is None
    # an ante is no bet in front of a seat: it goes straight into the pot
    ante = [started(1), action(2, 1, "post", blind="ante", amount=1)]
    assert round_bets(ante, HAND) == {}


def test_the_drawing_has_the_bets_in_front_and_the_pots_in_the_middle_pot_sep() -> None:
    view = table_view(TABLE_ROW, FLOP, {}, {})
    drawing, left_out = picture(view, list(reversed(FLOP_EVENTS)))
    assert not left_out
    by_seat = {s.seat: s for s in drawing.seats}
    assert {n: s.state for n, s in by_seat.items()} == {
        1: SeatState.PLAYING,
        2: SeatState.ALL_IN,
        3: SeatState.PLAYING,
        4: SeatState.FOLDED,
        5: SeatState.SITTING_OUT,
    }
    assert {n: s.bet for n, s in by_seat.items()} == {1: None, 2: 30, 3: 30, 4: None, 5: None}
    assert by_seat[1].cards == (None, None)  # face down: a floor user without surveillance
    assert by_seat[4].cards == ()
    # the preflop round's 80 gathered: the main pot; this round's bets are in front of the seats
    assert [(p.amount, p.eligible) for p in drawing.pots] == [(80, (1, 2, 3))]
    assert sum(p.amount for p in drawing.pots) + sum(s.bet or 0 for s in drawing.seats) == 140
    assert drawing.button == 3
    assert drawing.to_act == 1
    assert drawing.board == ("As", "Kd", "7c")
    assert drawing.caption == f"hand {HAND} · betting · flop"
    (hold,) = drawing.holds
    assert (hold.rule, hold.reason, hold.seat) == ("SEAT-COUNT", "3 cards", 2)


def test_a_side_pot_is_drawn_once_the_all_in_round_is_gathered() -> None:
    # the flop closed: seat 1 folded to the all-in; seat 2's 50 and seat 3's 50 and the rest
    turn = state(
        {
            "1": seat(80, 20, "folded", 0),
            "2": seat(0, 50),
            "3": seat(30, 70),
            "4": seat(80, 20, "folded", 0),
        },
        pot=160,
        to_act=3,
    )
    events = [*FLOP_EVENTS, action(12, 1, "fold"), closed(13, "flop", 140)]
    events += [action(14, 3, "bet", to=20, put_in=20)]
    drawing, _ = picture(table_view(TABLE_ROW, turn, {}, {}), events)
    # seat 3's bet of 20 is in front of it; nothing gathered beyond seat 2's all-in yet
    assert [(p.amount, p.eligible) for p in drawing.pots] == [(140, (2, 3))]
    assert {s.seat: s.bet for s in drawing.seats if s.bet} == {3: 20}
    # the round closes with seat 3's bet uncalled above seat 2's all-in: a side pot of its own
    gathered = state(
        {
            "1": seat(80, 20, "folded", 0),
            "2": seat(0, 50),
            "3": seat(30, 70),
            "4": seat(80, 20, "folded", 0),
        },
        pot=160,
        to_act=None,
    )
    drawing, _ = picture(
        table_view(TABLE_ROW, gathered, {}, {}), [*events, closed(15, "turn", 160)]
    )
    assert [(p.amount, p.eligible) for p in drawing.pots] == [(140, (2, 3)), (20, (3,))]


def test_surveillance_sees_the_hole_cards_face_up_and_bad_cards_are_left_out() -> None:
    holes = {"1": ["Ah", "Qs"], "3": ["Xx", "2d"]}
    drawing, left_out = picture(table_view(TABLE_ROW, FLOP, {}, holes), [])
    by_seat = {s.seat: s for s in drawing.seats}
    assert by_seat[1].cards == ("Ah", "Qs")
    assert by_seat[3].cards == ("2d",)
    assert left_out
    # no events: the bets are not known, and every chip committed is in the pots
    assert all(s.bet is None for s in drawing.seats)
    assert sum(p.amount for p in drawing.pots) == 140


def test_between_hands_every_seat_is_seated_and_nothing_is_in_the_middle() -> None:
    idle = {
        "table_id": "T1",
        "seq": 3,
        "button": 2,
        "seats": {"1": {"stack": 100}, "2": {"stack": 90}},
        "hand": None,
    }
    drawing, left_out = picture(table_view(TABLE_ROW, idle, {}, {}), [])
    assert not left_out
    assert [s.state for s in drawing.seats] == [SeatState.SEATED, SeatState.SEATED]
    assert drawing.pots == ()
    assert drawing.caption == "no hand in progress"
    assert drawing.button == 2


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 500)
    | st.text(max_size=4)
    | st.sampled_from(["As", "live", "folded"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)
SEAT_KEYS = st.sampled_from(["1", "2", "3", "9", "10", "11", "0", "x"])


def events_of(actions: list[tuple[int, str, int]], closes: set[int]) -> list[dict[str, Any]]:
    """The hand's start, then ``actions`` (seat, action, chips), the round closing after the
    positions in ``closes``."""
    events, seq = [started(1)], 1
    for n, (seat_, kind, chips) in enumerate(actions):
        extra = {"blind": "small", "amount": chips} if kind == "post" else {"to": chips}
        seq += 1
        events.append(action(seq, seat_, kind, **extra))
        if n in closes:
            seq += 1
            events.append(closed(seq, "preflop", 0))
    return events


ACTIONS = st.lists(
    st.tuples(
        st.integers(1, 4),
        st.sampled_from(["post", "call", "bet", "raise", "allin", "fold"]),
        st.integers(0, 200),
    ),
    max_size=8,
)


@given(
    seats=st.dictionaries(
        SEAT_KEYS,
        st.fixed_dictionaries(
            {},
            optional={
                "stack": JSON,
                "in_hand": JSON,
                "status": JSON,
                "committed": JSON,
                "cards": JSON,
            },
        )
        | JSON,
        max_size=6,
    ),
    hand=JSON
    | st.fixed_dictionaries(
        {"hand_id": st.just(HAND)},
        optional={
            "pot": JSON,
            "to_act": JSON,
            "board": JSON,
            "holds": JSON,
            "street": JSON,
        },
    ),
    button=JSON,
    actions=ACTIONS,
    holes=st.dictionaries(SEAT_KEYS, st.lists(st.sampled_from(["As", "Kd", "??"]), max_size=3)),
)
def test_whatever_the_store_holds_the_page_draws_well_formed(
    seats: Any, hand: Any, button: Any, actions: list[tuple[int, str, int]], holes: Any
) -> None:
    snapshot = {"table_id": "T1", "seats": seats, "button": button, "hand": hand}
    view = table_view(TABLE_ROW, json.loads(json.dumps(snapshot)), {}, holes)
    drawing, _ = picture(view, events_of(actions, set()))
    root = ET.fromstring(table_svg(drawing))
    assert root.get("role") == "img"
    assert {
        int(g.get("data-seat") or 0)
        for g in root.iter()
        if "seat" in (g.get("class") or "").split()
    } == {s.seat for s in drawing.seats}


@given(
    seats=st.dictionaries(
        st.integers(1, 10).map(str),
        st.tuples(
            st.integers(0, 500),
            st.integers(0, 500),
            st.sampled_from(["live", "folded"]),
            st.booleans(),
        ),
        min_size=1,
        max_size=10,
    ),
    dead=st.integers(0, 30),
    actions=ACTIONS,
    closes=st.sets(st.integers(0, 8)),
)
def test_every_chip_committed_is_drawn_once_in_front_of_its_seat_or_in_a_pot(
    seats: dict[str, tuple[int, int, str, bool]],
    dead: int,
    actions: list[tuple[int, str, int]],
    closes: set[int],
) -> None:
    entries: dict[str, dict[str, Any]] = {
        n: {"stack": stack, "in_hand": dealt, "status": status, "committed": chips, "cards": 2}
        if dealt
        else {"stack": stack, "in_hand": False}
        for n, (stack, chips, status, dealt) in seats.items()
    }
    committed = {int(n): chips for n, (_, chips, _, dealt) in seats.items() if dealt}
    pot = sum(committed.values()) + dead
    view = table_view(TABLE_ROW, state(entries, pot=pot, to_act=None), {}, {})
    drawing, left_out = picture(view, events_of(actions, closes))
    assert not left_out
    bets = {s.seat: s.bet for s in drawing.seats if s.bet}
    assert sum(p.amount for p in drawing.pots) + sum(bets.values()) == pot
    for seat_, bet in bets.items():
        assert bet <= committed[seat_]
    live = {int(n) for n, e in entries.items() if e.get("status") == "live"}
    for pot_ in drawing.pots:
        assert set(pot_.eligible) <= live
