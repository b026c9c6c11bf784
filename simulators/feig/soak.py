"""The automatic dealer's hands through the FEIG radio, the presence tracker and the arbiter.

:class:`RadioDealer` is :class:`~simulators.autoplay.AutoDealer` whose card reads do not go
straight into the core: each read puts the card down on the simulated reader's antennas
(:class:`~simulators.feig.radio.Radio`, with crosstalk and stacked cards), and the core gets only
what the ``feig-isc`` driver's pipeline makes of the sweeps that follow: each antenna's tags
into the presence tracker, the edges and RSSI through the crosstalk arbiter. So a soak counts
the irregularities the RF causes, and whether real moves still arrive as moves.

Pure and synchronous (no pty, no clock): the driver's wire code is tested on ptys elsewhere;
this plays hundreds of hands in seconds. ``benchmarks/feig_soak.py`` runs it.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from controller.table.decoder import record_of
from controller.table.event_types import CommandRejected, IrregularityDetected
from controller.table.events import TableEvent
from controller.table.inputs import (
    Action,
    ActionKind,
    Input,
    StartHand,
    TagArrived,
    TagDeparted,
    Zone,
)
from drivers.rfid.arbiter import Arbiter
from drivers.rfid.presence import Arrived, Debounce, Departed, PresenceEdge, PresenceTracker
from simulators.autoplay import AutoDealer, Style, random_table
from simulators.feig.radio import Radio
from simulators.scenario.model import Scenario

#: The demo table's antennas, as the multiplexer numbers them.
ANTENNAS: dict[int, Zone] = {
    **{seat: Zone.parse(f"seat:{seat}") for seat in range(1, 11)},
    11: Zone.parse("board"),
    12: Zone.parse("burn"),
    13: Zone.parse("muck"),
    14: Zone.parse("shuffler_in"),
}
ZONE_ANTENNA = {zone: antenna for antenna, zone in ANTENNAS.items()}
MUCK = Zone.parse("muck")
THINKING = timedelta(seconds=5)
"""What a table's players take after a deal: more than the readers' settle time."""
SETTLE_SWEEPS = 40
"""Most sweeps a read may take to reach the core (stacked cards are missed now and then)."""


@dataclass
class SoakFigures:
    """What a soak counted."""

    hands: int = 0
    sweeps: int = 0
    reads: int = 0
    crosstalk_reads: int = 0
    shadowed: int = 0
    switched: int = 0
    moves_injected: int = 0
    moves_reported: int = 0
    irregularities: list[str] = field(default_factory=list)
    held_hands: int = 0
    """Hands an irregularity held (the soak goes on at a new table)."""
    unsettled: int = 0
    """Reads that had not reached the core after ``SETTLE_SWEEPS`` sweeps."""


class RadioDealer(AutoDealer):
    """The automatic dealer at the pure core, its reads through the FEIG reader's pipeline."""

    def __init__(
        self,
        scenario: Scenario,
        rng: random.Random,
        *,
        crosstalk: float = 0.1,
        stacked_miss: float = 0.3,
        slide_moves: bool = False,
        debounce: Debounce | None = None,
        settle: int = 1,
        style: Style | None = None,
    ) -> None:
        super().__init__(scenario, rng, style or Style())
        self.radio = Radio(len(ANTENNAS), random.Random(rng.random()))
        self.radio.crosstalk = crosstalk
        self.radio.stacked_miss = stacked_miss
        self.radio.spread = {ZONE_ANTENNA[Zone.parse("board")]}  # the board's cards lie apart
        self.tracker: PresenceTracker[Zone] = PresenceTracker(debounce or Debounce(2, 3, 3))
        self.arbiter: Arbiter[Zone] = Arbiter(settle=settle)
        self.slide_moves = slide_moves
        self.figures = SoakFigures()
        self._pending_moves: dict[str, Zone] = {}
        self._counted = (0, 0, 0)

    # ------------------------------------------------------------------ the pace of a table

    async def deal_hole(self) -> None:
        """Deal the hole cards, then let the players look at them (the readers' settle time
        passes, as it does at a real table, before anyone acts)."""
        await super().deal_hole()
        await self.advance(self.now + THINKING)

    async def deal_street(self, street: str) -> None:
        """Deal a street, then let the players think."""
        await super().deal_street(street)
        await self.advance(self.now + THINKING)

    # ------------------------------------------------------------------ reads become placements

    async def feed(self, event: Input) -> list[TableEvent]:
        """Reads go onto the antennas and come back through the sweeps; the rest goes on."""
        if isinstance(event, StartHand):
            await self._clear_table()
        if isinstance(event, TagArrived):
            self.figures.reads += 1
            await self._put(event.zone, event.uid)
            return []
        if isinstance(event, TagDeparted):
            self.radio.remove(bytes.fromhex(event.uid))
            await self._settle()
            return []
        events = await self._core(event)
        if (
            self.slide_moves
            and isinstance(event, Action)
            and event.action is ActionKind.FOLD
            and not any(e.type == CommandRejected.TYPE for e in events)
        ):
            await self._muck_hand(event.seat)
        return events

    async def _core(self, event: Input) -> list[TableEvent]:
        events = await super().feed(event)
        for e in events:
            record = record_of(e)
            if isinstance(record, IrregularityDetected):
                self.figures.irregularities.append(record.reason)
        return events

    async def _put(self, zone: Zone, uid: str) -> None:
        tag = bytes.fromhex(uid)
        source = self.radio.where(tag)
        target = ZONE_ANTENNA[zone]
        if self.slide_moves and source is not None and zone == MUCK:
            # a card pushed from a seat into the muck: on both antennas for a few sweeps
            self.figures.moves_injected += 1
            self._pending_moves[uid] = zone
            self.radio.slide(tag, target, inventories=3)
        else:
            self.radio.place(tag, target)
        await self._settle()

    async def _muck_hand(self, seat: int) -> None:
        zone = ZONE_ANTENNA[Zone.parse(f"seat:{seat}")]
        for tag in list(self.radio.tags.get(zone, [])):
            self.figures.moves_injected += 1
            self._pending_moves[tag.hex()] = MUCK
            self.radio.slide(tag, ZONE_ANTENNA[MUCK], inventories=3)
        await self._settle()

    async def _clear_table(self) -> None:
        """Between hands the dealer gathers every card: the table empties."""
        self.radio.tags.clear()
        self.radio.slides.clear()
        await self._settle()

    # ------------------------------------------------------------------ the driver's pipeline

    def _truth(self) -> dict[str, Zone]:
        where = {
            uid.hex(): ANTENNAS[antenna]
            for antenna, uids in self.radio.tags.items()
            for uid in uids
        }
        for uid, slide in self.radio.slides.items():
            where[uid.hex()] = ANTENNAS[slide.target]
        return where

    async def _settle(self) -> None:
        """Sweep until the core's view is the table's (a few sweeps at least)."""
        for count in range(SETTLE_SWEEPS):
            await self._sweep()
            if count >= 3 and not self.radio.slides and self._settled():
                return
        self.figures.unsettled += 1

    def _settled(self) -> bool:
        truth = self._truth()
        placed = {uid: zone for zone in ANTENNAS.values() for uid in self.arbiter.present(zone)}
        return placed == truth

    async def _sweep(self) -> None:
        self.figures.sweeps += 1
        self.now += timedelta(milliseconds=50)
        ts = self.now
        heard, _ = self.radio.inventory(sorted(ANTENNAS))
        seen: dict[Zone, set[str]] = {zone: set() for zone in ANTENNAS.values()}
        rssi: dict[tuple[Zone, str], int] = {}
        for item in heard:
            zone, uid = ANTENNAS[item.antenna], item.uid.hex()
            seen[zone].add(uid)
            rssi[(zone, uid)] = item.rssi
        edges: list[PresenceEdge[Zone]] = []
        for zone, uids in seen.items():
            edges += self.tracker.seen(ts, zone, uids)
        for edge in self.arbiter.sweep(ts, edges, rssi):
            if isinstance(edge, Arrived):
                if self._pending_moves.get(edge.uid) == edge.zone:
                    del self._pending_moves[edge.uid]
                    self.figures.moves_reported += 1
                await self._core(TagArrived(ts, "reader", edge.zone, edge.uid))
            elif isinstance(edge, Departed):
                await self._core(TagDeparted(ts, "reader", edge.zone, edge.uid))
        figures, radio, arbiter = self.figures, self.radio, self.arbiter
        figures.crosstalk_reads += radio.crosstalk_reads - self._counted[0]
        figures.shadowed += arbiter.shadowed - self._counted[1]
        figures.switched += arbiter.switched - self._counted[2]
        self._counted = (radio.crosstalk_reads, arbiter.shadowed, arbiter.switched)


def soak(
    hands: int,
    *,
    seed: int = 1,
    crosstalk: float = 0.1,
    stacked_miss: float = 0.3,
    slide_moves: bool = False,
    arbitrate: bool = True,
) -> SoakFigures:
    """Play ``hands`` hands (a new random table when one runs out of players, or when a hand
    is held by an irregularity: the automatic dealer does not rule on holds)."""
    rng = random.Random(seed)
    figures = SoakFigures()
    while figures.hands < hands:
        dealer = RadioDealer(
            random_table(rng), rng, crosstalk=crosstalk, stacked_miss=stacked_miss,
            slide_moves=slide_moves,
        )  # fmt: skip
        if not arbitrate:
            dealer.arbiter = PassThrough()
        dealer.figures = figures
        try:
            while figures.hands < hands and dealer.play_hand():
                figures.hands += 1
        except RuntimeError as exc:
            if "held" not in str(exc):
                raise
            figures.hands += 1
            figures.held_hands += 1
    return figures


class PassThrough(Arbiter[Zone]):
    """No arbitration: every zone's edges go to the core as they are (the baseline)."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[Zone, set[str]] = {}

    def sweep(
        self,
        ts: datetime,
        edges: Iterable[PresenceEdge[Zone]],
        rssi: Mapping[tuple[Zone, str], int] | None = None,
        *,
        complete: bool = True,
        sweep_id: int | None = None,
        swept: Collection[Zone] | None = None,
    ) -> list[PresenceEdge[Zone]]:
        """The edges as they come."""
        out = list(edges)
        for edge in out:
            if isinstance(edge, Arrived):
                self._seen.setdefault(edge.zone, set()).add(edge.uid)
            elif isinstance(edge, Departed):
                self._seen.get(edge.zone, set()).discard(edge.uid)
        return out

    def present(self, zone: Zone) -> frozenset[str]:
        """What some zone asserts (a tag may be in several)."""
        return frozenset(self._seen.get(zone, set()))
