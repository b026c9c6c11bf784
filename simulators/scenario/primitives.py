"""What a dealer can do at a table: the primitives every scenario step and every dealer's
decision is made of.

:class:`TablePrimitives` holds what the dealer knows (the table's state and its run so far, the
deck manifest, the virtual shuffler) and declares the primitives: stamp an input, feed it, let
time pass, shuffle a deck, deal a group, reshuffle the stub. Two implementations give them their
meaning: :class:`~simulators.scenario.core_runner.CoreRunner` plays them straight into the pure
core, where no primitive ever waits, and :class:`~simulators.scenario.device_play.DevicePlay`
plays them on the rig's devices, on the event loop. The step logic built on them
(:mod:`simulators.scenario.steps`) and the automatic dealers (:mod:`simulators.autoplay`,
:mod:`simulators.irregular`) are written once, as coroutines, for both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, datetime

from controller.cards import Card
from controller.deck_order import deck_order
from controller.decks import DeckManifest, known_decks, load_deck
from controller.profiles import load_profile
from controller.table.events import TableEvent
from controller.table.inputs import Input, Purpose
from controller.table.state import TableState, new_table
from simulators.errors import ScenarioError
from simulators.scenario.model import Scenario
from simulators.scenario.virtual_shuffler import VirtualShuffler

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""Where the pure core's clock starts: runs are reproducible."""


@dataclass
class CoreRun:
    """The result of a run: every input applied and every event, in order."""

    scenario: Scenario
    state: TableState
    inputs: list[Input] = field(default_factory=list)
    events: list[TableEvent] = field(default_factory=list)


class TablePrimitives(ABC):
    """The table of one scenario, and what a dealer can do at it."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        meta, table = scenario.scenario, scenario.table
        try:
            profile = load_profile(meta.profile).with_overrides(meta.house_rules)
            self.manifest: DeckManifest = load_deck(meta.deck)
            base = deck_order(scenario.deck.order, scenario.deck.seed)
        except ValueError as exc:
            raise ScenarioError(str(exc)) from None
        state = new_table(
            table.id, profile, self.manifest, table.stacks, table.button, table.blinds, table.ante
        )
        state.settle = table.settle
        state.other_decks = known_decks(exclude=self.manifest.deck_id)
        self.run = CoreRun(scenario, state)
        self.shuffler = VirtualShuffler(base, scenario.deck.seed, scenario.deck.id_policy == "live")
        self.now = EPOCH
        self.boot_id = 1
        self.returned_from = 0  # cards sent back to the stub after this event go in a reshuffle
        self.seen: set[Card] = set()  # cards read anywhere since the deck was shuffled

    @abstractmethod
    def tick(self) -> datetime:
        """The timestamp of the next input."""

    @abstractmethod
    async def feed(self, event: Input) -> list[TableEvent]:
        """Make ``event`` happen at the table; return the events the table gave it."""

    @abstractmethod
    async def advance(self, to: datetime) -> None:
        """Let time pass until ``to`` (a deadline on the way is the clock's ``Tick``)."""

    @abstractmethod
    async def shuffle_deck(self, cards: tuple[Card, ...], verdict: str, count: int | None) -> None:
        """The shuffler shuffles a fresh deck into ``cards`` (the virtual shuffler's new order)
        and its deck check finds ``verdict`` (counting ``count`` cards, if given)."""

    @abstractmethod
    async def deal_group(
        self, purpose: Purpose, seat: int | None, size: int, asked: int | None
    ) -> list[Card]:
        """The shuffler's next group, ``size`` cards for ``purpose``: the one the host asked for
        (``asked`` cards; ``size`` differs on a misfeed) or, with ``asked`` None, the dealer's
        from the keypad. Recorded in the virtual shuffler; returns its cards."""

    @abstractmethod
    async def reshuffle_deck(self, added: list[Card], seed: int, cards: tuple[Card, ...]) -> None:
        """The stub and ``added`` reshuffled (``random.Random(seed)``) into ``cards``, a deck
        the shuffler counts and that keeps its group numbers."""
