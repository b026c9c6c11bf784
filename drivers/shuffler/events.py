"""Payloads of the shuffler's events (docs/protocols/tsp1.md §3.4), both directions.

Each event is a :class:`~drivers.tsp.layout.FlatMessage`: its fields, in order, are its payload.
FAULT_RAISED and FAULT_CLEARED are every message set's (:mod:`drivers.tsp.common`).
:data:`EVENTS` turns an event frame into its dataclass (:class:`~drivers.tsp.events.UnknownEvent`
for a type this host does not know).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from drivers.shuffler.codes import MsgType
from drivers.tsp.common import FaultCleared, FaultRaised
from drivers.tsp.events import EventSet
from drivers.tsp.layout import U8, U16, U32, Bytes32, Counted, FlatMessage


@dataclass(frozen=True, slots=True)
class StateChanged(FlatMessage):
    """STATE_CHANGED."""

    TYPE: ClassVar[MsgType] = MsgType.STATE_CHANGED
    state: U8
    prev: U8
    flags: U16
    shuffle_id: U32


@dataclass(frozen=True, slots=True)
class ShuffleStarted(FlatMessage):
    """SHUFFLE_STARTED."""

    TYPE: ClassVar[MsgType] = MsgType.SHUFFLE_STARTED
    shuffle_id: U32
    mode: U8
    host_ref: U32
    trigger: U8


@dataclass(frozen=True, slots=True)
class DeckCheck(FlatMessage):
    """DECK_CHECK: what the device counted and recognised (missing/duplicate are card codes)."""

    TYPE: ClassVar[MsgType] = MsgType.DECK_CHECK
    shuffle_id: U32
    verdict: U8
    counted: U8
    recognized: U8
    unreadable: U8
    foreign: U8
    missing: Counted = b""
    duplicates: Counted = b""


@dataclass(frozen=True, slots=True)
class ShuffleComplete(FlatMessage):
    """SHUFFLE_COMPLETE: the result and the deck commitment (docs/protocols/tsp1.md §3.6)."""

    TYPE: ClassVar[MsgType] = MsgType.SHUFFLE_COMPLETE
    shuffle_id: U32
    result: U8
    duration_ms: U32
    card_count: U8
    commitment: Bytes32


@dataclass(frozen=True, slots=True)
class DeckMoved(FlatMessage):
    """DECK_MOVED."""

    TYPE: ClassVar[MsgType] = MsgType.DECK_MOVED
    shuffle_id: U32
    what: U8


@dataclass(frozen=True, slots=True)
class GroupDispensedEvent(FlatMessage):
    """GROUP_DISPENSED: card codes are 0xFD while identities are withheld."""

    TYPE: ClassVar[MsgType] = MsgType.GROUP_DISPENSED
    shuffle_id: U32
    group: U8
    purpose: U8
    seat: U8
    cards: Counted
    remaining: U8


@dataclass(frozen=True, slots=True)
class OperatorInput(FlatMessage):
    """OPERATOR_INPUT: a button on the device was pressed."""

    TYPE: ClassVar[MsgType] = MsgType.OPERATOR_INPUT
    button: U8


DeviceEvent = (
    StateChanged
    | ShuffleStarted
    | DeckCheck
    | ShuffleComplete
    | DeckMoved
    | GroupDispensedEvent
    | FaultRaised
    | FaultCleared
    | OperatorInput
)

EVENTS: EventSet[DeviceEvent] = EventSet(
    StateChanged,
    ShuffleStarted,
    DeckCheck,
    ShuffleComplete,
    DeckMoved,
    GroupDispensedEvent,
    FaultRaised,
    FaultCleared,
    OperatorInput,
)
