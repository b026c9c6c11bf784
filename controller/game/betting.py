"""No-limit betting: one round at a time, as pure functions.

A round knows each seat's bet in the round, the highest bet, the size of the last full bet or
raise (the minimum raise increment) and the queue of seats still to act. Rules implemented here:

* the minimum opening bet is the big blind; a raise must be at least the last full bet or raise
  of the round (preflop the big blind counts as the opening bet);
* an all-in for less than a full raise does not reopen the betting to a seat that has already
  acted, unless the all-ins since it acted add up to a full raise (TDA 47, RRoP No-limit 4);
* a bet or raise needs somebody left who could call it;
* the round closes when every seat that can act has acted and matched the highest bet, or when
  only one hand is left.

Amounts are "to": a seat's total bet in the round after the action, as PHH writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from controller.table.inputs import ActionKind
from controller.table.streets import Street


class Round(NamedTuple):
    """The state of the open betting round."""

    street: Street
    bets: Mapping[int, int]
    current: int
    full_raise: int
    queue: tuple[int, ...]
    acted_at: Mapping[int, int]
    aggressor: int | None = None
    first_actor: int | None = None
    actions: int = 0

    @property
    def to_act(self) -> int | None:
        """The seat whose turn it is, or None when the round is over."""
        return self.queue[0] if self.queue else None


class Outcome(NamedTuple):
    """A valid action and what it did."""

    round: Round
    kind: ActionKind
    to: int
    put_in: int
    all_in: bool
    full: bool


class ActionRejectedError(ValueError):
    """An action that is not legal now; the message says why."""


def clockwise_from(order: tuple[int, ...], seat: int) -> tuple[int, ...]:
    """``order`` rotated so that it starts just after ``seat``."""
    i = order.index(seat)
    return order[i + 1 :] + order[: i + 1]


def open_round(
    street: Street,
    first: tuple[int, ...],
    stacks: Mapping[int, int],
    folded: frozenset[int],
    big_blind: int,
    bets: Mapping[int, int] | None = None,
) -> Round:
    """Open a round; ``first`` is every dealt-in seat, starting with the first to act."""
    bets = bets if bets is not None else {}
    current = max(bets.values(), default=0)
    can_act = tuple(s for s in first if s not in folded and stacks[s] > 0)
    queue = can_act
    if len(can_act) <= 1 and all(bets.get(s, 0) >= current for s in can_act):
        queue = ()
    return Round(street, bets, current, big_blind, queue, {})


def can_raise(rnd: Round, seat: int, stacks: Mapping[int, int], folded: frozenset[int]) -> bool:
    """Whether ``seat``, to act, may bet or raise rather than only call or fold."""
    bet = rnd.bets.get(seat, 0)
    if stacks[seat] <= rnd.current - bet:
        return False  # cannot even cover the call
    if seat in rnd.acted_at and rnd.current - rnd.acted_at[seat] < rnd.full_raise:
        return False  # facing only an incomplete raise since it last acted
    current = rnd.current
    bets = rnd.bets
    for other, chips in stacks.items():
        if other != seat and chips and other not in folded and chips + bets.get(other, 0) > current:
            return True
    return False


def min_raise_to(rnd: Round, seat: int, stacks: Mapping[int, int]) -> int:
    """The smallest legal bet or raise "to" for ``seat`` (all-in for less is always allowed)."""
    return min(rnd.current + rnd.full_raise, rnd.bets.get(seat, 0) + stacks[seat])


def act(
    rnd: Round,
    order: tuple[int, ...],
    stacks: Mapping[int, int],
    folded: frozenset[int],
    seat: int,
    kind: ActionKind,
    amount: int | None,
) -> Outcome:
    """Apply one action by the seat to act; raise ActionRejectedError when it is not legal."""
    if not rnd.queue:
        raise ActionRejectedError("the betting round is closed")
    if seat != rnd.queue[0]:
        raise ActionRejectedError(f"it is seat {rnd.queue[0]}'s turn, not seat {seat}'s")
    bet = rnd.bets.get(seat, 0)
    stack = stacks[seat]
    to_call = rnd.current - bet
    most = bet + stack

    # whether the seat may raise (a look at every stack) is asked only when it means to
    if kind is ActionKind.ALLIN:
        if can_raise(rnd, seat, stacks, folded):
            kind = ActionKind.BET if rnd.current == 0 else ActionKind.RAISE
            return _aggressive(rnd, order, stacks, folded, seat, kind, most, raising=True)
        kind, amount = ActionKind.CALL, None
    if kind is ActionKind.FOLD:
        return _passive(rnd, seat, ActionKind.FOLD, bet, 0, all_in=False)
    if kind is ActionKind.CHECK:
        if to_call > 0:
            raise ActionRejectedError(f"seat {seat} cannot check: {to_call} to call")
        return _passive(rnd, seat, ActionKind.CHECK, bet, 0, all_in=False)
    if kind is ActionKind.CALL:
        if to_call <= 0:
            raise ActionRejectedError(f"seat {seat} has nothing to call: check instead")
        put_in = min(to_call, stack)
        to = bet + put_in
        if amount is not None and amount != to:
            raise ActionRejectedError(f"seat {seat} calls to {to}, not {amount}")
        return _passive(rnd, seat, ActionKind.CALL, to, put_in, all_in=put_in == stack)
    if kind in (ActionKind.BET, ActionKind.RAISE):
        raising = can_raise(rnd, seat, stacks, folded)
        return _aggressive(rnd, order, stacks, folded, seat, kind, amount, raising=raising)
    raise ActionRejectedError(f"{kind.value} is not a betting-round action here")


def _passive(
    rnd: Round, seat: int, kind: ActionKind, to: int, put_in: int, *, all_in: bool
) -> Outcome:
    bets = rnd.bets if put_in == 0 else {**rnd.bets, seat: to}
    new = Round(
        rnd.street,
        bets,
        rnd.current,
        rnd.full_raise,
        rnd.queue[1:],
        {**rnd.acted_at, seat: rnd.current},
        rnd.aggressor,
        rnd.first_actor if rnd.first_actor is not None else seat,
        rnd.actions + 1,
    )
    return Outcome(new, kind, to, put_in, all_in, full=False)


def _aggressive(
    rnd: Round,
    order: tuple[int, ...],
    stacks: Mapping[int, int],
    folded: frozenset[int],
    seat: int,
    kind: ActionKind,
    amount: int | None,
    raising: bool,
) -> Outcome:
    bet = rnd.bets.get(seat, 0)
    most = bet + stacks[seat]
    if rnd.current == 0 and kind is ActionKind.RAISE:
        kind = ActionKind.BET
    elif rnd.current > 0 and kind is ActionKind.BET:
        kind = ActionKind.RAISE
    if amount is None:
        raise ActionRejectedError(f"a {kind.value} needs an amount (the seat's total, 'to')")
    if not raising:
        raise ActionRejectedError(f"seat {seat} may only call or fold now")
    if amount > most:
        raise ActionRejectedError(f"seat {seat} has only {most} in total, cannot go to {amount}")
    smallest = min_raise_to(rnd, seat, stacks)
    if amount < smallest:
        what = "bet" if kind is ActionKind.BET else "raise"
        raise ActionRejectedError(f"the minimum {what} is to {smallest}, not {amount}")
    increment = amount - rnd.current
    full = increment >= rnd.full_raise
    queue = tuple(
        s for s in clockwise_from(order, seat) if s != seat and s not in folded and stacks[s] > 0
    )
    new = Round(
        rnd.street,
        {**rnd.bets, seat: amount},
        amount,
        increment if full else rnd.full_raise,
        queue,
        {**rnd.acted_at, seat: amount},
        seat,
        rnd.first_actor if rnd.first_actor is not None else seat,
        rnd.actions + 1,
    )
    return Outcome(new, kind, amount, amount - bet, all_in=amount == most, full=full)


def settle_queue(rnd: Round, stacks: Mapping[int, int], folded: frozenset[int]) -> Round:
    """Close the round when nobody who can still act has anything left to decide."""
    if not rnd.queue:
        return rnd
    current = rnd.current
    # the seats that can still act, looked at only until a second one turns up (every action)
    able = None
    for seat, chips in stacks.items():
        if chips > 0 and seat not in folded:
            if able is not None:
                return rnd  # two or more can still act
            able = seat
    if able is not None and rnd.bets.get(able, 0) < current:
        return rnd  # the one who can act still owes the call
    return Round(
        rnd.street,
        rnd.bets,
        current,
        rnd.full_raise,
        (),
        rnd.acted_at,
        rnd.aggressor,
        rnd.first_actor,
        rnd.actions,
    )


class Options(NamedTuple):
    """What the seat to act may do: the dealer console shows these."""

    seat: int
    to_call: int
    call_to: int
    can_check: bool
    can_raise: bool
    min_to: int
    max_to: int


def options(rnd: Round, stacks: Mapping[int, int], folded: frozenset[int]) -> Options | None:
    """The legal choices of the seat to act, or None when nobody is to act."""
    seat = rnd.to_act
    if seat is None:
        return None
    bet = rnd.bets.get(seat, 0)
    to_call = min(rnd.current - bet, stacks[seat])
    raising = can_raise(rnd, seat, stacks, folded)
    return Options(
        seat=seat,
        to_call=to_call,
        call_to=bet + to_call,
        can_check=rnd.current == bet,
        can_raise=raising,
        min_to=min_raise_to(rnd, seat, stacks) if raising else 0,
        max_to=bet + stacks[seat] if raising else 0,
    )


def drop_seat(rnd: Round, seat: int) -> Round:
    """The round without ``seat`` in its queue (its hand died between actions)."""
    return rnd._replace(queue=tuple(s for s in rnd.queue if s != seat))
