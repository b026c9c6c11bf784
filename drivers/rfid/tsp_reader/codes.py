"""The numbers of the TSP/1 reader message set: types, zones, statuses, capabilities, faults."""

from __future__ import annotations

from enum import IntEnum, IntFlag

from controller.table.inputs import Zone, ZoneKind
from drivers.tsp.common import FaultNames


class MsgType(IntEnum):
    """Reader message types (requests 0x10…0x23, events 0x46…0x64, ERROR 0x7F)."""

    IDENTIFY = 0x10
    GET_STATUS = 0x11
    PING = 0x12
    SET_ANTENNA_MAP = 0x20
    SET_SCAN = 0x21
    SCAN_NOW = 0x22
    READ_TAG_MEMORY = 0x23
    FAULT_RAISED = 0x46
    FAULT_CLEARED = 0x47
    TAG_ARRIVED = 0x60
    TAG_DEPARTED = 0x61
    INVENTORY_SNAPSHOT = 0x62
    ANTENNA_FAULT = 0x63
    ZONE_OVERFLOW = 0x64
    ERROR = 0x7F


class Capability(IntFlag):
    """What a reader can do (IDENTIFY ``caps``)."""

    NONE = 0
    EDGE_EVENTS = 1 << 0
    SNAPSHOTS = 1 << 1
    RSSI = 1 << 2
    TAG_MEMORY_READ = 1 << 3
    ANTENNA_DIAGNOSTICS = 1 << 4
    FW_CHALLENGE = 1 << 5


class AirInterface(IntFlag):
    """The tag families a reader speaks (IDENTIFY ``air``)."""

    NONE = 0
    ISO14443A = 1 << 0
    ISO15693 = 1 << 1
    ISO14443B = 1 << 2
    FELICA = 1 << 3


class ZoneCode(IntEnum):
    """SET_ANTENNA_MAP ``zone_kind``: what an antenna lies under."""

    SEAT_HOLE = 1
    BOARD = 2
    MUCK = 3
    BURN = 4
    ENROLL = 5
    SHUFFLER_IN = 6
    OTHER = 7


class ReaderState(IntEnum):
    """GET_STATUS / PING ``state``."""

    UNCONFIGURED = 0
    IDLE = 1
    SCANNING = 2
    FAULT = 3


class StatusFlag(IntFlag):
    """GET_STATUS / PING ``flags``."""

    NONE = 0
    HOST_LOST = 1 << 0
    CONFIG_PENDING = 1 << 1
    EVENTS_DROPPED = 1 << 2
    ANTENNA_FAULT = 1 << 3


class ScanMode(IntEnum):
    """SET_SCAN ``mode``."""

    CONTINUOUS = 0
    TRIGGERED = 1


class Report(IntFlag):
    """SET_SCAN ``report``: what the reader sends as events."""

    NONE = 0
    EDGES = 1 << 0
    SNAPSHOTS = 1 << 1


class AntennaCode(IntEnum):
    """ANTENNA_FAULT ``code`` and INVENTORY_SNAPSHOT per-antenna ``status``.

    ``OK`` (0) in an ANTENNA_FAULT event says the antenna works again. ``OVERFULL`` and
    ``SETTLING`` appear only in snapshots: the entry's tag list is incomplete (it did not fit the
    frame) or not yet debounced (too few sweeps since the antenna was configured or repaired);
    either way the host draws no conclusion from it.
    """

    OK = 0
    OPEN = 1
    SHORT = 2
    DETUNED = 3
    NOISE = 4
    OVERFULL = 0xFD
    SETTLING = 0xFE


#: Fault codes of the reader's FAULT_RAISED / FAULT_CLEARED (class 0x06).
FAULTS = FaultNames({0x0601: "RF_FRONTEND", 0x0602: "OVERTEMP", 0x0603: "RESET"}, "reader fault")


_KIND_CODES: dict[ZoneKind, ZoneCode] = {
    ZoneKind.SEAT: ZoneCode.SEAT_HOLE,
    ZoneKind.BOARD: ZoneCode.BOARD,
    ZoneKind.MUCK: ZoneCode.MUCK,
    ZoneKind.BURN: ZoneCode.BURN,
    ZoneKind.ENROLL: ZoneCode.ENROLL,
    ZoneKind.SHUFFLER_IN: ZoneCode.SHUFFLER_IN,
}
_CODE_KINDS: dict[int, ZoneKind] = {int(code): kind for kind, code in _KIND_CODES.items()}

#: How many cards a zone holds in play; more is a ZONE_OVERFLOW. Zones not listed hold any number.
ZONE_CAPACITY: dict[int, int] = {ZoneCode.SEAT_HOLE: 2, ZoneCode.BOARD: 5}


def zone_code(zone: Zone) -> tuple[ZoneCode, int]:
    """The wire form of a zone: ``(zone_kind, zone_index)`` (the seat number, else 0)."""
    return _KIND_CODES[zone.kind], zone.seat or 0


def zone_of(kind: int, index: int) -> Zone | None:
    """The zone of a wire ``(zone_kind, zone_index)``; None for OTHER or a value out of range."""
    zone_kind = _CODE_KINDS.get(kind)
    if zone_kind is None:
        return None
    if zone_kind is ZoneKind.SEAT:
        return Zone(zone_kind, index) if 1 <= index <= 10 else None
    return Zone(zone_kind)
