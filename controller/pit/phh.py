"""A PHH hand history from the events the pit stored for a hand.

The table exports PHH from its journal by replaying the hand through the core
(``tablectl journal export --phh``); the pit has only the events, which say the same: who was dealt
in and the stacks (``hand.started``), each betting action (``betting.action``; the automatic
blind and ante posts are the PHH header's), the board (``board.dealt``), the showdown
(``showdown.hand.tabled`` / ``mucked``) and the stacks after (``hand.completed``); the house's
money and the blind structures too: the straddles (``hand.started``), the seat that posted the
table's ante (its ``betting.action`` post citing ANTE-TABLE), the runouts (``hand.runouts.agreed``,
``board.runout.started``) and the rake and jackpot drop (``pot.rake.taken``). Both are written by
the one renderer, :func:`controller.phh.render_phh`.

Hole cards are in the secure view only (``deal.group.delivered``): from the public view a hand
shows the cards it tabled and ``????`` for the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.phh import PhhHand, render_phh
from controller.table.inputs import ActionKind
from controller.table.streets import Street

_KINDS = frozenset(kind.value for kind in ActionKind)


class NoHistoryError(ValueError):
    """A hand with no history to write (not completed, or its start was never stored)."""


def _seat_map(value: Any) -> dict[int, int]:
    if not isinstance(value, dict):
        return {}
    return {int(k): int(v) for k, v in value.items() if str(k).isdigit() and isinstance(v, int)}


def _street(label: Any) -> Street | None:
    name = str(label or "").upper()
    return Street[name] if name in Street.__members__ else None


def phh_from_events(envelopes: Iterable[Mapping[str, Any]]) -> str:
    """The PHH text of one completed hand from its envelopes, in seq order."""
    started: Mapping[str, Any] | None = None
    completed: Mapping[str, Any] | None = None
    table_id = hand_id = ""
    street = Street.PREFLOP
    actions: list[tuple[Street, int, ActionKind, int]] = []
    board: tuple[str, ...] = ()
    burns: list[str] = []
    deal_order: list[int] = []
    dealt: dict[int, tuple[str, ...]] = {}
    tabled: dict[int, tuple[str, ...]] = {}
    declarations: list[tuple[int, bool]] = []
    declared: set[int] = set()
    at_showdown = False
    ante_seat: int | None = None
    runouts: list[tuple[str, ...]] = []
    run_from: Street | None = None
    rake: tuple[int, ...] | None = None
    jackpot = 0
    for body in envelopes:
        kind = body.get("type")
        data = body.get("data") or {}
        table_id = str(body.get("table_id", table_id))
        hand_id = str(body.get("hand_id") or hand_id)
        if kind == "hand.started":
            started = data
        elif kind == "hand.completed":
            completed = data
        elif kind in ("hand.misdeal", "hand.void"):
            raise NoHistoryError(f"hand {hand_id} ended in a {kind.split('.')[1]}: no PHH")
        elif kind == "board.dealt":
            dealt_street = _street(data.get("street"))
            street = street if dealt_street is None else dealt_street
            board = tuple(data.get("board") or board)
        elif kind == "betting.action" and data.get("blind") == "ante":
            if "ANTE-TABLE" in (body.get("rules") or ()) and isinstance(data.get("seat"), int):
                ante_seat = data["seat"]
        elif kind == "hand.runouts.agreed":
            run_from = _street(data.get("street"))
        elif kind == "board.runout.started":
            runouts.append(tuple(data.get("previous") or ()))
        elif kind == "pot.rake.taken":
            pots = data.get("pots")
            rake = tuple(p for p in pots if isinstance(p, int)) if isinstance(pots, list) else ()
            jackpot = data["jackpot"] if isinstance(data.get("jackpot"), int) else 0
        elif kind == "betting.action" and data.get("blind") is None:
            seat, action = data.get("seat"), data.get("action")
            if isinstance(seat, int) and isinstance(action, str) and action in _KINDS:
                actions.append((street, seat, ActionKind(action), int(data.get("to") or 0)))
        elif kind == "card.burn.assigned" and isinstance(data.get("card"), str):
            burns.append(data["card"])
        elif kind == "deal.group.delivered" and isinstance(data.get("seat"), int):
            seat = data["seat"]
            if seat not in deal_order and not data.get("replacement"):
                deal_order.append(seat)
            cards = data.get("cards")
            if isinstance(cards, list):
                held = dealt.get(seat, ()) if data.get("replacement") else ()
                dealt[seat] = (*held, *cards)[-2:]
        elif kind == "deal.group.dispensed" and data.get("purpose") == "hole":
            seat = data.get("seat")
            if isinstance(seat, int) and seat not in deal_order:
                deal_order.append(seat)
        elif kind == "showdown.order":
            at_showdown = True
        elif kind == "showdown.hand.tabled" and isinstance(data.get("seat"), int):
            seat = data["seat"]
            tabled[seat] = tuple(data.get("cards") or ())
            if seat not in declared:
                declared.add(seat)
                declarations.append((seat, True))
        elif kind in ("showdown.hand.mucked", "seat.hand.dead") and isinstance(
            data.get("seat"), int
        ):
            seat = data["seat"]
            if (kind == "showdown.hand.mucked" or at_showdown) and seat not in declared:
                declared.add(seat)
                declarations.append((seat, False))
    if started is None:
        raise NoHistoryError(f"hand {hand_id}: its start was not stored")
    if completed is None:
        raise NoHistoryError(f"hand {hand_id} is not completed")
    order = tuple(int(s) for s in started.get("seats", ()))
    blinds = started.get("blinds") or [0, 0]
    for seat, cards in tabled.items():
        dealt.setdefault(seat, cards)
    number = hand_id.rpartition("-")[2]
    return render_phh(
        PhhHand(
            table_id=table_id,
            number=int(number) if number.isdigit() else 0,
            hand_id=hand_id,
            button=int(started.get("button", 0)),
            order=order,
            deal_order=tuple(deal_order) or order,
            dealt=dealt,
            board=board,
            actions=tuple(actions),
            declarations=tuple(declarations),
            start_stacks=_seat_map(started.get("stacks")),
            finishing_stacks=_seat_map(completed.get("stacks")),
            burns=tuple(burns),
            blinds=(int(blinds[0]), int(blinds[1])),
            ante=int(started.get("ante") or 0),
            ante_seat=ante_seat,
            straddles=tuple(_seat_map(started.get("straddles")).items()),
            runouts=tuple(runouts),
            run_from=run_from,
            rake=rake,
            jackpot=jackpot,
        )
    )
