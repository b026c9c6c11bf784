"""Playing cards, the 52-card deck and the TSP/1 card code.

A card is written the usual way: rank then suit, ``"As"``, ``"Td"``, ``"2c"``. The text form is
what appears in events, scenario files and deck manifests. The one-byte code is the TSP/1 wire
form (``suit * 13 + rank``), used by the device drivers.
"""

from __future__ import annotations

from typing import NewType

Card = NewType("Card", str)

RANKS = "23456789TJQKA"
SUITS = "cdhs"

#: Every card of a standard deck in canonical order: 2c 3c … Ac 2d … As.
STANDARD_DECK: tuple[Card, ...] = tuple(Card(r + s) for s in SUITS for r in RANKS)
_DECK_SET = frozenset(STANDARD_DECK)

#: TSP/1 special codes (see docs/protocols/tsp1.md).
CODE_JOKER_1 = 52
CODE_JOKER_2 = 53
CODE_WITHHELD = 0xFD
CODE_UNREADABLE = 0xFE
CODE_NONE = 0xFF


class CardError(ValueError):
    """A text or a code that does not name a card."""


def parse_card(text: str) -> Card:
    """Return the card named by ``text`` (``"As"``, ``"td"`` and ``"10d"`` are accepted)."""
    cleaned = text.strip()
    if len(cleaned) == 3 and cleaned.startswith("10"):
        cleaned = "T" + cleaned[2]
    if len(cleaned) != 2:
        raise CardError(f"not a card: {text!r} (expected rank and suit such as 'As' or 'Td')")
    card = Card(cleaned[0].upper() + cleaned[1].lower())
    if card not in _DECK_SET:
        raise CardError(f"not a card: {text!r} (ranks {RANKS}, suits {SUITS})")
    return card


def is_card(text: str) -> bool:
    """True when ``text`` is a card in canonical form."""
    return text in _DECK_SET


def card_code(card: Card) -> int:
    """The TSP/1 code of ``card``: ``suit * 13 + rank`` (``2c`` = 0, ``As`` = 51)."""
    return SUITS.index(card[1]) * 13 + RANKS.index(card[0])


def card_from_code(code: int) -> Card:
    """The card for a TSP/1 code 0…51; special codes raise :class:`CardError`."""
    if not 0 <= code < 52:
        raise CardError(f"code {code:#04x} does not name a card")
    return STANDARD_DECK[code]


def rank_value(card: Card) -> int:
    """Rank 2…14 (ace high)."""
    return RANKS.index(card[0]) + 2
