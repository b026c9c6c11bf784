"""What a drawing of the table shows: a small typed model, checked when it is made.

The model knows nothing of where its values came from: the pit's console fills it from the
table's public snapshot and its events (``controller/pit/console/picture.py``), a dealer's
station may fill it from the daemon. :func:`controller.view.svg.table_svg` draws it.

Seats are numbered 1 to ``places`` clockwise from the dealer's left, as at a casino table; a
place without a :class:`SeatDrawing` is drawn as an empty place. A model that does not hold
together (a seat twice, a seat past the last place, a card that is not a card, a negative
amount) is refused with a :class:`ValueError` naming what is wrong, so a drawing never shows
something no table can be.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from controller.cards import is_card

#: The most seats a table has (a full ring game).
MAX_PLACES = 10
#: The fewest (heads-up).
MIN_PLACES = 2
#: Board cards: the flop, the turn and the river.
BOARD_CARDS = 5


class SeatState(StrEnum):
    """Where a seat stands in the hand; each is written on the seat, not shown by colour alone."""

    SEATED = "seated"  # no hand running
    PLAYING = "in the hand"
    ALL_IN = "all in"
    FOLDED = "folded"
    SITTING_OUT = "sitting out"


@dataclass(frozen=True, slots=True)
class SeatDrawing:
    """One occupied seat.

    ``cards``: each card's text (``"As"``) when it is face up, ``None`` for a card face down.
    ``stack`` and ``bet`` are ``None`` when not known; ``bet`` is what the seat has in front of it
    in the betting round now (chips already gathered into the pots are in
    :attr:`TableDrawing.pots`).
    """

    seat: int
    name: str = ""
    stack: int | None = None
    bet: int | None = None
    cards: tuple[str | None, ...] = ()
    state: SeatState = SeatState.SEATED

    def __post_init__(self) -> None:
        _check_amount(f"seat {self.seat}: stack", self.stack)
        _check_amount(f"seat {self.seat}: bet", self.bet)
        for card in self.cards:
            if card is not None and not is_card(card):
                raise ValueError(f"seat {self.seat}: {card!r} is not a card (e.g. 'As', 'Td')")

    @property
    def label(self) -> str:
        """How the seat is named: its number, and the player's name or id when known."""
        return f"{self.seat} · {self.name}" if self.name else f"Seat {self.seat}"


@dataclass(frozen=True, slots=True)
class PotDrawing:
    """A pot: its chips and the seats that can win it (empty when not known)."""

    amount: int
    eligible: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_amount("pot", self.amount)


@dataclass(frozen=True, slots=True)
class HoldMark:
    """A hold waiting for a ruling: its rule ID, its reason in words, and the seat it concerns
    (``None``: the board or the hand as a whole)."""

    rule: str
    reason: str = ""
    seat: int | None = None


@dataclass(frozen=True, slots=True)
class TableDrawing:
    """The table as drawn: ``title`` names it ("Table T1"), ``caption`` says the hand and street
    ("hand T1-00042 · flop"); ``pots`` are main pot first, then the side pots in the order they
    were made."""

    title: str
    seats: tuple[SeatDrawing, ...] = ()
    places: int = MAX_PLACES
    caption: str = ""
    button: int | None = None
    to_act: int | None = None
    pots: tuple[PotDrawing, ...] = ()
    board: tuple[str, ...] = ()
    holds: tuple[HoldMark, ...] = ()

    def __post_init__(self) -> None:
        if not MIN_PLACES <= self.places <= MAX_PLACES:
            raise ValueError(
                f"places: {self.places} (a table has {MIN_PLACES} to {MAX_PLACES} seats)"
            )
        numbers = [s.seat for s in self.seats]
        for number in numbers:
            self._check_seat("a seat", number)
        twice = sorted({n for n in numbers if numbers.count(n) > 1})
        if twice:
            raise ValueError(f"seats drawn twice: {', '.join(map(str, twice))}")
        self._check_seat("button", self.button)
        self._check_seat("to_act", self.to_act)
        if self.to_act is not None and self.to_act not in numbers:
            raise ValueError(f"to_act: seat {self.to_act} is not occupied")
        if len(self.board) > BOARD_CARDS:
            raise ValueError(f"board: {len(self.board)} cards (at most {BOARD_CARDS})")
        for card in self.board:
            if not is_card(card):
                raise ValueError(f"board: {card!r} is not a card (e.g. 'As', 'Td')")
        for pot in self.pots:
            for seat in pot.eligible:
                self._check_seat("a pot's eligible seat", seat)
        for hold in self.holds:
            self._check_seat(f"hold {hold.rule}", hold.seat)

    def _check_seat(self, what: str, seat: int | None) -> None:
        if seat is not None and not 1 <= seat <= self.places:
            raise ValueError(f"{what}: seat {seat} is not one of 1 to {self.places}")

    def seat(self, number: int) -> SeatDrawing | None:
        """The seat at place ``number`` (None: nobody sits there)."""
        for seat in self.seats:
            if seat.seat == number:
                return seat
        return None


def _check_amount(what: str, amount: int | None) -> None:
    if amount is None:
        return
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise ValueError(f"{what}: {amount!r} is not a number of chips")
    if amount < 0:
        raise ValueError(f"{what}: {amount} chips (never fewer than none)")
