"""Device events → the core's inputs (``controller/table/inputs.py``).

Pure functions: the driver passes the receive time and the configured device id.
"""

from __future__ import annotations

from datetime import datetime

import structlog

from controller.cards import Card, CardError, card_from_code
from controller.table.inputs import (
    DeckChecked,
    DeckFault,
    DeviceInput,
    GroupDispensed,
    Purpose,
    ShuffleCompleted,
)
from drivers.shuffler.codes import DECK_FAULTS, FAULTS, PURPOSES, DeckVerdict, ShuffleResult
from drivers.shuffler.events import DeckCheck, GroupDispensedEvent, ShuffleComplete
from drivers.tsp.common import FaultCleared, FaultRaised

log = structlog.get_logger("tablectl.shuffler")


def card_or_none(code: int) -> Card | None:
    """The card of a code; None for withheld, unreadable, none and jokers."""
    try:
        return card_from_code(code)
    except CardError:
        return None


def cards_of(codes: bytes) -> tuple[Card, ...]:
    """The cards of a list of codes, leaving out anything that is not a card."""
    return tuple(card for card in map(card_or_none, codes) if card is not None)


def deck_faults(verdict: int) -> frozenset[DeckFault]:
    """The core's deck faults for a DECK_CHECK verdict."""
    return frozenset(fault for bit, fault in DECK_FAULTS.items() if verdict & bit)


def to_input(event: object, device: str, ts: datetime) -> DeviceInput | None:
    """The core input of a device event, or None for events the core does not consume."""
    if isinstance(event, DeckCheck):
        return DeckChecked(
            ts,
            device,
            event.shuffle_id,
            deck_faults(event.verdict & ~DeckVerdict.OK),
            event.counted,
            cards_of(event.missing),
            cards_of(event.duplicates),
        )
    if isinstance(event, ShuffleComplete):
        ok = event.result == ShuffleResult.OK
        commitment = event.commitment.hex() if any(event.commitment) else ""
        return ShuffleCompleted(ts, device, event.shuffle_id, ok, event.card_count, commitment)
    if isinstance(event, GroupDispensedEvent):
        purpose = PURPOSES.get(event.purpose)
        if purpose is None:
            log.error("shuffler.bad_purpose", device=device, purpose=event.purpose)
            purpose = Purpose.EXTRA
        return GroupDispensed(
            ts,
            device,
            event.shuffle_id,
            event.group,
            purpose,
            event.seat or None,
            tuple(card_or_none(code) for code in event.cards),
            event.remaining,
        )
    if isinstance(event, FaultRaised | FaultCleared):
        return FAULTS.input_of(event, device, ts)
    return None
