"""Reader events → the core's inputs, through the host's view of the reader's zones.

:class:`Reporter` is the part of the TSP/1 reader driver that knows what the events mean. It owns
the :class:`~drivers.rfid.tsp_reader.view.ReaderView`, maps antennas to the configured zones,
and hands the resulting inputs to the sink in the order the view changed (one event at a time:
edges from a snapshot and edges from events never interleave).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

import structlog

from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    Health,
    Origin,
    TagArrived,
    TagDeparted,
    Zone,
)
from controller.uids import UidError, uid_from_bytes
from drivers.rfid.arbiter import Arbiter
from drivers.rfid.presence import Arrived, Departed, PresenceEdge, ZoneFresh, ZoneStale
from drivers.rfid.tsp_reader.codes import FAULTS, ZONE_CAPACITY, AntennaCode, zone_code, zone_of
from drivers.rfid.tsp_reader.events import (
    RSSI_NONE,
    AntennaFault,
    InventorySnapshot,
    ReaderEvent,
    TagArrivedEvent,
    TagDepartedEvent,
    ZoneOverflow,
)
from drivers.rfid.tsp_reader.view import ReaderView
from drivers.supervisor import InputSink
from drivers.tsp.common import FaultCleared, FaultRaised
from drivers.tsp.events import UnknownEvent

log = structlog.get_logger("tablectl.rfid")

Clock = Callable[[], datetime]


def zone_device_id(reader: str, zone: Zone) -> str:
    """The device id a zone's health is reported under (``rfid-seat3``, as PN532 modules)."""
    return f"{reader}-{str(zone).replace(':', '')}"


def antenna_code_name(code: int) -> str:
    """``OPEN``, ``SHORT``… (the number when this host does not know it)."""
    return AntennaCode(code).name if code in AntennaCode._value2member_map_ else str(code)


class Reporter:
    """Turns one reader's events into the core's inputs."""

    def __init__(self, device_id: str, zones: dict[int, Zone], sink: InputSink, clock: Clock):
        self.device_id = device_id
        self.zones = zones
        self._sink = sink
        self._clock = clock
        self.view = ReaderView()
        #: What the core is told: one zone per tag, crosstalk kept out (drivers/rfid/arbiter.py).
        self.arbiter: Arbiter[Zone] = Arbiter()
        self.zone_health: dict[Zone, Health] = {}
        self._lock = asyncio.Lock()
        # Every snapshot lists every antenna: a configuration problem is logged once per antenna,
        # not once per sweep.
        self._warned: set[tuple[str, int]] = set()

    async def event(self, event: ReaderEvent | UnknownEvent, origin: Origin | None = None) -> None:
        """One decoded reader event; ``origin`` is its identity on the reader.

        A fault or a clear is one input and carries the origin, so a copy the reader resends
        after a host restart is recognised; tag edges go through the view of the zones, which
        the reader's snapshots keep right, and carry none.
        """
        ts = self._clock()
        async with self._lock:
            if isinstance(event, TagArrivedEvent | TagDepartedEvent):
                await self._on_edge(ts, event)
            elif isinstance(event, InventorySnapshot):
                await self._apply_snapshot(ts, event)
            elif isinstance(event, AntennaFault):
                await self._on_antenna_fault(ts, event, origin)
            elif isinstance(event, ZoneOverflow):
                await self._on_overflow(ts, event, origin)
            elif isinstance(event, FaultRaised | FaultCleared):
                await self._sink(FAULTS.input_of(event, self.device_id, ts, origin))
            else:
                log.warning("reader.unknown_event", device=self.device_id, type=event.type)

    async def snapshot(self, snapshot: InventorySnapshot) -> None:
        """A snapshot that did not come as an event (the SCAN_NOW response)."""
        async with self._lock:
            await self._apply_snapshot(self._clock(), snapshot)

    def _zone(self, antenna: int, kind: int | None = None, index: int = 0) -> Zone | None:
        zone = self.zones.get(antenna)
        if zone is None:
            if self._first("unmapped", antenna):
                log.warning(
                    "reader.unmapped_antenna",
                    device=self.device_id,
                    antenna=antenna,
                    detail="its reads are ignored: add it to this device's antennas in the config",
                )
        elif kind is not None and zone_of(kind, index) != zone and self._first("mismatch", antenna):
            log.warning(
                "reader.zone_mismatch",
                device=self.device_id,
                antenna=antenna,
                reported=str(zone_of(kind, index)),
                configured=str(zone),
            )
        return zone

    def _first(self, problem: str, antenna: int) -> bool:
        """True the first time ``problem`` is seen on ``antenna``."""
        key = (problem, antenna)
        if key in self._warned:
            return False
        self._warned.add(key)
        return True

    async def _on_edge(self, ts: datetime, event: TagArrivedEvent | TagDepartedEvent) -> None:
        zone = self._zone(event.antenna, event.zone_kind, event.zone_index)
        if zone is None:
            return
        try:
            uid = uid_from_bytes(event.uid)
        except UidError as exc:
            log.error("reader.bad_uid", device=self.device_id, error=str(exc))
            return
        if isinstance(event, TagArrivedEvent):
            edges = self.view.arrived(ts, zone, uid)
            rssi = {(zone, uid): event.rssi} if event.rssi != RSSI_NONE else {}
            sweep = self.arbiter.sweep(ts, edges, rssi, complete=False, sweep_id=event.sweep)
            await self._publish(sweep)
        else:
            await self._publish(
                self.arbiter.sweep(ts, self.view.departed(ts, zone, uid), complete=False)
            )

    async def _apply_snapshot(self, ts: datetime, snapshot: InventorySnapshot) -> None:
        listed: dict[Zone, frozenset[str] | None] = {}
        for entry in snapshot.entries:
            zone = self._zone(entry.antenna)
            if zone is None:
                continue
            if entry.status != AntennaCode.OK:
                listed[zone] = None
                continue
            try:
                listed[zone] = frozenset(uid_from_bytes(uid) for uid in entry.uids)
            except UidError as exc:
                log.error("reader.bad_uid", device=self.device_id, error=str(exc))
                listed[zone] = None
        before = (self.view.repaired_arrivals, self.view.repaired_departures)
        edges = self.view.snapshot(ts, listed)
        if (self.view.repaired_arrivals, self.view.repaired_departures) != before:
            log.warning(
                "reader.snapshot_repaired",
                device=self.device_id,
                edges=[f"{type(e).__name__} {e.zone}" for e in edges],
            )
        await self._publish(self.arbiter.sweep(ts, edges, complete=False))

    async def _on_antenna_fault(
        self, ts: datetime, event: AntennaFault, origin: Origin | None
    ) -> None:
        zone = self._zone(event.antenna)
        if zone is None:
            return
        if event.code == AntennaCode.OK:
            edges = self.view.antenna_ok(ts, zone)
            cleared = DeviceFaultCleared(ts, self.device_id, "ANTENNA_FAULT", event.antenna)
            await self._sink(replace(cleared, origin=origin))
        else:
            code = antenna_code_name(event.code)
            reason = f"antenna {event.antenna} ({zone}): {code}, value {event.value}"
            fault = DeviceFault(ts, self.device_id, "ANTENNA_FAULT", event.antenna, "error", reason)
            await self._sink(replace(fault, origin=origin))
            edges = self.view.antenna_fault(ts, zone, reason)
        await self._publish(self.arbiter.sweep(ts, edges, complete=False))

    async def _on_overflow(self, ts: datetime, event: ZoneOverflow, origin: Origin | None) -> None:
        zone = self._zone(event.antenna)
        if zone is None:
            return
        capacity = ZONE_CAPACITY.get(zone_code(zone)[0])
        if capacity is not None and event.count <= capacity:
            cleared = DeviceFaultCleared(ts, self.device_id, "ZONE_OVERFLOW", event.antenna)
            await self._sink(replace(cleared, origin=origin))
            return
        holds = f" (it holds {capacity})" if capacity is not None else ""
        detail = f"zone {zone}: {event.count} tags{holds}, antenna {event.antenna}"
        fault = DeviceFault(ts, self.device_id, "ZONE_OVERFLOW", event.antenna, "warn", detail)
        await self._sink(replace(fault, origin=origin))

    async def _publish(self, edges: list[PresenceEdge[Zone]]) -> None:
        for edge in edges:
            if isinstance(edge, Arrived):
                await self._sink(TagArrived(edge.ts, self.device_id, edge.zone, edge.uid))
            elif isinstance(edge, Departed):
                await self._sink(TagDeparted(edge.ts, self.device_id, edge.zone, edge.uid))
            elif isinstance(edge, ZoneStale):
                await self._set_zone_health(edge.ts, edge.zone, Health.STALE, edge.reason)
            elif isinstance(edge, ZoneFresh):
                await self._set_zone_health(edge.ts, edge.zone, Health.ONLINE, "antenna works")

    async def _set_zone_health(self, ts: datetime, zone: Zone, health: Health, detail: str) -> None:
        if self.zone_health.get(zone, Health.ONLINE) is health:
            return
        self.zone_health[zone] = health
        device = zone_device_id(self.device_id, zone)
        await self._sink(DeviceHealthChanged(ts, device, health, None, detail, "reader"))
