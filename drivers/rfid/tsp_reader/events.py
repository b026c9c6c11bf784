"""Payloads of the reader's events (docs/protocols/tsp1.md §5.3), both directions.

:func:`decode_event` turns an event frame into its dataclass; unknown types come back as
:class:`UnknownEvent` so a newer reader never breaks an older host. UIDs are bytes here, most
significant byte first (canonical order); the driver spells them with :mod:`controller.uids`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Self

from drivers.rfid.tsp_reader.codes import MsgType
from drivers.tsp.common import FaultCleared, FaultRaised
from drivers.tsp.payload import PayloadReader, PayloadWriter

#: RSSI value meaning "not measured".
RSSI_NONE = -128


@dataclass(frozen=True, slots=True)
class TagArrivedEvent:
    """TAG_ARRIVED: the reader asserts a tag on an antenna (after ``arrive_n`` reads)."""

    TYPE: ClassVar[int] = MsgType.TAG_ARRIVED
    antenna: int
    zone_kind: int
    zone_index: int
    uid: bytes
    rssi: int = RSSI_NONE
    t_dev_ms: int = 0
    reads: int = 0
    sweep: int = 0

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u8(self.antenna).u8(self.zone_kind).u8(self.zone_index)
        w.counted(self.uid).i8(self.rssi).u32(self.t_dev_ms).u8(self.reads)
        return w.u16(self.sweep).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "TAG_ARRIVED")
        return cls(
            r.u8("antenna"),
            r.u8("zone_kind"),
            r.u8("zone_index"),
            r.counted("uid"),
            r.i8("rssi"),
            r.u32("t_dev_ms"),
            r.u8("reads"),
            r.u16("sweep"),
        )


@dataclass(frozen=True, slots=True)
class TagDepartedEvent:
    """TAG_DEPARTED: the reader released a tag (after ``depart_n`` clean misses)."""

    TYPE: ClassVar[int] = MsgType.TAG_DEPARTED
    antenna: int
    zone_kind: int
    zone_index: int
    uid: bytes
    t_last_ms: int = 0
    sweep: int = 0

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u8(self.antenna).u8(self.zone_kind).u8(self.zone_index)
        return w.counted(self.uid).u32(self.t_last_ms).u16(self.sweep).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "TAG_DEPARTED")
        return cls(
            r.u8("antenna"),
            r.u8("zone_kind"),
            r.u8("zone_index"),
            r.counted("uid"),
            r.u32("t_last_ms"),
            r.u16("sweep"),
        )


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

    TYPE: ClassVar[int] = MsgType.INVENTORY_SNAPSHOT
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
class AntennaFault:
    """ANTENNA_FAULT: an antenna broke (``code`` 1…4), or works again (``code`` 0)."""

    TYPE: ClassVar[int] = MsgType.ANTENNA_FAULT
    antenna: int
    code: int
    value: int = 0

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u8(self.antenna).u8(self.code).u16(self.value).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "ANTENNA_FAULT")
        return cls(r.u8("antenna"), r.u8("code"), r.u16("value"))


@dataclass(frozen=True, slots=True)
class ZoneOverflow:
    """ZONE_OVERFLOW: an antenna asserts more tags than its zone holds (``count`` at or below
    the zone's capacity: the overflow is over)."""

    TYPE: ClassVar[int] = MsgType.ZONE_OVERFLOW
    antenna: int
    count: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u8(self.antenna).u8(self.count).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "ZONE_OVERFLOW")
        return cls(r.u8("antenna"), r.u8("count"))


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event type this host does not know (acknowledged and logged, never fatal)."""

    type: int
    payload: bytes


ReaderEvent = (
    TagArrivedEvent
    | TagDepartedEvent
    | InventorySnapshot
    | AntennaFault
    | ZoneOverflow
    | FaultRaised
    | FaultCleared
)

EVENT_CLASSES: dict[int, type[ReaderEvent]] = {
    cls.TYPE: cls
    for cls in (
        TagArrivedEvent,
        TagDepartedEvent,
        InventorySnapshot,
        AntennaFault,
        ZoneOverflow,
        FaultRaised,
        FaultCleared,
    )
}


def decode_event(msg_type: int, payload: bytes) -> ReaderEvent | UnknownEvent:
    """The event in a frame; raise PayloadError when its payload is too short."""
    cls = EVENT_CLASSES.get(msg_type)
    if cls is None:
        return UnknownEvent(msg_type, payload)
    return cls.decode(payload)
