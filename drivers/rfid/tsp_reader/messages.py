"""Payloads of the reader's requests and responses (docs/protocols/tsp1.md §5.2), both directions.

Each message is a frozen dataclass with ``encode()`` and a ``decode(payload)`` class method that
raises :class:`~drivers.tsp.payload.PayloadError` on a short payload and ignores trailing bytes
(senders may append fields); most are a :class:`~drivers.tsp.layout.FlatMessage` (their fields,
in order, are the payload). IDENTIFY, GET_STATUS, PING and SCAN_NOW requests have no payload;
SCAN_NOW is answered with an INVENTORY_SNAPSHOT payload (:class:`.events.InventorySnapshot`).
SET_ANTENNA_MAP and SET_SCAN answer with the shared one-byte :class:`~drivers.tsp.common.Result`
(``result``, 0 = applied).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from drivers.rfid.tsp_reader.codes import (
    AirInterface,
    Capability,
    ReaderState,
    Report,
    ScanMode,
    StatusFlag,
)
from drivers.tsp.common import IdentityHead
from drivers.tsp.layout import (
    U8,
    U16,
    U32,
    Bool,
    Counted,
    FlatMessage,
    enum_of,
    flags_of,
    list_of,
    u8,
    u16,
    u32,
)

__all__ = [
    "AntennaAssignment",
    "ReadTagMemory",
    "ReaderIdentity",
    "ReaderStatus",
    "SetAntennaMap",
    "SetScan",
    "TagMemory",
]


# --------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class ReaderIdentity(IdentityHead):
    """IDENTIFY response: who the reader is, what it can do and how many antennas it drives."""

    caps: Annotated[Capability, flags_of(Capability, u32)]
    air: Annotated[AirInterface, flags_of(AirInterface, u8)]
    n_antennas: U8


@dataclass(frozen=True, slots=True)
class ReaderStatus(FlatMessage):
    """GET_STATUS and PING response (17 bytes)."""

    WHAT: ClassVar[str] = "status"
    state: Annotated[ReaderState | int, enum_of(ReaderState, u8)]
    flags: Annotated[StatusFlag, flags_of(StatusFlag, u16)]
    sweep_ms: U16
    antenna_ok: U32
    boot_id: U32
    uptime_ms: U32

    def antenna_works(self, antenna: int) -> bool:
        """Whether the ``antenna_ok`` bitmap says the antenna works."""
        return bool(self.antenna_ok >> antenna & 1)


@dataclass(frozen=True, slots=True)
class TagMemory(FlatMessage):
    """READ_TAG_MEMORY response: ``n u8, data[n]``."""

    WHAT: ClassVar[str] = "READ_TAG_MEMORY response"
    data: Counted


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class AntennaAssignment(FlatMessage):
    """One antenna of SET_ANTENNA_MAP: the zone it lies under and how long it listens."""

    WHAT: ClassVar[str] = "SET_ANTENNA_MAP"
    antenna: U8
    zone_kind: U8
    zone_index: U8
    dwell_ms: U8
    enabled: Bool = True


@dataclass(frozen=True, slots=True)
class SetAntennaMap(FlatMessage):
    """SET_ANTENNA_MAP: ``n u8`` then n × ``(antenna, zone_kind, zone_index, dwell_ms, enabled)``.

    Antennas not listed are not scanned.
    """

    WHAT: ClassVar[str] = "SET_ANTENNA_MAP"
    antennas: Annotated[tuple[AntennaAssignment, ...], list_of(AntennaAssignment)]


@dataclass(frozen=True, slots=True)
class SetScan(FlatMessage):
    """SET_SCAN: how often to sweep, the debounce, and what to report."""

    WHAT: ClassVar[str] = "SET_SCAN"
    mode: Annotated[ScanMode | int, enum_of(ScanMode, u8)]
    period_ms: U16
    arrive_n: U8
    depart_n: U8
    report: Annotated[Report, flags_of(Report, u8)]
    snapshot_ms: U16


@dataclass(frozen=True, slots=True)
class ReadTagMemory(FlatMessage):
    """READ_TAG_MEMORY: ``antenna u8, uid_len u8, uid, block u8, count u8``."""

    WHAT: ClassVar[str] = "READ_TAG_MEMORY"
    antenna: U8
    uid: Counted
    block: U8
    count: U8
