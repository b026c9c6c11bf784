"""Payloads of the reader's events (docs/protocols/tsp1.md §5.3), both directions.

Each event but INVENTORY_SNAPSHOT is a :class:`~drivers.tsp.layout.FlatMessage`: its fields, in
order, are its payload. FAULT_RAISED and FAULT_CLEARED are every message set's
(:mod:`drivers.tsp.common`). :data:`EVENTS` turns an event frame into its dataclass
(:class:`~drivers.tsp.events.UnknownEvent` for a type this host does not know). UIDs are bytes
here, most significant byte first (canonical order); the driver spells them with
:mod:`controller.uids`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Self

from drivers.rfid.tsp_reader.codes import MsgType
from drivers.tsp.common import FaultCleared, FaultRaised
from drivers.tsp.events import EventSet
from drivers.tsp.layout import I8, U8, U16, U32, Counted, FlatMessage
from drivers.tsp.payload import PayloadReader, PayloadWriter

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
class SnapshotEntry:
    """One antenna of a snapshot: its status and the tags it asserts."""

    antenna: int
    status: int
    uids: tuple[bytes, ...] = ()

    def write(self, w: PayloadWriter) -> None:
        """Append this entry to a payload."""
        w.u8(self.antenna).u8(self.status).u8(len(self.uids))
        for uid in self.uids:
            w.counted(uid)

    @classmethod
    def read(cls, r: PayloadReader) -> Self:
        """Read one entry."""
        antenna, status, count = r.u8("antenna"), r.u8("status"), r.u8("k")
        return cls(antenna, status, tuple(r.counted("uid") for _ in range(count)))

    @property
    def size(self) -> int:
        """Bytes this entry takes in a payload."""
        return 3 + sum(1 + len(uid) for uid in self.uids)


@dataclass(frozen=True, slots=True)
class InventorySnapshot:
    """INVENTORY_SNAPSHOT (and the SCAN_NOW response): every listed antenna's asserted tags.

    A snapshot speaks only for the antennas it lists; a reader whose view does not fit one frame
    sends several snapshots with the same ``sweep``.
    """

    TYPE: ClassVar[MsgType] = MsgType.INVENTORY_SNAPSHOT
    sweep: int
    t_dev_ms: int
    entries: tuple[SnapshotEntry, ...]

    #: Bytes before the entries: sweep u16, t_dev_ms u32, n u8.
    HEADER_SIZE: ClassVar[int] = 7

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u16(self.sweep).u32(self.t_dev_ms).u8(len(self.entries))
        for entry in self.entries:
            entry.write(w)
        return w.build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "INVENTORY_SNAPSHOT")
        sweep, t_dev_ms, count = r.u16("sweep"), r.u32("t_dev_ms"), r.u8("n")
        return cls(sweep, t_dev_ms, tuple(SnapshotEntry.read(r) for _ in range(count)))


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
