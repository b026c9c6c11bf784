"""A betting action checked at the station before it is sent, with the core's own functions.

The daemon's view carries the open betting round as the core keeps it and the table's betting
structure's bounds in it (:func:`controller.shell.watch_view.table_view`: the limits
:func:`controller.rules.actions.table_limits` gives the daemon's judge); the station rebuilds the
core's :class:`~controller.game.betting.Round` and :class:`~controller.game.betting.Limits` from
it and asks :func:`controller.game.betting.act` (the function the daemon's judge applies) whether
the action is legal, so an illegal raise (over the pot at pot-limit, not the fixed size or over
the cap at fixed-limit) is refused here with the reason the daemon would give, and nothing is
sent. The daemon checks it
again: it stays the judge (the table may have moved on between the view and the request).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.game import betting
from controller.game.betting import ActionRejectedError, Limits, Round, Structure
from controller.table.inputs import ActionKind
from controller.table.streets import Street

#: The actions the station's action pad sends.
PAD = {kind.value: kind for kind in ActionKind if kind is not ActionKind.POST}


class IllegalError(ValueError):
    """An action refused before it is sent; ``status`` is the HTTP status that says so."""

    def __init__(self, reason: str, status: int = 409) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


def check_action(
    table: Mapping[str, Any], seat: int | None, action: str, amount: int | None
) -> tuple[int, ActionKind, int | None]:
    """The seat, action and amount to send for the station's action pad (the seat to act when
    ``seat`` is None); :class:`IllegalError` with the reason when the core would refuse it."""
    kind = PAD.get(action)
    if kind is None:
        raise IllegalError(f"unknown action {action!r} (one of {', '.join(PAD)})", 422)
    seats = table.get("seats", {})
    if seat is not None and str(seat) not in seats:
        raise IllegalError(f"seat {seat} is not at this table", 422)
    hand = table.get("hand")
    if hand is None:
        raise IllegalError("no hand is in progress: start one")
    if hand.get("phase") == "dealing":
        raise IllegalError("the hole groups are not all dealt yet")
    round_ = hand.get("round")
    if hand.get("phase") != "betting" or round_ is None:
        raise IllegalError("no betting round is open")
    if seat is None:
        seat = hand.get("to_act")
        if seat is None:
            raise IllegalError("no seat is to act")
    order = tuple(hand["order"])
    if seat not in order:
        raise IllegalError(f"seat {seat} is not in hand {hand['hand_id']}")
    stacks = {int(s): entry["stack"] for s, entry in seats.items() if int(s) in order}
    folded = frozenset(
        int(s) for s, entry in seats.items() if entry.get("status") in ("folded", "dead")
    )
    if seat in folded:
        raise IllegalError(f"seat {seat}'s hand is folded or dead")
    if kind in (ActionKind.BET, ActionKind.RAISE) and amount is None:
        raise IllegalError(f"a {kind.value} needs an amount (the seat's total, 'to')", 422)
    limits = limits_of(hand.get("limits"))
    try:
        betting.act(round_of(round_), order, stacks, folded, seat, kind, amount, limits)
    except ActionRejectedError as exc:
        raise IllegalError(str(exc)) from None
    return seat, kind, amount


def round_of(body: Mapping[str, Any]) -> Round:
    """The core's betting round from its form in the view."""
    return Round(
        Street[str(body["street"]).upper()],
        _seats(body.get("bets", {})),
        int(body["current"]),
        int(body["full_raise"]),
        tuple(int(s) for s in body.get("queue", ())),
        _seats(body.get("acted_at", {})),
        body.get("aggressor"),
        body.get("first_actor"),
        int(body.get("actions", 0)),
    )


def limits_of(body: Mapping[str, Any] | None) -> Limits:
    """The core's limits of the open round from their form in the view (none: no-limit, as a
    daemon that does not send them plays)."""
    if not body:
        return betting.NO_LIMIT
    return Limits(
        Structure(str(body["structure"])),
        int(body.get("pot", 0)),
        int(body.get("size", 0)),
        int(body.get("base", 0)),
        int(body.get("raises", 0)),
        int(body.get("cap", 0)),
    )


def _seats(values: Mapping[str, Any]) -> dict[int, int]:
    return {int(seat): int(chips) for seat, chips in values.items()}
