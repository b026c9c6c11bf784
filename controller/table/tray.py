"""Where cards are: the tray of dispensed groups, the stub, and the card map of the table.

Every card of the deck is in exactly one place: in the shuffler (the stub), in the delivery tray
(dispensed, not yet read anywhere), or placed by a read (a seat, the board, the burns, the muck,
or set aside). The core keeps these counts so that ``placed + tray + stub = 52`` at every step; a
card that turns up with no dispensed group to account for it was drawn from the stub by hand.

A placed card's place is in one map, ``hand.cards.where``, and each pile keeps its cards in the
order they came (``hand.cards.piles``); the functions here are the only ones that change them.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.cards import Card
from controller.table.inputs import Purpose, Zone, ZoneKind
from controller.table.state import (
    BURN,
    HELD,
    MUCK,
    SET_ASIDE,
    HandState,
    PendingGroup,
    Pile,
    Place,
)

BOARD_PURPOSES = (Purpose.FLOP, Purpose.TURN, Purpose.RIVER, Purpose.BOARD_OTHER)
_ZONE_OF = {
    Pile.BOARD: Zone(ZoneKind.BOARD),
    Pile.SET_ASIDE: Zone(ZoneKind.BOARD),  # out of play, but on the board where it was read
    Pile.HELD: Zone(ZoneKind.BOARD),
    Pile.BURN: Zone(ZoneKind.BURN),
    Pile.MUCK: Zone(ZoneKind.MUCK),
    Pile.RUNOUT: Zone(ZoneKind.BOARD),
}
_SEATS = {seat: Place(Pile.SEAT, seat) for seat in range(1, 11)}
_new_tuple = tuple.__new__
_SEAT_ZONES: dict[int | None, Zone] = {seat: Zone(ZoneKind.SEAT, seat) for seat in range(1, 11)}


def seat_place(seat: int) -> Place:
    """The place of a seat's cards."""
    return _SEATS.get(seat) or Place(Pile.SEAT, seat)


def location(hand: HandState, card: Card) -> Zone | None:
    """The reader zone where the core last placed ``card`` in this hand, if anywhere."""
    place = hand.cards.where.get(card)
    if place is None:
        return None
    if place.pile is Pile.SEAT:
        return _SEAT_ZONES.get(place.seat) or Zone(ZoneKind.SEAT, place.seat)
    return _ZONE_OF[place.pile]


def place(hand: HandState, card: Card, to: Place) -> None:
    """``card`` is now at ``to`` (last of that pile), wherever it was before."""
    cards = hand.edit_cards()
    was = cards.where.get(card)
    piles = dict(cards.piles)
    if was is not None:
        piles[was] = tuple(c for c in piles[was] if c != card)
    piles[to] = (*piles.get(to, ()), card)
    cards.piles = piles
    cards.where = {**cards.where, card: to}


def place_all(hand: HandState, moved: Iterable[Card], to: Place) -> None:
    """Several cards now at ``to``, in the order given."""
    for card in moved:
        place(hand, card, to)


def take(hand: HandState, card: Card) -> None:
    """``card`` leaves the table (it went back into the stub)."""
    cards = hand.edit_cards()
    was = cards.where.get(card)
    if was is None:
        return
    cards.piles = {**cards.piles, was: tuple(c for c in cards.piles[was] if c != card)}
    cards.where = {c: p for c, p in cards.where.items() if c != card}


def take_all(hand: HandState, pile: Place) -> tuple[Card, ...]:
    """Every card of ``pile`` leaves the table; they are returned in the order they came."""
    gone = hand.cards.at(pile)
    if gone:
        cards = hand.edit_cards()
        cards.piles = {**cards.piles, pile: ()}
        cards.where = {c: p for c, p in cards.where.items() if p != pile}
    return gone


def move_pile(hand: HandState, pile: Place, to: Place) -> tuple[Card, ...]:
    """Every card of ``pile`` goes to ``to``, in order; they are returned."""
    moved = hand.cards.at(pile)
    place_all(hand, moved, to)
    return moved


def to_muck(hand: HandState, card: Card) -> None:
    """Move a card to the muck."""
    place(hand, card, MUCK)


def to_burns(hand: HandState, card: Card) -> None:
    """Move a card to the burns."""
    place(hand, card, BURN)


def set_aside(hand: HandState, card: Card) -> None:
    """A board card out of play."""
    place(hand, card, SET_ASIDE)


def hold_back(hand: HandState, card: Card) -> None:
    """A board card read while a ruling is pending: judged once it is decided."""
    place(hand, card, HELD)


def with_read(group: PendingGroup, card: Card) -> PendingGroup:
    """The group with one more of its cards read."""
    # built as its tuple (the named tuple's own constructor is a Python call more): a card is
    # drawn on most inputs of a hand
    fields = (group.group, group.purpose, group.seat, group.size, group.cards, (*group.read, card))
    return _new_tuple(PendingGroup, fields)


def draw(
    hand: HandState, card: Card, purposes: tuple[Purpose, ...] = (), seat: int | None = None
) -> PendingGroup | None:
    """Account for a card placed for the first time; return the group it came from, if any.

    It came from the oldest unread group of one of ``purposes`` (for ``seat`` when given), or
    failing that from any unread group, or from a broken group waiting to go back into the stub
    (the dealer turned one of its cards after all), or failing that from the stub by hand. A card
    drawn from a group is added to ``deal.drawn`` for the deck audit.
    """
    deal = hand.edit_deal()
    pending = deal.pending
    # plain loops rather than next(generator): a card is drawn on most inputs of a hand
    index = None
    for i, g in enumerate(pending):
        if len(g.read) < g.size and g.purpose in purposes and (seat is None or g.seat == seat):
            index = i
            break
    if index is None and deal.tray:
        for i, g in enumerate(pending):
            if len(g.read) < g.size:
                index = i
                break
    if index is None:
        back = next((i for i, g in enumerate(deal.returning) if len(g.read) < g.size), None)
        if back is not None:
            group = with_read(deal.returning[back], card)
            deal.returning = (*deal.returning[:back], group, *deal.returning[back + 1 :])
            deal.tray -= 1
            deal.drawn = (*deal.drawn, (group.group, card))
            return group
        deal.stub -= 1
        return None
    updated = with_read(pending[index], card)
    deal.pending = (*pending[:index], updated, *pending[index + 1 :])
    deal.tray -= 1
    deal.drawn = (*deal.drawn, (updated.group, card))
    return updated


def drop_finished(hand: HandState) -> None:
    """Forget groups whose cards have all been read."""
    deal = hand.deal
    # a plain loop, not any(generator): this runs after most cards read
    for group in (*deal.pending, *deal.returning):
        if len(group.read) >= group.size:
            break
    else:
        return  # every group still has cards to read
    deal = hand.edit_deal()
    deal.pending = tuple(g for g in deal.pending if len(g.read) < g.size)
    deal.returning = tuple(g for g in deal.returning if len(g.read) < g.size)


def unread(group: PendingGroup) -> int:
    """How many cards of ``group`` have not been read anywhere."""
    return group.size - len(group.read)


def live_cards(hand: HandState, seat: int) -> tuple[Card, ...]:
    """The cards at ``seat`` that are part of its hand (not dead, not a designated burn)."""
    dead, burn = hand.irregular.dead_cards, hand.board_rulings.next_burn
    return tuple(c for c in hand.cards.seat(seat) if c not in dead and c != burn)
