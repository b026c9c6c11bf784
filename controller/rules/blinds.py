"""Missed blinds and new players (MISSED-BLINDS).

RRoP Button and Blind Use: a player who sits out while the big blind passes owes it; one who
sits out while the small blind passes owes that too. To play again before the big blind reaches
them they post what they owe (``post``): the big blind live, the small blind dead (dead money in
the main pot); or they wait, and come back in the big blind, which settles every debt. A new
player owes a big blind: they post it to enter, or wait for the big blind
(``blinds.new_player``). Which seats wait and which come in the big blind is decided with the
button (``controller/rules/button.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.profiles import NewPlayer
from controller.rules.ids import Rule
from controller.table.context import Context, RejectedError
from controller.table.event_types import SeatBlindsMissed, SeatPosting
from controller.table.inputs import Post
from controller.table.state import Owed, TableState

_CITE = (Rule.MISSED_BLINDS,)
WORDS = {Owed.SMALL: "the small blind", Owed.BIG: "the big blind", Owed.BOTH: "both blinds"}


def owed(table: TableState, seat: int) -> Owed | None:
    """What ``seat`` owes before it plays (a new player owes the big blind)."""
    debt = table.owes.get(seat)
    if debt is None and table.hands_started and seat not in table.played:
        return Owed.BIG
    return debt


def anyone_owes(table: TableState, seats: Iterable[int]) -> bool:
    """Whether missed blinds or new players need looking at (not in a table where none do)."""
    return bool(table.owes) or (table.hands_started > 0 and not table.played.issuperset(seats))


def settle(
    ctx: Context, order: tuple[int, ...], small: int | None, big: int
) -> list[tuple[int, int, int]]:
    """Mark the seats the blinds passed while they sat out, and what the seats dealt in post.

    Returns ``(seat, live, dead)`` for each seat that posts what it owes; the debts of every seat
    dealt in are settled (the big blind's by its blind, the small blind's small debt by its).
    """
    table = ctx.table
    sb, bb = table.blinds
    posts: list[tuple[int, int, int]] = []
    owes = dict(table.owes)
    for seat in order:
        debt = owed(table, seat)
        if debt is None or seat == big or (seat == small and debt is Owed.SMALL):
            owes.pop(seat, None)
            continue
        live = bb if debt in (Owed.BIG, Owed.BOTH) else 0
        dead = sb if debt in (Owed.SMALL, Owed.BOTH) else 0
        posts.append((seat, live, dead))
        owes.pop(seat, None)
    last = table.last_blinds
    if last is not None:
        dealt = set(order)
        out = {s for s, c in table.stacks.items() if c and s not in dealt and s in table.played}
        for seat in sorted(out):
            missed_big = _between(last[1], big, seat)
            # no small blind (a dead button): it was the last big blind's, had it been dealt in
            missed_small = seat == last[1] if small is None else _between(last[0], small, seat)
            if not (missed_big or missed_small):
                continue
            before = owes.get(seat)
            now = _combine(before, Owed.BIG if missed_big else Owed.SMALL)
            if missed_big and missed_small:
                now = Owed.BOTH
            if now is not before:
                owes[seat] = now
                ctx.emit(SeatBlindsMissed(seat, now.value), _CITE)
    table.owes = owes
    table.posting = table.posting - set(order)
    table.played = table.played | set(order)
    return posts


def _between(start: int, end: int, seat: int) -> bool:
    """Whether ``seat`` lies clockwise after ``start`` and up to ``end`` (a blind passed it)."""
    if start == end:
        return False
    if start < end:
        return start < seat <= end
    return seat > start or seat <= end


def _combine(before: Owed | None, missed: Owed) -> Owed:
    if before is None or before is missed:
        return missed
    return Owed.BOTH


def post(ctx: Context, cmd: Post) -> None:
    """``post``: a seat that owes blinds posts them to play the next hand (MISSED-BLINDS)."""
    table = ctx.table
    if table.hand is not None:
        raise RejectedError(
            f"hand {table.hand.hand_id} is in progress: a seat posts to play the next one", _CITE
        )
    if table.stacks.get(cmd.seat, 0) <= 0:
        raise RejectedError(f"seat {cmd.seat} has no player with chips")
    debt = owed(table, cmd.seat)
    if debt is None:
        raise RejectedError(f"seat {cmd.seat} owes no blind: it plays when dealt in", _CITE)
    new = cmd.seat not in table.played
    if new and table.profile.blinds_new_player is NewPlayer.WAIT:
        raise RejectedError("a new player waits for the big blind here (blinds.new_player)", _CITE)
    if cmd.seat in table.posting:
        raise RejectedError(f"seat {cmd.seat} has posted already", _CITE)
    sb, bb = table.blinds
    live = bb if debt in (Owed.BIG, Owed.BOTH) else 0
    dead = sb if debt in (Owed.SMALL, Owed.BOTH) else 0
    if table.stacks[cmd.seat] <= live + dead:
        raise RejectedError(f"seat {cmd.seat} cannot cover {live + dead} and play", _CITE)
    table.posting = table.posting | {cmd.seat}
    ctx.emit(SeatPosting(cmd.seat, debt.value, live, dead, new or None), _CITE)
