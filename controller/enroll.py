"""Enrolling an RFID deck: the tags read at an enroll zone, in order, become a deck manifest.

The dealer presents the 52 cards one at a time on the enroll antenna, in canonical order
(``2c 3c … Ac 2d … As``) or in an order given beforehand: the n-th new tag is the n-th card.
:class:`Enrollment` is the pure bookkeeping; it refuses

- a UID already enrolled in this deck (a card presented twice, or two cards carrying the same
  tag): the position stays open for the right card;
- a UID of another known deck (a card from the wrong deck): likewise;
- two tags arriving together (two cards on the antenna at once): their order is unknowable, so
  neither is enrolled and both must be presented again, one at a time;

and :meth:`Enrollment.manifest` refuses a short deck. :func:`enroll` runs it against any reader
driver's event stream (PN532, TSP/1 serial or USB: they all yield ``TagArrived``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from controller.cards import STANDARD_DECK, Card
from controller.decks import DeckManifest
from controller.table.inputs import DeviceHealthChanged, DeviceInput, TagArrived, ZoneKind


class EnrollmentError(ValueError):
    """The enrollment cannot produce a manifest (a short deck, a bad order)."""


@dataclass(frozen=True, slots=True)
class Accepted:
    """A tag was enrolled as ``card`` (``position`` counts from 1)."""

    uid: str
    card: Card
    position: int


@dataclass(frozen=True, slots=True)
class Refused:
    """Tags that were not enrolled, and why; the position they were offered for stays open."""

    uids: tuple[str, ...]
    reason: str


Outcome = Accepted | Refused


@dataclass
class Enrollment:
    """Which tag is which card, as the cards are presented."""

    deck_id: str
    order: Sequence[Card] = STANDARD_DECK
    known: Mapping[str, tuple[str, Card]] = field(default_factory=dict)
    """UIDs of other decks: uid → (deck id, card)."""
    assigned: dict[str, Card] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.deck_id:
            raise EnrollmentError("a deck id is required")
        if sorted(self.order) != sorted(STANDARD_DECK):
            raise EnrollmentError("the order must list each of the 52 cards exactly once")

    @property
    def count(self) -> int:
        """Cards enrolled so far."""
        return len(self.assigned)

    @property
    def done(self) -> bool:
        """True once all 52 cards are enrolled."""
        return self.count == len(self.order)

    @property
    def next_card(self) -> Card | None:
        """The card the next new tag will be, or None when the deck is complete."""
        return None if self.done else self.order[self.count]

    def offer(self, uid: str) -> Outcome:
        """A new tag at the enroll zone."""
        if self.done:
            return Refused((uid,), "the deck is complete: 52 cards are enrolled")
        if uid in self.assigned:
            card = self.assigned[uid]
            position = list(self.assigned).index(uid) + 1
            return Refused(
                (uid,),
                f"UID {uid} is already enrolled as {card} (card {position}): a card presented "
                f"twice, or two cards with the same tag; lift it and present {self.next_card}",
            )
        if uid in self.known:
            deck, card = self.known[uid]
            return Refused(
                (uid,),
                f"UID {uid} is {card} of deck {deck}: a card of another deck; "
                f"present {self.next_card} of {self.deck_id}",
            )
        card = self.order[self.count]
        self.assigned[uid] = card
        return Accepted(uid, card, self.count)

    def together(self, uids: Sequence[str]) -> Refused:
        """Several new tags arrived at once: none is enrolled."""
        return Refused(
            tuple(uids),
            f"{len(uids)} cards arrived together, in no knowable order: lift them and present "
            f"them again one at a time, starting with {self.next_card}",
        )

    def manifest(self) -> DeckManifest:
        """The manifest; raise :class:`EnrollmentError` unless all 52 cards are enrolled."""
        if not self.done:
            raise EnrollmentError(
                f"short deck: {self.count} of {len(self.order)} cards enrolled "
                f"(the next card was {self.next_card}); no manifest written"
            )
        return DeckManifest(self.deck_id, dict(self.assigned))


class EventSource(Protocol):
    """What :func:`enroll` needs from a reader driver."""

    async def next_event(self) -> DeviceInput:
        """The reader's next input."""


Report = Callable[[Outcome | DeviceHealthChanged], None]


def _ignore(item: Outcome | DeviceHealthChanged) -> None:
    return None


async def enroll(
    source: EventSource,
    enrollment: Enrollment,
    *,
    gap: float = 0.05,
    idle_timeout: float | None = None,
    report: Report = _ignore,
) -> None:
    """Feed new tags at the enroll zone to ``enrollment`` until the deck is complete.

    Returns early when no card arrived for ``idle_timeout`` seconds (the dealer stopped), or is
    cancelled (Ctrl-C). Tags arriving less than ``gap`` seconds apart count as arriving
    together. Reader health changes are reported too, so a dealer sees a dead reader.
    """
    loop = asyncio.get_running_loop()
    pending: list[str] = []
    window_end = 0.0
    idle_since = loop.time()
    while not enrollment.done:
        now = loop.time()
        if pending:
            timeout: float | None = max(0.0, window_end - now)
        elif idle_timeout is not None:
            timeout = max(0.0, idle_since + idle_timeout - now)
        else:
            timeout = None
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a Ctrl-C that lands
            # as an event arrives.
            async with asyncio.timeout(timeout):
                event: Any = await source.next_event()
        except TimeoutError:
            if not pending:
                return  # the dealer has not presented a card for idle_timeout: done
            if loop.time() > window_end + gap:
                # Woken a whole gap late (a busy machine): the reader's next frame may be
                # waiting unread, so the window was not watched; watch a fresh one.
                window_end = loop.time() + gap
                continue
            single = len(pending) == 1
            report(enrollment.offer(pending[0]) if single else enrollment.together(pending))
            pending = []
            idle_since = loop.time()
            continue
        if isinstance(event, DeviceHealthChanged):
            report(event)
        elif isinstance(event, TagArrived) and event.zone.kind is ZoneKind.ENROLL:
            if event.uid not in pending:
                pending.append(event.uid)
            window_end = loop.time() + gap
            idle_since = loop.time()
