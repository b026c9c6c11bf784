"""The legal-action menu of the seat to act, and the amount checker of the dealer's station.

A pure function of the table: which of fold, check, call, bet, raise and all-in the seat to act
may enter now, the amount to call, the smallest and largest bet or raise ("to": the seat's total
in the round), the quick sizes of the action pad (the minimum, half the pot, the pot, each within
what is legal), and :func:`check_amount`, which gives the reason the daemon would refuse an entry
with. One implementation: both ask the functions the daemon's action handler applies (the
engine's hold gate :func:`controller.rules.holds.held`, :func:`controller.rules.actions.judge`,
:mod:`controller.game.betting`), never a copy of them. The daemon stays the judge: the table may
move on between the menu and the entry.

The menu is the table's betting structure's (the profile's ``betting.structure``: no-limit,
pot-limit or fixed-limit, :func:`controller.rules.actions.table_limits`), which the daemon
enforces; ``structure`` asks what the same table would allow under another one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from controller.game import betting
from controller.game.betting import Structure
from controller.rules import actions, holds
from controller.table.context import RejectedError
from controller.table.inputs import Action, ActionKind
from controller.table.state import Phase, TableState

#: The actions of the pad, in the order the station shows them.
PAD = (
    ActionKind.FOLD,
    ActionKind.CHECK,
    ActionKind.CALL,
    ActionKind.BET,
    ActionKind.RAISE,
    ActionKind.ALLIN,
)
#: The judging never reads the time; an entry needs one.
_NO_TIME = datetime(1970, 1, 1, tzinfo=UTC)


class Menu(NamedTuple):
    """What the seat to act may do now."""

    seat: int
    actions: tuple[ActionKind, ...]  # legal now, in pad order
    to_call: int  # the chips a call puts in (all the seat has, if less)
    call_to: int  # the seat's total in the round after calling
    min_to: int  # the smallest bet or raise "to" (0: the seat may not bet or raise)
    max_to: int  # the largest
    quick: tuple[tuple[str, int], ...]  # the pad's quick amounts: (label, "to")
    structure: Structure


def menu(table: TableState, structure: Structure | None = None) -> Menu | None:
    """The seat to act's menu, or None when no seat may act now (no hand, no open round, the
    cards still being dealt, a hold pending)."""
    hand = table.hand
    if hand is None or hand.phase is not Phase.BETTING or holds.held(hand) is not None:
        return None
    rnd = hand.chips.round
    seat = rnd.to_act if rnd is not None else None
    if rnd is None or seat is None:
        return None
    limits = _limits(table, structure)
    stacks, folded = hand.chips.stacks, hand.chips.folded
    options = betting.options(rnd, stacks, folded, limits)
    assert options is not None
    legal = []
    for kind in PAD:
        if kind is ActionKind.BET and rnd.current > 0:
            continue  # "raise" there: the pad shows one of the two
        if kind is ActionKind.RAISE and rnd.current == 0:
            continue
        amount = options.min_to if kind in (ActionKind.BET, ActionKind.RAISE) else None
        try:
            judged = actions.judge(table, Action(_NO_TIME, seat, kind, amount), limits)
        except RejectedError:
            continue
        outcome = judged.outcome
        if kind is ActionKind.ALLIN and (outcome is None or not outcome.all_in):
            continue  # all-in that would only call short of the stack is a call
        legal.append(kind)
    return Menu(
        seat=seat,
        actions=tuple(legal),
        to_call=options.to_call,
        call_to=options.call_to,
        min_to=options.min_to,
        max_to=options.max_to,
        quick=betting.quick_sizes(rnd, seat, stacks, limits) if options.can_raise else (),
        structure=limits.structure,
    )


def check_amount(
    table: TableState,
    seat: int,
    action: ActionKind,
    amount: int | None = None,
    structure: Structure | None = None,
) -> str | None:
    """None when the daemon would take the entry as it stands; else the reason it would give
    (``command.rejected``'s, or the under-call's ``irregularity.detected``, DE-1549a)."""
    hand = table.hand
    try:
        if hand is not None:
            refusal = holds.held(hand)
            if refusal is not None:
                raise refusal
        judged = actions.judge(
            table, Action(_NO_TIME, seat, action, amount), _limits(table, structure)
        )
    except RejectedError as exc:
        return exc.reason
    if judged.under_call is not None:
        return judged.under_call.reason
    return None


def _limits(table: TableState, structure: Structure | None) -> betting.Limits:
    """The table's own limits, or ``structure``'s for the hand in progress."""
    hand = table.hand
    if hand is None:
        return betting.NO_LIMIT  # nothing to judge: the entry is refused before limits matter
    if structure is None:
        return actions.table_limits(table, hand)
    return actions.limits_for(structure, hand, table.blinds[1], table.profile.betting_cap)
