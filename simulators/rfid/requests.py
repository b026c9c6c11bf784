"""The simulated reader's answers to the host's requests (docs/protocols/tsp1.md §5.2).

Each handler checks the request, refuses it with the right ERROR code, or applies it to the
reader (:class:`~simulators.rfid.model.ReaderModel`, which hands its requests here) and returns the
response payload.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Protocol

from drivers.rfid.presence import Debounce
from drivers.rfid.tsp_reader.codes import MsgType, Report, ScanMode
from drivers.rfid.tsp_reader.events import InventorySnapshot
from drivers.rfid.tsp_reader.messages import (
    ReaderIdentity,
    ReaderStatus,
    ReadTagMemory,
    SetAntennaMap,
    SetScan,
    TagMemory,
)
from drivers.tsp.common import ErrorCode, ErrorResponse, Result
from drivers.tsp.payload import PayloadError
from simulators.errors import RefusedError
from simulators.rfid.antenna import Antenna, Assignment

TAG_BLOCK = 4
"""Bytes per block of tag memory (ISO/IEC 15693 and NTAG both use 4)."""


class _Config(Protocol):
    @property
    def n_antennas(self) -> int: ...


class _Scan(Protocol):
    @property
    def mode(self) -> int: ...


class Reader(Protocol):
    """What the handlers use of the reader model: the model imports this module to answer its
    requests, so they describe it rather than import it."""

    @property
    def config(self) -> _Config: ...
    @property
    def scan(self) -> _Scan: ...
    @property
    def antennas(self) -> Sequence[Antenna]: ...
    def identity(self) -> ReaderIdentity: ...
    def status(self, now: float) -> ReaderStatus: ...
    def map_antennas(self, wanted: dict[int, Assignment], now: float) -> None: ...
    def set_scan(
        self,
        mode: int,
        period_ms: int,
        debounce: Debounce,
        report: Report,
        snapshot_ms: int,
        now: float,
    ) -> None: ...
    def run_sweep(self, now: float) -> None: ...
    def snapshots(self, now: float) -> list[InventorySnapshot]: ...


Handler = Callable[[Reader, bytes, float], bytes]


def handle(model: Reader, msg_type: int, payload: bytes, now: float) -> tuple[int, bytes]:
    """Execute one request; return the response type and payload."""
    handler = HANDLERS.get(msg_type)
    if handler is None:
        return MsgType.ERROR, ErrorResponse(ErrorCode.NOT_SUPPORTED, "unknown type").encode()
    try:
        return msg_type, handler(model, payload, now)
    except RefusedError as refusal:
        answer = ErrorResponse(refusal.code or ErrorCode.BAD_STATE, refusal.detail)
        return MsgType.ERROR, answer.encode()
    except PayloadError as exc:
        return MsgType.ERROR, ErrorResponse(ErrorCode.BAD_LENGTH, str(exc)[:200]).encode()


def identify(model: Reader, payload: bytes, now: float) -> bytes:
    """IDENTIFY."""
    return model.identity().encode()


def status(model: Reader, payload: bytes, now: float) -> bytes:
    """GET_STATUS and PING."""
    return model.status(now).encode()


def set_antenna_map(model: Reader, payload: bytes, now: float) -> bytes:
    """SET_ANTENNA_MAP: the whole map, checked before any of it applies."""
    request = SetAntennaMap.decode(payload)
    count = model.config.n_antennas
    wanted: dict[int, Assignment] = {}
    for entry in request.antennas:
        if entry.antenna >= count:
            raise RefusedError(
                ErrorCode.BAD_ARG, f"antenna {entry.antenna}: the reader has {count}"
            )
        if not 1 <= entry.zone_kind <= 7:
            raise RefusedError(ErrorCode.BAD_ARG, f"zone kind {entry.zone_kind}")
        if entry.antenna in wanted:
            raise RefusedError(ErrorCode.BAD_ARG, f"antenna {entry.antenna} listed twice")
        if entry.enabled:
            wanted[entry.antenna] = Assignment(entry.zone_kind, entry.zone_index, entry.dwell_ms)
    model.map_antennas(wanted, now)
    return Result(0).encode()


def set_scan(model: Reader, payload: bytes, now: float) -> bytes:
    """SET_SCAN."""
    request = SetScan.decode(payload)
    if request.mode not in (ScanMode.CONTINUOUS, ScanMode.TRIGGERED):
        raise RefusedError(ErrorCode.NOT_SUPPORTED, f"scan mode {request.mode}")
    if not request.period_ms or not request.arrive_n or not request.depart_n:
        raise RefusedError(ErrorCode.BAD_ARG, "period, arrive_n and depart_n must be > 0")
    debounce = Debounce(request.arrive_n, request.depart_n)
    model.set_scan(
        request.mode, request.period_ms, debounce, request.report, request.snapshot_ms, now
    )
    return Result(0).encode()


def scan_now(model: Reader, payload: bytes, now: float) -> bytes:
    """SCAN_NOW: sweep first in triggered mode; answer what fits one frame (a snapshot speaks
    only for the antennas it lists)."""
    if model.scan.mode == ScanMode.TRIGGERED:
        model.run_sweep(now)
    return model.snapshots(now)[0].encode()


def read_tag_memory(model: Reader, payload: bytes, now: float) -> bytes:
    """READ_TAG_MEMORY of a tag lying on a working antenna."""
    request = ReadTagMemory.decode(payload)
    if request.antenna >= len(model.antennas):
        raise RefusedError(ErrorCode.BAD_ARG, f"no antenna {request.antenna}")
    antenna = model.antennas[request.antenna]
    if antenna.fault:
        raise RefusedError(ErrorCode.FAULT_ACTIVE, f"antenna {request.antenna} is faulty")
    if request.uid not in antenna.tags:
        raise RefusedError(ErrorCode.BAD_ARG, f"tag {request.uid.hex()} is not on it")
    size = request.count * TAG_BLOCK
    if size > 255:
        raise RefusedError(ErrorCode.BAD_ARG, f"{request.count} blocks do not fit")
    return TagMemory(tag_memory(request.uid)[request.block * TAG_BLOCK :][:size]).encode()


def tag_memory(uid: bytes) -> bytes:
    """The user memory of a simulated tag: 64 bytes derived from its UID."""
    return hashlib.sha256(b"tag memory" + uid).digest() * 2


HANDLERS: dict[int, Handler] = {
    MsgType.IDENTIFY: identify,
    MsgType.GET_STATUS: status,
    MsgType.PING: status,
    MsgType.SET_ANTENNA_MAP: set_antenna_map,
    MsgType.SET_SCAN: set_scan,
    MsgType.SCAN_NOW: scan_now,
    MsgType.READ_TAG_MEMORY: read_tag_memory,
}
