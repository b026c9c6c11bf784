"""The table page's drawing: the pit's view of a table (:func:`.views.table_view`, from the
table's retained public snapshot) and its latest events, as the drawing's model
(:class:`controller.view.drawing.TableDrawing`).

The snapshot says each seat's stack, what it committed to the hand, whether it is in the hand
and folded, the button, who acts, the board, the pot and the holds; it does not say what is in
front of each seat in this betting round, nor the side pots. Those come from the hand's events:

* a seat's bet is what its actions of the round put in (``betting.action``: a post adds its
  chips, an action sets the seat's bet to its ``to``), counted from the round's start
  (``hand.started``, ``betting.round.closed``); when the events the page read do not reach back
  to the round's start, the bets are not known and none is drawn;
* the pots are the core's own (:func:`controller.game.pots.build_pots`, POT-SEP) over the chips
  each seat committed less its bet of this round, its live seats those in the hand and not
  folded; dead money (the pot beyond the seats' chips) is in the main pot.

So every chip committed to the hand is drawn once: in front of its seat, or in a pot.

What cannot be drawn (a seat number no table has, a card that is not a card) is left out and the
view says ``malformed``, as the rest of the console does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.cards import is_card
from controller.game.pots import build_pots
from controller.table.decoder import decode
from controller.table.event_types import (
    BettingAction,
    BettingActionCorrected,
    BettingRoundClosed,
    HandCompleted,
    HandMisdeal,
    HandStarted,
    HandVoid,
)
from controller.table.inputs import ActionKind
from controller.view.drawing import (
    BOARD_CARDS,
    MAX_PLACES,
    HoldMark,
    PotDrawing,
    SeatDrawing,
    SeatState,
    TableDrawing,
)

#: Posts that are not a seat's bet: the chips go straight into the pot.
NOT_A_BET = frozenset({"ante", "dead"})
#: The events after which nothing is in front of any seat: a round begins (or the hand ended).
ROUND_STARTS = (HandStarted, BettingRoundClosed, HandCompleted, HandMisdeal, HandVoid)
#: The most cards a seat is drawn with (two, and a replacement on its way).
SEAT_CARDS = 4


def round_bets(events: Iterable[Mapping[str, Any]], hand_id: str | None) -> dict[int, int] | None:
    """Seat → chips it put in this betting round of hand ``hand_id``, from ``events`` (any
    order); None when they do not reach back to the round's start."""
    if hand_id is None:
        return None
    mine = sorted(
        (e for e in events if e.get("hand_id") == hand_id and _number(e.get("seq")) is not None),
        key=lambda e: int(e["seq"]),
    )
    bets: dict[int, int] | None = None
    for envelope in mine:
        record = decode(envelope)
        if isinstance(record, ROUND_STARTS):
            bets = {}
        elif isinstance(record, BettingActionCorrected):
            bets = None  # the correction's effect on the bets is not in its event
        elif isinstance(record, BettingAction) and bets is not None:
            seat = record.seat
            if record.action is ActionKind.POST:
                if record.blind not in NOT_A_BET:
                    bets[seat] = bets.get(seat, 0) + (record.amount or 0)
            elif record.to is not None:
                bets[seat] = record.to
    return bets


def picture(
    view: Mapping[str, Any], events: Iterable[Mapping[str, Any]]
) -> tuple[TableDrawing, bool]:
    """The drawing of the table ``view`` shows (:func:`.views.table_view`), with its ``events``
    (newest first, as the page reads them), and whether anything had to be left out."""
    tile = view["tile"]
    left_out = False
    running = bool(view.get("running"))
    hand_id = tile.get("hand_id") if running else None
    bets = round_bets(events, hand_id) if running else None
    seats: list[SeatDrawing] = []
    committed: dict[int, int] = {}
    live: list[int] = []
    for entry in view["seats"]:
        number = int(entry["seat"])
        if not 1 <= number <= MAX_PLACES:
            left_out = True
            continue
        stack = entry["stack"]
        state = _state(entry, running)
        if state in (SeatState.PLAYING, SeatState.ALL_IN):
            live.append(number)
        if isinstance(entry.get("committed"), int) and entry["committed"] >= 0:
            committed[number] = entry["committed"]
        cards, bad = _cards(entry, state)
        left_out = left_out or bad
        bet = (bets or {}).get(number)
        seats.append(
            SeatDrawing(
                number,
                stack=stack if stack is None or stack >= 0 else None,
                bet=bet if bet and 0 < bet <= committed.get(number, 0) else None,
                cards=cards,
                state=state,
            )
        )
    occupied = {s.seat for s in seats}
    pots = _pots(view.get("pot"), committed, {s.seat: s.bet or 0 for s in seats}, live)
    board = tuple(str(c) for c in view["board"] if is_card(str(c)))[:BOARD_CARDS]
    left_out = left_out or len(board) != len(view["board"])
    holds = []
    for hold in view["holds"]:
        seat = hold.get("seat")
        holds.append(
            HoldMark(
                hold["rule"],
                hold.get("reason") or hold.get("ruling") or "",
                seat if seat in occupied else None,
            )
        )
    button, to_act = view.get("button"), view.get("to_act")
    caption = " · ".join(
        str(part)
        for part in (
            f"hand {hand_id}" if hand_id else "no hand in progress",
            tile.get("phase") if running else None,
            tile.get("street") if running and tile.get("street") != tile.get("phase") else None,
        )
        if part
    )
    drawing = TableDrawing(
        f"Table {tile['table_id']}",
        tuple(seats),
        places=MAX_PLACES,
        caption=caption,
        button=button if isinstance(button, int) and 1 <= button <= MAX_PLACES else None,
        to_act=to_act if to_act in occupied else None,
        pots=pots,
        board=board,
        holds=tuple(holds),
    )
    return drawing, left_out


def _state(entry: Mapping[str, Any], running: bool) -> SeatState:
    if not running:
        return SeatState.SEATED
    status = entry.get("status")
    if status == "folded":
        return SeatState.FOLDED
    if status == "live":
        return SeatState.ALL_IN if entry.get("stack") == 0 else SeatState.PLAYING
    return SeatState.SITTING_OUT  # seated, and not dealt into this hand


def _cards(entry: Mapping[str, Any], state: SeatState) -> tuple[tuple[str | None, ...], bool]:
    """The seat's cards: face up when the viewer sees them (surveillance), else face down."""
    if state not in (SeatState.PLAYING, SeatState.ALL_IN):
        return (), False
    hole = entry.get("hole")
    if isinstance(hole, list) and hole:
        faces = tuple(str(c) for c in hole if is_card(str(c)))[:SEAT_CARDS]
        return faces, len(faces) != len(hole)
    count = entry.get("cards")
    if isinstance(count, int) and count > 0:
        return (None,) * min(count, SEAT_CARDS), False
    return (), False


def _pots(
    pot: Any, committed: Mapping[int, int], bets: Mapping[int, int], live: list[int]
) -> tuple[PotDrawing, ...]:
    """The pots as they stand: every chip committed less the bets of this round (POT-SEP)."""
    gathered = {seat: chips - bets.get(seat, 0) for seat, chips in committed.items()}
    total = pot if isinstance(pot, int) and pot >= 0 else sum(committed.values())
    dead = max(0, total - sum(committed.values()))
    pots = [
        PotDrawing(p.amount, tuple(sorted(p.eligible)))
        for p in build_pots(gathered, sorted(live), dead)
        if p.amount > 0
    ]
    # chips no live seat reaches (every seat folded, as a snapshot between two events may say)
    # are still in the middle: in the main pot
    rest = sum(gathered.values()) + dead - sum(p.amount for p in pots)
    if rest > 0:
        main = pots[0] if pots else PotDrawing(0, tuple(sorted(live)))
        pots[:1] = [PotDrawing(main.amount + rest, main.eligible)]
    return tuple(pots)


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
