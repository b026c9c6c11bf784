"""Payloads of the reader's requests and responses (docs/protocols/tsp1.md §5.2), both directions.

Each message is a frozen dataclass with ``encode()`` and a ``decode(payload)`` class method that
raises :class:`~drivers.tsp.payload.PayloadError` on a short payload and ignores trailing bytes
(senders may append fields). IDENTIFY, GET_STATUS, PING and SCAN_NOW requests have no payload;
SCAN_NOW is answered with an INVENTORY_SNAPSHOT payload (:class:`.events.InventorySnapshot`).
SET_ANTENNA_MAP and SET_SCAN answer with the shared one-byte :class:`~drivers.tsp.common.Result`
(``result``, 0 = applied).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from drivers.rfid.tsp_reader.codes import (
    AirInterface,
    Capability,
    ReaderState,
    Report,
    ScanMode,
    StatusFlag,
)
from drivers.tsp.common import IdentityHead, read_identity_head
from drivers.tsp.payload import PayloadReader, PayloadWriter

__all__ = [
    "AntennaAssignment",
    "ReadTagMemory",
    "ReaderIdentity",
    "ReaderStatus",
    "SetAntennaMap",
    "SetScan",
    "TagMemory",
]


def _state(value: int) -> ReaderState | int:
    return ReaderState(value) if value in ReaderState._value2member_map_ else value


def _mode(value: int) -> ScanMode | int:
    return ScanMode(value) if value in ScanMode._value2member_map_ else value


# --------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class ReaderIdentity(IdentityHead):
    """IDENTIFY response: who the reader is, what it can do and how many antennas it drives."""

    caps: Capability
    air: AirInterface
    n_antennas: int

    def encode(self) -> bytes:
        """The payload bytes."""
        w = self.head().u32(int(self.caps))
        return w.u8(int(self.air)).u8(self.n_antennas).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "IDENTIFY response")
        return cls(
            *read_identity_head(r),
            Capability(r.u32("caps")),
            AirInterface(r.u8("air")),
            r.u8("n_antennas"),
        )


@dataclass(frozen=True, slots=True)
class ReaderStatus:
    """GET_STATUS and PING response (17 bytes)."""

    state: ReaderState | int
    flags: StatusFlag
    sweep_ms: int
    antenna_ok: int
    boot_id: int
    uptime_ms: int

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u8(int(self.state)).u16(int(self.flags)).u16(self.sweep_ms)
        return w.u32(self.antenna_ok).u32(self.boot_id).u32(self.uptime_ms).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "status")
        return cls(
            _state(r.u8("state")),
            StatusFlag(r.u16("flags")),
            r.u16("sweep_ms"),
            r.u32("antenna_ok"),
            r.u32("boot_id"),
            r.u32("uptime_ms"),
        )

    def antenna_works(self, antenna: int) -> bool:
        """Whether the ``antenna_ok`` bitmap says the antenna works."""
        return bool(self.antenna_ok >> antenna & 1)


@dataclass(frozen=True, slots=True)
class TagMemory:
    """READ_TAG_MEMORY response: ``n u8, data[n]``."""

    data: bytes

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().counted(self.data).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        return cls(PayloadReader(payload, "READ_TAG_MEMORY response").counted("data"))


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class AntennaAssignment:
    """One antenna of SET_ANTENNA_MAP: the zone it lies under and how long it listens."""

    antenna: int
    zone_kind: int
    zone_index: int
    dwell_ms: int
    enabled: bool = True

    def write(self, w: PayloadWriter) -> None:
        """Append this entry to a payload."""
        w.u8(self.antenna).u8(self.zone_kind).u8(self.zone_index).u8(self.dwell_ms)
        w.u8(int(self.enabled))

    @classmethod
    def read(cls, r: PayloadReader) -> Self:
        """Read one entry."""
        return cls(
            r.u8("antenna"),
            r.u8("zone_kind"),
            r.u8("zone_index"),
            r.u8("dwell_ms"),
            bool(r.u8("enabled")),
        )


@dataclass(frozen=True, slots=True)
class SetAntennaMap:
    """SET_ANTENNA_MAP: ``n u8`` then n × ``(antenna, zone_kind, zone_index, dwell_ms, enabled)``.

    Antennas not listed are not scanned.
    """

    antennas: tuple[AntennaAssignment, ...]

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u8(len(self.antennas))
        for entry in self.antennas:
            entry.write(w)
        return w.build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "SET_ANTENNA_MAP")
        count = r.u8("n")
        return cls(tuple(AntennaAssignment.read(r) for _ in range(count)))


@dataclass(frozen=True, slots=True)
class SetScan:
    """SET_SCAN: how often to sweep, the debounce, and what to report."""

    mode: ScanMode | int
    period_ms: int
    arrive_n: int
    depart_n: int
    report: Report
    snapshot_ms: int

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u8(int(self.mode)).u16(self.period_ms).u8(self.arrive_n)
        return w.u8(self.depart_n).u8(int(self.report)).u16(self.snapshot_ms).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "SET_SCAN")
        return cls(
            _mode(r.u8("mode")),
            r.u16("period_ms"),
            r.u8("arrive_n"),
            r.u8("depart_n"),
            Report(r.u8("report")),
            r.u16("snapshot_ms"),
        )


@dataclass(frozen=True, slots=True)
class ReadTagMemory:
    """READ_TAG_MEMORY: ``antenna u8, uid_len u8, uid, block u8, count u8``."""

    antenna: int
    uid: bytes
    block: int
    count: int

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u8(self.antenna).counted(self.uid)
        return w.u8(self.block).u8(self.count).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "READ_TAG_MEMORY")
        return cls(r.u8("antenna"), r.counted("uid"), r.u8("block"), r.u8("count"))
