"""A virtual table: a shuffler and its readers at the level of the core's inputs.

It stands in for the hardware where the byte-level simulators are not wanted (tests of the
shell, the pipeline benchmark, a demo without ptys): it shuffles on request (a seeded order per
shuffle, so runs are reproducible), dispenses groups, refuses a group it already dispensed, and,
with ``deliver = true``, plays the dealer's hands too: every dispensed card is "read" where its
group goes (the seat, the burn, the board).

Like a real device it outlives the host process when given a ``state_file``: its deck, the groups
it dispensed and the events the host has not yet taken are written there before a command is
answered, and events stay queued until the sink returned (the host journaled them), so a host
killed at any moment finds the device where it left it and gets every event exactly once more at
most. Like a TSP/1 device it numbers its events under a boot id drawn when its memory began
(``origin``), so the host recognises a redelivered event.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.cards import Card, card_code
from controller.deck_order import deck_order
from controller.decks import DeckManifest
from controller.paths import directory_problem
from controller.table.codec import input_from_dict, input_to_dict
from controller.table.inputs import (
    DeckChecked,
    DeckRevealed,
    DeviceHealthChanged,
    DeviceInput,
    GroupDispensed,
    Health,
    Origin,
    Purpose,
    ShuffleCompleted,
    TagArrived,
    Zone,
    ZoneKind,
)
from controller.table.plan import DispenseRequest
from drivers.contract import (
    DISPENSE,
    READ,
    REVEAL,
    SHUFFLE,
    Device,
    DeviceContext,
    DeviceStatus,
)
from drivers.errors import AlreadyDoneError, DeviceCommandError
from drivers.supervisor import InputSink

_BOARD_PURPOSES = {Purpose.FLOP, Purpose.TURN, Purpose.RIVER, Purpose.BOARD_OTHER}


class VirtualOptions(BaseModel):
    """Options of the ``virtual`` driver."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = Field(default=1, description="shuffle n deals the order seeded with seed + n")
    state_file: Path | None = Field(default=None, description="device memory across host runs")
    deliver: bool = Field(default=True, description="read every dispensed card where it goes")
    reader: str = Field(default="reader", min_length=1, description="device id of the readers")
    id_policy: Literal["withhold", "live"] = "withhold"
    event_delay: float = Field(default=0.0, ge=0, description="seconds before each event")


class VirtualTable(Device):
    """The virtual shuffler (and readers) of one table."""

    options_model = VirtualOptions
    capabilities = frozenset({SHUFFLE, DISPENSE, REVEAL, READ})
    options: VirtualOptions

    def __init__(
        self, device_id: str, options: VirtualOptions, context: DeviceContext | None = None
    ) -> None:
        super().__init__(device_id, options, context)
        if self.context.manifest is None:
            raise ValueError("the virtual table reads tags: it needs the table's deck manifest")
        self.manifest: DeckManifest = self.context.manifest
        self._wake = asyncio.Event()
        self._memory: dict[str, Any] = {
            "shuffle_id": 0,
            "order": [],
            "position": 0,
            "groups": [],
            "retired": {},
            "pending": [],
            "online_reported": False,
            "dispensed_cards": 0,
            "boot_id": secrets.randbits(32),
            "event_seq": 0,
        }
        path = options.state_file
        if path is not None and path.is_file():
            self._memory.update(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    def run_problems(cls, options: BaseModel) -> list[str]:
        """The state file's directory must be one this process can write in (or make)."""
        assert isinstance(options, VirtualOptions)
        path = options.state_file
        if path is None:
            return []
        if path.exists() and not path.is_file():
            return [f"state_file: {path} is not a file"]
        problem = directory_problem(path.parent, create=True)
        return [f"state_file: {problem}"] if problem else []

    # ------------------------------------------------------------------ the device contract

    async def run(self, sink: InputSink) -> None:
        """Deliver queued events to the sink, oldest first, until cancelled."""
        if not self._memory["online_reported"]:
            self._memory["online_reported"] = True
            self._emit(DeviceHealthChanged(self._now(), self.device_id, Health.ONLINE, True))
        while True:
            while self._memory["pending"]:
                if self.options.event_delay:
                    await asyncio.sleep(self.options.event_delay)
                event = input_from_dict(self._memory["pending"][0])
                assert isinstance(event, DeviceInput)
                await sink(event)
                self._memory["pending"].pop(0)
                self._save()
            self._wake.clear()
            await self._wake.wait()

    async def query(self) -> DeviceStatus:
        """The current deck and the groups dispensed from it."""
        memory = self._memory
        return DeviceStatus(
            True,
            memory["shuffle_id"] or None,
            frozenset(memory["groups"]),
            f"{len(memory['order']) - memory['position']} cards left",
        )

    async def shuffle(self, ref: int) -> None:
        """Retire the deck, shuffle the next one and report its check and completion."""
        memory = self._memory
        if memory["order"]:
            memory["retired"][str(memory["shuffle_id"])] = memory["order"]
            for old in sorted(memory["retired"], key=int)[:-4]:
                del memory["retired"][old]
        sid = memory["shuffle_id"] + 1
        order = list(deck_order(seed=self.options.seed + sid))
        memory.update(shuffle_id=sid, order=order, position=0, groups=[])
        ts = self._now()
        self._emit(DeckChecked(ts, self.device_id, sid, frozenset(), len(order)), save=False)
        digest = hashlib.sha256(
            b"TSP1-deck" + sid.to_bytes(4, "little") + bytes(card_code(Card(c)) for c in order)
        ).hexdigest()
        self._emit(ShuffleCompleted(ts, self.device_id, sid, True, len(order), digest))

    async def dispense(self, shuffle_id: int, group: int, request: DispenseRequest) -> None:
        """Put the next ``request.size`` cards in the tray as group ``group``."""
        memory = self._memory
        if shuffle_id != memory["shuffle_id"]:
            raise DeviceCommandError(f"deck {shuffle_id} is not the current deck")
        if group in memory["groups"]:
            raise AlreadyDoneError(f"group {group} of deck {shuffle_id} was already dispensed")
        position = memory["position"]
        if position + request.size > len(memory["order"]):
            raise DeviceCommandError("not enough cards left")
        cards = [Card(c) for c in memory["order"][position : position + request.size]]
        memory["position"] = position + request.size
        memory["groups"].append(group)
        memory["dispensed_cards"] += request.size
        ts = self._now()
        live = self.options.id_policy == "live"
        shown: tuple[Card | None, ...] = tuple(cards) if live else (None,) * len(cards)
        remaining = len(memory["order"]) - memory["position"]
        purpose, seat = request.purpose, request.seat
        self._emit(
            GroupDispensed(ts, self.device_id, shuffle_id, group, purpose, seat, shown, remaining),
            save=not self.options.deliver,
        )
        if self.options.deliver:
            for zone, card in _destinations(request, cards):
                self._emit(
                    TagArrived(ts, self.options.reader, zone, self.manifest.uid(card)), False
                )
            self._save()

    async def reveal(self, shuffle_id: int) -> None:
        """Reveal a retired deck's order."""
        order = self._memory["retired"].get(str(shuffle_id))
        if order is None:
            raise DeviceCommandError(f"deck {shuffle_id} is not a retired deck")
        cards = tuple(Card(c) for c in order)
        self._emit(DeckRevealed(self._now(), self.device_id, shuffle_id, cards, True))

    def describe(self) -> dict[str, Any]:
        """The virtual device's identity."""
        return {
            "model": "virtual table",
            "firmware_sha256": None,
            "approved": True,
            "simulated": True,
            "reader": self.options.reader,
        }

    # ------------------------------------------------------------------ memory

    @property
    def dispensed_cards(self) -> int:
        """Cards dispensed over the device's life (tests check nothing went out twice)."""
        return int(self._memory["dispensed_cards"])

    def _emit(self, event: DeviceInput, save: bool = True) -> None:
        memory = self._memory
        memory["event_seq"] += 1
        numbered = dataclasses.replace(event, origin=Origin(memory["boot_id"], memory["event_seq"]))
        memory["pending"].append(input_to_dict(numbered))
        if save:
            self._save()
        self._wake.set()

    def _save(self) -> None:
        path = self.options.state_file
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._memory), encoding="utf-8")
        os.replace(tmp, path)

    @staticmethod
    def _now() -> datetime:
        return datetime.now(UTC)


def _destinations(request: DispenseRequest, cards: list[Card]) -> list[tuple[Zone, Card]]:
    if request.purpose is Purpose.HOLE and request.seat is not None:
        return [(Zone(ZoneKind.SEAT, request.seat), c) for c in cards]
    if request.purpose is Purpose.BURN:
        return [(Zone(ZoneKind.BURN), c) for c in cards]
    if request.purpose in _BOARD_PURPOSES:
        standard = {Purpose.FLOP: 3}.get(request.purpose, 1)
        burns = cards[: len(cards) - standard]  # a board group that carries its burn
        board = cards[len(cards) - standard :]
        return [(Zone(ZoneKind.BURN), c) for c in burns] + [
            (Zone(ZoneKind.BOARD), c) for c in board
        ]
    return []
