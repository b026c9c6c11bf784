"""Who is dealt in, where the button goes and who posts the blinds when a hand starts.

The dealer names neither the button nor the blinds: the profile's button rules place them, from
what the table remembers of the last hand (the seat the button moved to, the last blinds).

RR-BB-ROT (RRoP Button and Blind Use, introduction): the button moves clockwise after each deal.
RR-BB-2 (RRoP Button and Blind Use 2, "each round every player must get an opportunity for the
button"), ``button.mode``: (a) moving button, the button always moves forward to the next player
dealt in and the blinds follow it; (b) dead button, the big blind is posted by the player due for
it (the next player dealt in after the last big blind), the small blind by the last big blind if
it is still dealt in (else there is none) and the button goes where the last small blind was,
even in front of an empty seat or a player sitting out.
DE-1537-5/7 (Del. § 1537(5),(7)): the small blind is the first seat left of the button, the big
blind the next.
HU (RRoP Button and Blind Use 3; TDA 34): heads-up the button posts the small blind; when play
becomes heads-up the player who had the big blind most recently gets the button, so nobody has
the big blind twice in a row.
MISSED-BLINDS (RRoP Button and Blind Use): a seat that owes blinds and has not posted is dealt in
only as the big blind; a new player is not dealt in between the button and the big blind, nor on
the button (RRoP: "a new player cannot be dealt in between the big blind and the button. Seats in
this area are dealt in only after the button passes"): a moving button passes it, and it plays
behind the button from that hand on.
MD-REDEAL (TDA 35C): the redeal after a misdeal keeps the button, the blinds and the players.
"""

from __future__ import annotations

from typing import NamedTuple

from controller.profiles import ButtonMode
from controller.rules import blinds
from controller.rules.ids import Rule
from controller.table.context import RejectedError
from controller.table.flow import clockwise_seats
from controller.table.state import TableState

_CITE = (Rule.MISSED_BLINDS,)


class Placement(NamedTuple):
    """Where a hand's button and blinds are, and the rules that put them there."""

    seats: frozenset[int]  # dealt in
    button: int  # a seat dealt in, or (dead button) where the last small blind was
    small: int | None  # None: a dead small blind (RR-BB-2)
    big: int
    rules: tuple[Rule, ...]
    waiting: frozenset[int] = frozenset()  # seats with chips left out until they may play


def place(
    table: TableState,
    *,
    seats: tuple[int, ...] | None = None,
    button: int | None = None,
) -> Placement:
    """The placement of the next hand, or RejectedError saying why it cannot start.

    ``seats``: the seats the dealer lists (default: every seat with chips, less those that must
    wait); ``button``: a button the dealer names (checked, and the blinds placed from it).
    """
    redeal = table.redeal
    if redeal is not None:
        return _redeal(table, seats, button)
    listed = seats is not None
    if seats is None:
        candidates = _with_chips(table)
    else:
        candidates = frozenset(seats)
        for seat in sorted(candidates):
            if seat not in table.stacks:
                raise RejectedError(f"seat {seat} has no player")
            if table.stacks[seat] <= 0:
                raise RejectedError(f"seat {seat} has no chips")
    waiting: frozenset[int] = frozenset()
    if blinds.anyone_owes(table, candidates):  # MISSED-BLINDS: who owes waits or has posted
        waiting = frozenset(
            s for s in candidates if s not in table.posting and blinds.owed(table, s) is not None
        )
    players = candidates - waiting
    held_back: frozenset[int] = frozenset()
    while True:
        placement = _place(table, players, waiting, button)
        if placement is None:
            stuck = (waiting | held_back) if listed else frozenset()
            if stuck:
                seat = min(stuck)
                raise RejectedError(_why_waits(table, seat, seat in held_back), _CITE)
            raise RejectedError("a hand needs at least two seats with chips")
        # RRoP: a new player is not dealt in between the button and the big blind
        between = _new_between(table, placement)
        if not between:
            break
        players -= between
        held_back |= between
    left_out = candidates - placement.seats
    if listed and left_out:
        seat = min(left_out)
        raise RejectedError(_why_waits(table, seat, seat in held_back), _CITE)
    if button is not None and button not in placement.seats:
        raise RejectedError(f"the button seat {button} is not dealt in")
    if not left_out:
        return placement
    rules = placement.rules
    if Rule.MISSED_BLINDS not in rules:
        rules = (*rules, Rule.MISSED_BLINDS)
    return placement._replace(rules=rules, waiting=left_out)


def _with_chips(table: TableState) -> frozenset[int]:
    return frozenset(s for s, c in table.stacks.items() if c > 0)


def _why_waits(table: TableState, seat: int, new_between: bool) -> str:
    if new_between:
        return (
            f"seat {seat} is a new player on the button or between it and the big blind: it is "
            "dealt in once the button has passed it"
        )
    debt = blinds.owed(table, seat)
    owes = blinds.WORDS[debt] if debt is not None else "the big blind"
    return f"seat {seat} owes {owes}: post it (post) or leave it out until the big blind reaches it"


def _redeal(table: TableState, seats: tuple[int, ...] | None, button: int | None) -> Placement:
    """MD-REDEAL: the same players, button and blinds as the misdealt hand."""
    redeal = table.redeal
    assert redeal is not None
    assert table.last_blinds is not None  # the misdealt hand set them
    if button is not None and button != redeal.button:
        raise RejectedError(
            f"the redeal of {redeal.of} keeps the button at seat {redeal.button}",
            (Rule.MD_REDEAL,),
        )
    if seats is not None and set(seats) != set(redeal.seats):
        listed = ", ".join(map(str, redeal.seats))
        raise RejectedError(
            f"the redeal of {redeal.of} deals the same players: seats {listed}",
            (Rule.MD_REDEAL,),
        )
    dealt = frozenset(redeal.seats)
    # the misdealt hand set last_blinds: its small blind's seat (dealt in), or with no small blind
    # the seat of the big blind before it (not dealt in, which is why there was none)
    last_small, big = table.last_blinds
    small = last_small if last_small in dealt else None
    rules = [Rule.DE_1537_5_7, Rule.RR_BB_ROT]
    if len(dealt) == 2:
        rules.append(Rule.HU)
    elif small is None or redeal.button not in dealt:
        rules.append(Rule.RR_BB_2)
    rules.append(Rule.MD_REDEAL)
    return Placement(dealt, redeal.button, small, big, tuple(rules))


def _place(
    table: TableState, players: frozenset[int], waiting: frozenset[int], named: int | None
) -> Placement | None:
    """The button and blinds for ``players``, with the one waiting seat the big blind reaches."""
    profile = table.profile
    if named is None and profile.button_mode is ButtonMode.DEAD and _dead_allowed(table):
        dead = _dead(table, players, waiting)
        if dead is not None:
            return dead
    if not players:
        return None
    # a new player is dealt in only once the button has passed it: never on the button
    settled = players - new_players(table, players) or players
    button = named if named is not None else moving_button(table, settled)
    # MISSED-BLINDS: a seat that waits comes in when the big blind reaches it
    dealt = players
    for seat in clockwise_seats(waiting, button):
        if _moving_blinds(players | {seat}, button)[1] == seat:
            dealt = players | {seat}
            break
    if len(dealt) < 2:
        return None
    rules = [Rule.DE_1537_5_7, Rule.RR_BB_ROT]
    if len(dealt) == 2:
        if named is None:  # of the players (a seat that waited comes in as the big blind)
            button = heads_up_button(table, settled)
        rules.append(Rule.HU)
    elif named is None and button != table.button:
        rules.append(Rule.RR_BB_2)  # forward past a seat not dealt in: the next player
    small, big = _moving_blinds(dealt, button)
    return Placement(dealt, button, small, big, tuple(rules))


def moving_button(table: TableState, players: frozenset[int]) -> int:
    """RR-BB-2(a): the first of ``players`` from the seat the last hand moved the button to.

    That seat is the first with chips after the last button (``flow.complete_hand``); a player
    there who is not dealt in is passed, and the button goes on to the next player.
    """
    start = table.button
    if start in players:
        return start
    return clockwise_seats(players, start)[0]


def heads_up_button(table: TableState, players: frozenset[int]) -> int:
    """HU: the player who had the big blind most recently gets the button (RRoP B&B 3, TDA 34).

    The big blind goes round clockwise, so of the players the one met first counter-clockwise
    from the last big blind had it last (the last big blind itself if it plays). Heads-up hand
    after heads-up hand this is the moving button: the big blind gets it.
    """
    last = table.last_blinds
    if last is None:
        return moving_button(table, players)
    big = last[1]
    if big in players:
        return big
    return sorted(players, key=lambda s: (s > big, -s))[0]


def _moving_blinds(players: frozenset[int], button: int) -> tuple[int, int]:
    """DE-1537-5/7 and HU: the small and big blind of ``players`` with the button at ``button``."""
    order = clockwise_seats(players, button)  # the button last, if it plays
    if len(order) == 2 and order[1] == button:
        return button, order[0]
    return order[0], order[1]


def _dead_allowed(table: TableState) -> bool:
    """A dead button needs the last hand's blinds, and a last hand that was not heads-up (there
    the small blind was on the button: there is no small blind's seat for the button to go to,
    and the button moves on as a moving button's does)."""
    if table.last_blinds is None:
        return False
    last = table.last_hand
    return last is None or len(last.order) > 2


def _dead(table: TableState, players: frozenset[int], waiting: frozenset[int]) -> Placement | None:
    """RR-BB-2(b): the big blind to the next player after the last one, the rest behind it.

    None: the hand is placed as a moving button's (nobody plays, or no seat is left for the
    dead button).
    """
    assert table.last_blinds is not None
    last_small, last_big = table.last_blinds
    # MISSED-BLINDS: a seat that waits and is the next after the last big blind comes in
    everyone = players | waiting
    if not everyone:
        return None
    big = clockwise_seats(everyone, last_big)[0]
    dealt = players | {big}  # a player, or the seat that waits whose big blind it is
    if len(dealt) < 2:
        return None
    if len(dealt) == 2:  # HU: the button posts the small blind, the other seat the big blind
        if big in players:
            settled = dealt - new_players(table, dealt) or dealt
            button = heads_up_button(table, settled)
            big = next(iter(dealt - {button}))
        else:
            button = next(iter(players))
        return Placement(dealt, button, button, big, (Rule.DE_1537_5_7, Rule.RR_BB_ROT, Rule.HU))
    small = last_big if last_big in dealt else None
    button = last_small
    if button in (big, small):
        return None  # no seat is left for a dead button: it moves as a moving one
    rules = (Rule.DE_1537_5_7, Rule.RR_BB_ROT, Rule.RR_BB_2)
    return Placement(dealt, button, small, big, rules)


def new_players(table: TableState, seats: frozenset[int]) -> frozenset[int]:
    """Of ``seats``, the new players: seats not yet dealt in at this table since its first hand."""
    if not table.hands_started:
        return frozenset()
    return seats - table.played


def _new_between(table: TableState, placement: Placement) -> frozenset[int]:
    """The new players dealt in on the button or between it and the big blind."""
    if not table.hands_started or table.played.issuperset(placement.seats):
        return frozenset()
    new = new_players(table, placement.seats)
    between = {placement.button} & new
    for seat in clockwise_seats(placement.seats | {placement.button}, placement.button):
        if seat == placement.big:
            break
        if seat in new:
            between.add(seat)
    return frozenset(between)
