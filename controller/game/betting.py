"""Betting: one round at a time, as pure functions.

A round knows each seat's bet in the round, the highest bet, the size of the last full bet or
raise (the minimum raise increment) and the queue of seats still to act. Rules implemented here:

* the minimum opening bet is the big blind; a raise must be at least the last full bet or raise
  of the round (preflop the big blind counts as the opening bet);
* an all-in for less than a full raise does not reopen the betting to a seat that has already
  acted, unless the all-ins since it acted add up to a full raise (TDA 47, RRoP No-limit 4);
* a bet or raise needs somebody left who could call it;
* the round closes when every seat that can act has acted and matched the highest bet, or when
  only one hand is left.

How big a bet or raise may be is the betting structure's (:class:`Limits`): no-limit, the whole
stack; pot-limit, at most the pot after the call (the call, then a raise the size of the pot);
fixed-limit, the street's one size over the level of the last bet or raise that counted, at most
a bet and three raises a round (RRoP, Betting and raising 3-4: unless the action became heads-up
before the cap), an all-in of half a bet or more counting as a raise and reopening the betting
(RRoP, Betting and raising 6; TDA 47). The table's rules profile names its structure
(``betting.structure``, docs/profiles.md); ``controller/rules/actions.py`` works out its
:class:`Limits` for the open round, and a refusal says which bound it met (:class:`Bound`), so
the judge cites the rule (RR-PL, RR-BR-5/6, RR-BR-3/4). The arithmetic is checked against
pokerkit (``tests/core/test_menu.py``, ``tests/core/test_structures.py``).

Amounts are "to": a seat's total bet in the round after the action, as PHH writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
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


class Bound(StrEnum):
    """Which bound of the betting structure refused an amount (none: the rules every structure
    shares, such as the minimum raise or the turn to act)."""

    POT = "pot"  # pot-limit: more than the pot after the call
    SIZE = "size"  # fixed-limit: not the street's one size
    CAP = "cap"  # fixed-limit: the round's bets and raises reached the cap


class ActionRejectedError(ValueError):
    """An action that is not legal now; the message says why, ``bound`` which bound of the
    structure it met."""

    def __init__(self, reason: str, bound: Bound | None = None) -> None:
        super().__init__(reason)
        self.bound = bound


class Structure(StrEnum):
    """How big a bet or raise may be."""

    NO_LIMIT = "no_limit"  # from the minimum to the whole stack
    POT_LIMIT = "pot_limit"  # at most the pot after the call
    FIXED_LIMIT = "fixed_limit"  # the street's one size


class Limits(NamedTuple):
    """What the structure allows in the open round beyond the stacks (no-limit: nothing more).

    ``pot``: every chip in the middle now, this round's bets included (pot-limit, and the quick
    sizes); ``size``: the street's bet (fixed-limit: the big blind before the turn, twice it
    from the turn); ``base``: the level the next fixed-limit bet or raise goes one size over (the
    last bet or raise that counted; 0 before a bet); ``raises``: the bets and raises that counted
    this round (before the flop the big blind and each straddle count); ``cap``: the most of
    them (0: no cap; RRoP, Betting and raising 3-4: a bet and three raises where three or more
    players can still bet, unlimited once the action is heads-up before the cap is reached).
    """

    structure: Structure = Structure.NO_LIMIT
    pot: int = 0
    size: int = 0
    base: int = 0
    raises: int = 0
    cap: int = 4


NO_LIMIT = Limits()


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


def reopens(increment: int, rnd: Round, limits: Limits = NO_LIMIT) -> bool:
    """Whether raising the level by ``increment`` reopens the betting (TDA 47): a full raise;
    in fixed limit half a bet."""
    if limits.structure is Structure.FIXED_LIMIT:
        return 2 * increment >= limits.size
    return increment >= rnd.full_raise


def capped(limits: Limits = NO_LIMIT) -> bool:
    """Fixed limit: the round's bets and raises reached the cap (RRoP, Betting and raising 3)."""
    return limits.structure is Structure.FIXED_LIMIT and 0 < limits.cap <= limits.raises


def can_raise(
    rnd: Round,
    seat: int,
    stacks: Mapping[int, int],
    folded: frozenset[int],
    limits: Limits = NO_LIMIT,
) -> bool:
    """Whether ``seat``, to act, may bet or raise rather than only call or fold."""
    bet = rnd.bets.get(seat, 0)
    if stacks[seat] <= rnd.current - bet:
        return False  # cannot even cover the call
    if seat in rnd.acted_at and not reopens(rnd.current - rnd.acted_at[seat], rnd, limits):
        return False  # facing only an incomplete raise since it last acted
    if capped(limits):
        return False
    current = rnd.current
    bets = rnd.bets
    for other, chips in stacks.items():
        if other != seat and chips and other not in folded and chips + bets.get(other, 0) > current:
            return True
    return False


def min_raise_to(
    rnd: Round, seat: int, stacks: Mapping[int, int], limits: Limits = NO_LIMIT
) -> int:
    """The smallest legal bet or raise "to" for ``seat`` (all-in for less is always allowed)."""
    most = rnd.bets.get(seat, 0) + stacks[seat]
    if limits.structure is Structure.FIXED_LIMIT:
        return min(limits.base + limits.size, most)
    return min(rnd.current + rnd.full_raise, most)


def max_raise_to(
    rnd: Round, seat: int, stacks: Mapping[int, int], limits: Limits = NO_LIMIT
) -> int:
    """The largest legal bet or raise "to" for ``seat``: its stack, the pot after the call
    (pot-limit), the one size (fixed-limit)."""
    bet = rnd.bets.get(seat, 0)
    most = bet + stacks[seat]
    if limits.structure is Structure.NO_LIMIT:
        return most
    least = min_raise_to(rnd, seat, stacks, limits)
    if limits.structure is Structure.FIXED_LIMIT:
        return least
    # pot-limit: call, then raise by the pot with the call in it
    pot_to = rnd.current + limits.pot + (rnd.current - bet)
    return min(most, max(pot_to, least))


def quick_sizes(
    rnd: Round, seat: int, stacks: Mapping[int, int], limits: Limits = NO_LIMIT
) -> tuple[tuple[str, int], ...]:
    """The action pad's quick amounts ("to"): the minimum, half the pot and the pot (a raise of
    the pot after the call), each within what is legal; fixed-limit, the one size."""
    low = min_raise_to(rnd, seat, stacks, limits)
    high = max_raise_to(rnd, seat, stacks, limits)
    if limits.structure is Structure.FIXED_LIMIT:
        return (("fixed", low),)
    after_call = limits.pot + rnd.current - rnd.bets.get(seat, 0)
    sizes: list[tuple[str, int]] = []
    for label, wanted in (
        ("minimum", low),
        ("half pot", rnd.current + after_call // 2),
        ("pot", rnd.current + after_call),
    ):
        to = max(low, min(high, wanted))
        if all(to != taken for _, taken in sizes):
            sizes.append((label, to))
    return tuple(sizes)


def act(
    rnd: Round,
    order: tuple[int, ...],
    stacks: Mapping[int, int],
    folded: frozenset[int],
    seat: int,
    kind: ActionKind,
    amount: int | None,
    limits: Limits = NO_LIMIT,
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
        if can_raise(rnd, seat, stacks, folded, limits):
            kind = ActionKind.BET if rnd.current == 0 else ActionKind.RAISE
            return _aggressive(rnd, order, stacks, folded, seat, kind, most, True, limits)
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
        raising = can_raise(rnd, seat, stacks, folded, limits)
        return _aggressive(rnd, order, stacks, folded, seat, kind, amount, raising, limits)
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
    limits: Limits,
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
        if capped(limits) and can_raise(rnd, seat, stacks, folded, limits._replace(cap=0)):
            raise ActionRejectedError(
                f"the betting is capped at {limits.cap} bets and raises: seat {seat} may only "
                "call or fold",
                Bound.CAP,
            )
        raise ActionRejectedError(f"seat {seat} may only call or fold now")
    if amount > most:
        raise ActionRejectedError(f"seat {seat} has only {most} in total, cannot go to {amount}")
    what = "bet" if kind is ActionKind.BET else "raise"
    smallest = min_raise_to(rnd, seat, stacks, limits)
    largest = max_raise_to(rnd, seat, stacks, limits)
    if limits.structure is Structure.FIXED_LIMIT and amount != largest:
        raise ActionRejectedError(f"a fixed-limit {what} is to {largest}, not {amount}", Bound.SIZE)
    if amount < smallest:
        raise ActionRejectedError(f"the minimum {what} is to {smallest}, not {amount}")
    if amount > largest:
        raise ActionRejectedError(
            f"the most a pot-limit {what} is to {largest}, not {amount}", Bound.POT
        )
    increment = amount - rnd.current
    full = reopens(increment, rnd, limits)
    queue = tuple(
        s for s in clockwise_from(order, seat) if s != seat and s not in folded and stacks[s] > 0
    )
    new = Round(
        rnd.street,
        {**rnd.bets, seat: amount},
        amount,
        increment if full and limits.structure is not Structure.FIXED_LIMIT else rnd.full_raise,
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


def options(
    rnd: Round, stacks: Mapping[int, int], folded: frozenset[int], limits: Limits = NO_LIMIT
) -> Options | None:
    """The legal choices of the seat to act, or None when nobody is to act."""
    seat = rnd.to_act
    if seat is None:
        return None
    bet = rnd.bets.get(seat, 0)
    to_call = min(rnd.current - bet, stacks[seat])
    raising = can_raise(rnd, seat, stacks, folded, limits)
    return Options(
        seat=seat,
        to_call=to_call,
        call_to=bet + to_call,
        can_check=rnd.current == bet,
        can_raise=raising,
        min_to=min_raise_to(rnd, seat, stacks, limits) if raising else 0,
        max_to=max_raise_to(rnd, seat, stacks, limits) if raising else 0,
    )


def drop_seat(rnd: Round, seat: int) -> Round:
    """The round without ``seat`` in its queue (its hand died between actions)."""
    return rnd._replace(queue=tuple(s for s in rnd.queue if s != seat))
