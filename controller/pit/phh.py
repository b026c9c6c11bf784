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

from controller.phh import PhhError, PhhHand, render_phh
from controller.table import event_types as et
from controller.table.decoder import decode
from controller.table.inputs import ActionKind, Purpose
from controller.table.streets import Street


class NoHistoryError(ValueError):
    """A hand with no history to write (not completed, or its start was never stored)."""


def _seats(value: Mapping[str, int] | None) -> dict[int, int]:
    return {int(k): v for k, v in (value or {}).items() if k.isdigit()}


def _street(label: str) -> Street | None:
    name = label.upper()
    return Street[name] if name in Street.__members__ else None


def phh_from_events(envelopes: Iterable[Mapping[str, Any]]) -> str:
    """The PHH text of one completed hand from its envelopes, in seq order."""
    started: et.HandStarted | None = None
    completed: et.HandCompleted | None = None
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
        e = decode(body)
        table_id = str(body.get("table_id", table_id))
        hand_id = str(body.get("hand_id") or hand_id)
        if isinstance(e, et.HandStarted):
            started = e
        elif isinstance(e, et.HandCompleted):
            completed = e
        elif isinstance(e, et.HandMisdeal | et.HandVoid):
            ending = "misdeal" if isinstance(e, et.HandMisdeal) else "void"
            raise NoHistoryError(f"hand {hand_id} ended in a {ending}: no PHH")
        elif isinstance(e, et.BoardDealt):
            street = _street(e.street) or street
            board = e.board or board
        elif isinstance(e, et.BettingAction) and e.blind == "ante":
            if "ANTE-TABLE" in (body.get("rules") or ()):
                ante_seat = e.seat
        elif isinstance(e, et.HandRunoutsAgreed):
            run_from = _street(e.street)
        elif isinstance(e, et.BoardRunoutStarted):
            runouts.append(e.previous)
        elif isinstance(e, et.PotRakeTaken):
            rake, jackpot = e.pots, e.jackpot
        elif isinstance(e, et.BettingAction) and e.blind is None:
            actions.append((street, e.seat, e.action, e.to or 0))
        elif isinstance(e, et.CardBurnAssigned) and (e.hidden_card or e.card) is not None:
            burns.append(e.hidden_card or e.card or "")
        elif isinstance(e, et.DealGroupDelivered):
            if e.seat not in deal_order and not e.replacement:
                deal_order.append(e.seat)
            if e.cards is not None:
                held = dealt.get(e.seat, ()) if e.replacement else ()
                dealt[e.seat] = (*held, *e.cards)[-2:]
        elif isinstance(e, et.DealGroupDispensed) and e.purpose is Purpose.HOLE:
            if e.seat is not None and e.seat not in deal_order:
                deal_order.append(e.seat)
        elif isinstance(e, et.ShowdownOrder):
            at_showdown = True
        elif isinstance(e, et.ShowdownHandTabled):
            tabled[e.seat] = e.cards
            if e.seat not in declared:
                declared.add(e.seat)
                declarations.append((e.seat, True))
        elif isinstance(e, et.ShowdownHandMucked | et.SeatHandDead):
            mucked = isinstance(e, et.ShowdownHandMucked)
            if (mucked or at_showdown) and e.seat not in declared:
                declared.add(e.seat)
                declarations.append((e.seat, False))
    if started is None:
        raise NoHistoryError(f"hand {hand_id}: its start was not stored")
    if completed is None:
        raise NoHistoryError(f"hand {hand_id} is not completed")
    for seat, cards in tabled.items():
        dealt.setdefault(seat, cards)
    number = hand_id.rpartition("-")[2]
    try:
        return render_phh(
            PhhHand(
                table_id=table_id,
                number=int(number) if number.isdigit() else 0,
                hand_id=hand_id,
                button=started.button,
                order=started.seats,
                deal_order=tuple(deal_order) or started.seats,
                dealt=dealt,
                board=board,
                actions=tuple(actions),
                declarations=tuple(declarations),
                start_stacks=_seats(started.stacks),
                finishing_stacks=_seats(completed.stacks),
                burns=tuple(burns),
                blinds=started.blinds,
                ante=started.ante,
                ante_seat=ante_seat,
                straddles=tuple(_seats(started.straddles).items()),
                runouts=tuple(runouts),
                run_from=run_from,
                rake=rake,
                jackpot=jackpot,
                betting=started.betting or "no_limit",
                cap=started.cap,
            )
        )
    except PhhError as exc:  # a hand PHH cannot say (a pot-limit one)
        raise NoHistoryError(str(exc)) from None
