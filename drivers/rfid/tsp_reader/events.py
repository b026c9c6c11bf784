"""Payloads of the reader's events (docs/protocols/tsp1.md §5.3), both directions.

Each event is a :class:`~drivers.tsp.layout.FlatMessage`: its fields, in order, are its payload.
FAULT_RAISED and FAULT_CLEARED are every message set's (:mod:`drivers.tsp.common`). :data:`EVENTS`
turns an event frame into its dataclass (:class:`~drivers.tsp.events.UnknownEvent` for a type this
host does not know). UIDs are bytes here, most significant byte first (canonical order); the
driver spells them with :mod:`controller.uids`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from drivers.rfid.tsp_reader.codes import MsgType
from drivers.tsp.common import FaultCleared, FaultRaised
from drivers.tsp.events import EventSet
from drivers.tsp.layout import I8, U8, U16, U32, Counted, FlatMessage, counted, list_of

#: RSSI value meaning "not measured".
RSSI_NONE = -128


@dataclass(frozen=True, slots=True)
class TagArrivedEvent(FlatMessage):
    """TAG_ARRIVED: the reader asserts a tag on an antenna (after ``arrive_n`` reads)."""

    TYPE: ClassVar[MsgType] = MsgType.TAG_ARRIVED
    antenna: U8
    zone_kind: U8
    zone_index: U8
    uid: Counted
    rssi: I8 = RSSI_NONE
    t_dev_ms: U32 = 0
    reads: U8 = 0
    sweep: U16 = 0


@dataclass(frozen=True, slots=True)
class TagDepartedEvent(FlatMessage):
    """TAG_DEPARTED: the reader released a tag (after ``depart_n`` clean misses)."""

    TYPE: ClassVar[MsgType] = MsgType.TAG_DEPARTED
    antenna: U8
    zone_kind: U8
    zone_index: U8
    uid: Counted
    t_last_ms: U32 = 0
    sweep: U16 = 0


@dataclass(frozen=True, slots=True)
class SnapshotEntry(FlatMessage):
    """One antenna of a snapshot: its status and the tags it asserts."""

    WHAT: ClassVar[str] = "INVENTORY_SNAPSHOT"
    antenna: U8
    status: U8
    uids: Annotated[tuple[bytes, ...], list_of(counted, "k")] = ()

    @property
    def size(self) -> int:
        """Bytes this entry takes in a payload."""
        return 3 + sum(1 + len(uid) for uid in self.uids)


@dataclass(frozen=True, slots=True)
class InventorySnapshot(FlatMessage):
    """INVENTORY_SNAPSHOT (and the SCAN_NOW response): every listed antenna's asserted tags.

    A snapshot speaks only for the antennas it lists; a reader whose view does not fit one frame
    sends several snapshots with the same ``sweep``.
    """

    TYPE: ClassVar[MsgType] = MsgType.INVENTORY_SNAPSHOT
    sweep: U16
    t_dev_ms: U32
    entries: Annotated[tuple[SnapshotEntry, ...], list_of(SnapshotEntry)]

    #: Bytes before the entries: sweep u16, t_dev_ms u32, n u8.
    HEADER_SIZE: ClassVar[int] = 7


@dataclass(frozen=True, slots=True)
class AntennaFault(FlatMessage):
    """ANTENNA_FAULT: an antenna broke (``code`` 1…4), or works again (``code`` 0)."""

    TYPE: ClassVar[MsgType] = MsgType.ANTENNA_FAULT
    antenna: U8
    code: U8
    value: U16 = 0


@dataclass(frozen=True, slots=True)
class ZoneOverflow(FlatMessage):
    """ZONE_OVERFLOW: an antenna asserts more tags than its zone holds (``count`` at or below
    the zone's capacity: the overflow is over)."""

    TYPE: ClassVar[MsgType] = MsgType.ZONE_OVERFLOW
    antenna: U8
    count: U8


ReaderEvent = (
    TagArrivedEvent
    | TagDepartedEvent
    | InventorySnapshot
    | AntennaFault
    | ZoneOverflow
    | FaultRaised
    | FaultCleared
)

EVENTS: EventSet[ReaderEvent] = EventSet(
    TagArrivedEvent,
    TagDepartedEvent,
    InventorySnapshot,
    AntennaFault,
    ZoneOverflow,
    FaultRaised,
    FaultCleared,
)
