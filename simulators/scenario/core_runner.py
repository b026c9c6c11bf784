"""Run a scenario straight into the pure core (``tablectl scenario run --core``).

The runner plays the devices itself: a virtual shuffler deals from the scenario's deck order and
reports groups the way the shuffler driver does (identities withheld unless the deck's
``id_policy`` is ``live``), and reader steps become tag arrivals and departures with the UIDs of
the scenario's deck manifest. Time starts at a fixed instant and advances one second per step
(or to the step's ``at``), a few milliseconds per input inside a step, so runs are reproducible.

No primitive here ever waits, so the step logic (:mod:`simulators.scenario.steps`), a coroutine
written for the devices too, runs to its end in one call of :func:`run_at_once`, without an event
loop: the property tests play tens of thousands of inputs this way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Coroutine
from datetime import datetime, timedelta
from typing import Any, TypeVar

from controller.cards import Card, card_code
from controller.table.engine import apply, deadline
from controller.table.events import TableEvent
from controller.table.inputs import (
    DeckChecked,
    GroupDispensed,
    Input,
    Purpose,
    ShuffleCompleted,
    TagArrived,
    Tick,
)
from drivers.shuffler.convert import cards_of, deck_faults
from simulators.scenario.model import Scenario
from simulators.scenario.primitives import EPOCH, CoreRun
from simulators.scenario.steps import StepPlayer
from simulators.shuffler.deck import deck_check

T = TypeVar("T")

#: Scenario verdicts → the deck-check problems of the shuffler simulator.
_DECK_CHECKS = {
    "ok": "ok",
    "short": "short",
    "extra": "extra",
    "duplicate": "duplicate",
    "foreign_back": "foreign",
    "unreadable": "unreadable",
    "wrong_profile": "wrong_profile",
    "commitment_mismatch": "ok",
}


def run_at_once(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never waits (the core's primitives), without a loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError("a primitive of the pure core waited for something")


class CoreRunner(StepPlayer):
    """Plays the steps of one scenario into the core."""

    def play(self) -> CoreRun:
        """Play every step."""
        return run_at_once(self.play_steps())

    async def play_steps(self) -> CoreRun:
        """Every step, one second apart unless its ``at`` says later."""
        for index, step in enumerate(self.scenario.step):
            at = EPOCH + timedelta(seconds=step.at) if step.at is not None else None
            await self.advance(max(self.now + timedelta(seconds=1), at or self.now))
            await self.play_numbered(index, step)
        return self.run

    # ----------------------------------------------------------------------- the primitives

    def tick(self) -> datetime:
        """The timestamp of the next input inside a step."""
        self.now += timedelta(milliseconds=10)
        return self.now

    async def feed(self, event: Input) -> list[TableEvent]:
        """Apply one input and keep the events."""
        if isinstance(event, TagArrived) and (card := self.manifest.card(event.uid)) is not None:
            self.seen.add(card)
        self.run.state, events = apply(self.run.state, event)
        self.run.inputs.append(event)
        self.run.events.extend(events)
        return events

    async def advance(self, to: datetime) -> None:
        """Let time pass until ``to``; a deadline on the way is a ``Tick`` at that moment."""
        due = deadline(self.run.state)
        if due is not None and due <= to:
            self.now = max(self.now, due)
            await self.feed(Tick(due, "clock"))
        self.now = max(self.now, to)

    async def shuffle_deck(self, cards: tuple[Card, ...], verdict: str, count: int | None) -> None:
        """The shuffle's deck check and completion, as the driver reports them.

        A verdict other than ``ok`` is what the TSP/1 shuffler simulator's deck check finds for
        that problem (:func:`simulators.shuffler.deck.deck_check`), so both modes agree.
        """
        sid = self.shuffler.shuffle_id
        check = deck_check(sid, bytes(_codes(cards)), _DECK_CHECKS[verdict], count)
        faults = deck_faults(check.verdict)
        await self.feed(
            DeckChecked(
                self.tick(),
                "shuffler",
                sid,
                faults,
                check.counted,
                cards_of(check.missing),
                cards_of(check.duplicates),
            )
        )
        salt = sid.to_bytes(16, "little")
        commitment = hashlib.sha256(
            b"TSP1-deck" + sid.to_bytes(4, "little") + salt + bytes(_codes(cards))
        ).hexdigest()
        ok = not faults and check.counted == len(cards)
        await self.feed(
            ShuffleCompleted(
                self.tick(), "shuffler", sid, ok, len(cards) if ok else 0, commitment if ok else ""
            )
        )

    async def deal_group(
        self, purpose: Purpose, seat: int | None, size: int, asked: int | None
    ) -> list[Card]:
        """The next ``size`` cards off the virtual shuffler, reported as the driver does."""
        cards = self.shuffler.dispense(size, purpose)
        shown: tuple[Card | None, ...] = (
            tuple(cards) if self.shuffler.live_ids else (None,) * len(cards)
        )
        await self.feed(
            GroupDispensed(
                self.tick(),
                "shuffler",
                self.shuffler.shuffle_id,
                self.shuffler.group,
                purpose,
                seat,
                shown,
                self.shuffler.remaining,
            )
        )
        return cards

    async def reshuffle_deck(self, added: list[Card], seed: int, cards: tuple[Card, ...]) -> None:
        """The reshuffled stub counted and completed, a deck of its own number."""
        virtual = self.shuffler
        virtual.order, virtual.position = cards, 0
        virtual.shuffle_id += 1
        sid = virtual.shuffle_id
        await self.feed(DeckChecked(self.tick(), "shuffler", sid, frozenset(), len(cards)))
        await self.feed(ShuffleCompleted(self.tick(), "shuffler", sid, True, len(cards)))


def _codes(cards: tuple[Card, ...]) -> list[int]:
    return [card_code(c) for c in cards]


def run_core(scenario: Scenario) -> CoreRun:
    """Play a scenario into the pure core and return the run."""
    return CoreRunner(scenario).play()
