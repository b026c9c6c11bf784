"""The host's record of each deck, for checking a reveal (docs/protocols/tsp1.md §3.6).

The driver shows every SHUFFLE_COMPLETE and GROUP_DISPENSED to a :class:`DeckLedger`. When a
retired deck is revealed, the ledger checks the order against the commitment published when the
shuffle completed, and every card identity shown live against the order at its position. Any
disagreement is an integrity problem: the device showed one deck and dealt another.
"""

from __future__ import annotations

from drivers.shuffler.codes import ShuffleResult
from drivers.shuffler.commitment import verify_commitment
from drivers.shuffler.convert import card_or_none
from drivers.shuffler.events import DeviceEvent, GroupDispensedEvent, ShuffleComplete
from drivers.shuffler.messages import DeckReveal


class DeckLedger:
    """Commitments and dispensed groups of the last decks."""

    KEEP = 16

    def __init__(self) -> None:
        self._commitments: dict[int, bytes] = {}
        self._groups: dict[int, list[tuple[int, bytes]]] = {}

    def observe(self, event: DeviceEvent) -> None:
        """Record what a device event says about a deck."""
        if isinstance(event, ShuffleComplete) and event.result == ShuffleResult.OK:
            self._commitments[event.shuffle_id] = event.commitment
            self._groups[event.shuffle_id] = []
            for table in (self._commitments, self._groups):
                while len(table) > self.KEEP:
                    del table[next(iter(table))]
        elif isinstance(event, GroupDispensedEvent):
            self._groups.setdefault(event.shuffle_id, []).append((event.group, event.cards))

    def check(
        self, shuffle_id: int, reveal: DeckReveal, commitment: bytes | None = None
    ) -> list[str]:
        """The problems with a reveal (empty when it is verified).

        ``commitment`` overrides the recorded one (the core journaled it; the driver may have
        restarted since).
        """
        if reveal.shuffle_id != shuffle_id:
            return [f"asked for deck {shuffle_id}, the device revealed {reveal.shuffle_id}"]
        expected = commitment if commitment is not None else self._commitments.get(shuffle_id)
        if expected is None:
            return [f"no commitment known for deck {shuffle_id}: the reveal cannot be verified"]
        if not verify_commitment(expected, shuffle_id, reveal.salt, reveal.order):
            return [f"deck {shuffle_id}: the revealed order does not match its commitment"]
        problems = []
        position = 0
        for group, codes in self._groups.get(shuffle_id, []):
            dealt = reveal.order[position : position + len(codes)]
            position += len(codes)
            for shown, actual in zip(codes, dealt, strict=False):
                if card_or_none(shown) is not None and shown != actual:
                    problems.append(
                        f"deck {shuffle_id} group {group}: dispensed {shown}, order has {actual}"
                    )
        return problems
