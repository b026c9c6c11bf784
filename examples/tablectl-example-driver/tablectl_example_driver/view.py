"""What the host believes each zone holds, and the core inputs that keep it right.

The view is pure (the time comes in with each message) and outlives connections: when the
bridge comes back it sends ``present`` for each antenna, and the view turns the difference into
arrivals and departures. A tag lifted while the bridge was away departs then, never earlier: a
silent reader is not evidence that the cards left. An edge that repeats what the view already
holds (an ``arrive`` of a tag present, a ``fault`` already raised) produces nothing, so a bridge
that repeats itself after a reconnect does no harm.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceInput,
    TagArrived,
    TagDeparted,
    Zone,
)

from tablectl_example_driver.protocol import (
    Arrive,
    Clear,
    Depart,
    Fault,
    Hello,
    Message,
    Ping,
    Present,
)


class UnknownAntennaError(ValueError):
    """The bridge named an antenna the options do not map to a zone."""


class ZoneView:
    """Tags per zone and the reader's active faults, as the host last heard them."""

    def __init__(self, device_id: str, zones: Mapping[str, Zone]) -> None:
        self.device_id = device_id
        self.zones = dict(zones)
        self.present: dict[Zone, set[str]] = {zone: set() for zone in self.zones.values()}
        self.faults: set[str] = set()

    def apply(self, ts: datetime, message: Message) -> list[DeviceInput]:
        """The inputs a message causes (often none); raise UnknownAntennaError for a stranger."""
        match message:
            case Arrive(antenna, uid):
                return self._arrive(ts, self._zone(antenna), [uid])
            case Depart(antenna, uid):
                return self._depart(ts, self._zone(antenna), [uid])
            case Present(antenna, uids):
                zone = self._zone(antenna)
                gone = sorted(self.present[zone] - set(uids))
                return self._depart(ts, zone, gone) + self._arrive(ts, zone, list(uids))
            case Fault(code, detail):
                if code in self.faults:
                    return []
                self.faults.add(code)
                return [DeviceFault(ts, self.device_id, code, detail=detail)]
            case Clear(code):
                if code not in self.faults:
                    return []
                self.faults.discard(code)
                return [DeviceFaultCleared(ts, self.device_id, code)]
            case Hello() | Ping():
                return []

    def _zone(self, antenna: str) -> Zone:
        zone = self.zones.get(antenna)
        if zone is None:
            known = ", ".join(sorted(self.zones))
            raise UnknownAntennaError(f"antenna {antenna!r} is not mapped (mapped: {known})")
        return zone

    def _arrive(self, ts: datetime, zone: Zone, uids: list[str]) -> list[DeviceInput]:
        held = self.present[zone]
        new = [uid for uid in dict.fromkeys(uids) if uid not in held]
        held.update(new)
        return [TagArrived(ts, self.device_id, zone, uid) for uid in new]

    def _depart(self, ts: datetime, zone: Zone, uids: list[str]) -> list[DeviceInput]:
        held = self.present[zone]
        gone = [uid for uid in dict.fromkeys(uids) if uid in held]
        held.difference_update(gone)
        return [TagDeparted(ts, self.device_id, zone, uid) for uid in gone]
