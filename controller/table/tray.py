"""Where cards are: the tray of dispensed groups, the stub, and the zones of the table.

Every card of the deck is in exactly one place: in the shuffler (the stub), in the delivery tray
(dispensed, not yet read anywhere), or placed by a read (a seat, the board, the burns, the muck,
or set aside). The core keeps these counts so that ``placed + tray + stub = 52`` at every step; a
card that turns up with no dispensed group to account for it was drawn from the stub by hand.
"""

from __future__ import annotations

from controller.cards import Card
from controller.table.inputs import Purpose, Zone, ZoneKind
from controller.table.state import HandState, PendingGroup

MUCK = Zone(ZoneKind.MUCK)
BOARD = Zone(ZoneKind.BOARD)
BURN = Zone(ZoneKind.BURN)
BOARD_PURPOSES = (Purpose.FLOP, Purpose.TURN, Purpose.RIVER, Purpose.BOARD_OTHER)


def location(hand: HandState, card: Card) -> Zone | None:
    """Where the core last placed ``card`` in this hand, if anywhere."""
    if card in hand.muck:
        return MUCK
    if card in hand.board or card in hand.set_aside or card in hand.held_board:
        return BOARD
    if card in hand.burns:
        return BURN
    for seat, cards in hand.holes.items():
        if card in cards:
            return Zone(ZoneKind.SEAT, seat)
    return None


def with_read(group: PendingGroup, card: Card) -> PendingGroup:
    """The group with one more of its cards read."""
    return PendingGroup(
        group.group, group.purpose, group.seat, group.size, group.cards, (*group.read, card)
    )


def draw(
    hand: HandState, card: Card, purposes: tuple[Purpose, ...] = (), seat: int | None = None
) -> PendingGroup | None:
    """Account for a card placed for the first time; return the group it came from, if any.

    It came from the oldest unread group of one of ``purposes`` (for ``seat`` when given), or
    failing that from any unread group, or from a broken group waiting to go back into the stub
    (the dealer turned one of its cards after all), or failing that from the stub by hand.
    """
    pending = hand.pending
    index = next(
        (
            i
            for i, g in enumerate(pending)
            if len(g.read) < g.size and g.purpose in purposes and (seat is None or g.seat == seat)
        ),
        None,
    )
    if index is None and hand.tray:
        index = next((i for i, g in enumerate(pending) if len(g.read) < g.size), None)
    if index is None:
        back = next((i for i, g in enumerate(hand.returning) if len(g.read) < g.size), None)
        if back is not None:
            group = with_read(hand.returning[back], card)
            hand.returning = (*hand.returning[:back], group, *hand.returning[back + 1 :])
            hand.tray -= 1
            return group
        hand.stub -= 1
        return None
    updated = with_read(pending[index], card)
    hand.pending = (*pending[:index], updated, *pending[index + 1 :])
    hand.tray -= 1
    return updated


def drop_finished(hand: HandState) -> None:
    """Forget groups whose cards have all been read."""
    hand.pending = tuple(g for g in hand.pending if len(g.read) < g.size)
    hand.returning = tuple(g for g in hand.returning if len(g.read) < g.size)


def unread(group: PendingGroup) -> int:
    """How many cards of ``group`` have not been read anywhere."""
    return group.size - len(group.read)


def remove(hand: HandState, card: Card) -> None:
    """Take ``card`` out of whatever zone holds it (it is about to be placed elsewhere)."""
    if card in hand.muck:
        hand.muck = tuple(c for c in hand.muck if c != card)
    elif card in hand.board:
        hand.board = tuple(c for c in hand.board if c != card)
    elif card in hand.set_aside:
        hand.set_aside = tuple(c for c in hand.set_aside if c != card)
    elif card in hand.held_board:
        hand.held_board = tuple(c for c in hand.held_board if c != card)
    elif card in hand.burns:
        hand.burns = tuple(c for c in hand.burns if c != card)
    else:
        for seat, cards in hand.holes.items():
            if card in cards:
                hand.holes = {**hand.holes, seat: tuple(c for c in cards if c != card)}
                return


def to_muck(hand: HandState, card: Card) -> None:
    """Move a placed card to the muck."""
    remove(hand, card)
    hand.muck = (*hand.muck, card)


def live_cards(hand: HandState, seat: int) -> tuple[Card, ...]:
    """The cards at ``seat`` that are part of its hand (not dead, not a designated burn)."""
    return tuple(
        c for c in hand.holes.get(seat, ()) if c not in hand.dead_cards and c != hand.next_burn
    )
