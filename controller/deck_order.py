"""The shuffled order of a simulated deck, from an explicit order or a seed.

Scenario files, the simulators and the ``virtual`` driver describe a deck the same way: either the
top cards in order (the rest of the 52 follow in canonical order) or a seed for a reproducible
shuffle. The pure-core scenario runner, the shuffler simulator and the virtual driver take their
cards from here, so a scenario deals the same cards in either mode. A seeded shuffle is a pure
function of its seed, so this lives beside the cards, below the drivers and the simulators.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from controller.cards import STANDARD_DECK, Card, parse_card


def deck_order(order: Sequence[str] | None = None, seed: int | None = None) -> tuple[Card, ...]:
    """The 52 cards top first.

    ``order`` gives the top cards; the remaining cards follow in canonical order. ``seed`` gives a
    reproducible shuffle instead. With neither, the deck is in canonical order.
    """
    if order is not None and seed is not None:
        raise ValueError("give either an explicit order or a seed, not both")
    if seed is not None:
        cards = list(STANDARD_DECK)
        random.Random(seed).shuffle(cards)
        return tuple(cards)
    top = [parse_card(text) for text in order or ()]
    seen: set[Card] = set()
    for card in top:
        if card in seen:
            raise ValueError(f"card {card} appears twice in the deck order")
        seen.add(card)
    return (*top, *(card for card in STANDARD_DECK if card not in seen))
