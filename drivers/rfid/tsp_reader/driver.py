"""The TSP/1 reference reader driver: ``tsp-reader`` (serial; ``tsp-reader-usb`` in :mod:`.usb`).

One :class:`TspReader` per configured reader, a TSP/1 device
(:class:`~drivers.tsp.driver.TspDriver`). Each connection identifies the reader, maps its
antennas to the configured zones (SET_ANTENNA_MAP), sets the scan and debounce (SET_SCAN),
reconciles the host's view with a SCAN_NOW snapshot and then heartbeats it; the supervision loop
(:mod:`drivers.supervisor`) reconnects. Reader events become the core's inputs:

- TAG_ARRIVED / TAG_DEPARTED → :class:`TagArrived` / :class:`TagDeparted` (a repeat of what the
  host already holds produces nothing);
- INVENTORY_SNAPSHOT → the edges the host missed (lost, garbled or dropped edge events);
- ANTENNA_FAULT → :class:`DeviceFault` ``ANTENNA_FAULT`` and the zone's health ``stale`` (device
  id ``READER-ZONE``, e.g. ``rfid-seat3``), with no departure invented; when the antenna works
  again, :class:`DeviceFaultCleared` and the zone ``online``;
- ZONE_OVERFLOW → :class:`DeviceFault` ``ZONE_OVERFLOW`` (detail: the zone and the count), and
  :class:`DeviceFaultCleared` when the zone holds no more than it should again;
- FAULT_RAISED / FAULT_CLEARED → :class:`DeviceFault` / :class:`DeviceFaultCleared` by name.

A reader that stops answering is ``stale`` and its silence changes nothing in the view. Events go
to the sink, and are acknowledged to the reader once the sink has taken them. What the events
mean is :mod:`.reporter`'s business; this module runs the connection.
"""

from __future__ import annotations

from typing import Any, ClassVar

import structlog

from controller.aio import utc_now
from controller.table.inputs import Health, Origin, Zone
from drivers.contract import READ, DeviceContext, DeviceStatus
from drivers.errors import DeviceUnavailableError
from drivers.rfid.tsp_reader.codes import MsgType, Report, ScanMode, zone_code
from drivers.rfid.tsp_reader.events import EVENTS, InventorySnapshot
from drivers.rfid.tsp_reader.messages import (
    AntennaAssignment,
    ReaderIdentity,
    ReaderStatus,
    ReadTagMemory,
    SetAntennaMap,
    SetScan,
    TagMemory,
)
from drivers.rfid.tsp_reader.options import ReaderOptions, TspReaderOptions
from drivers.rfid.tsp_reader.reporter import Reporter, zone_device_id
from drivers.serial_transport import SerialTransport
from drivers.transport import ByteTransport, DataCallback, LostCallback
from drivers.tsp.client import LinkClient
from drivers.tsp.common import Result
from drivers.tsp.driver import TspDriver
from drivers.tsp.link import EventReceived

log = structlog.get_logger("tablectl.rfid")


class TspReader(TspDriver[ReaderIdentity, ReaderStatus]):
    """Drives one TSP/1 reader on a serial port and feeds its events to the core."""

    options_model: ClassVar[type[ReaderOptions]] = TspReaderOptions
    kind = "reader"
    capabilities = frozenset({READ})
    options: ReaderOptions

    def __init__(
        self, device_id: str, options: ReaderOptions, context: DeviceContext | None = None
    ) -> None:
        super().__init__(device_id, options, context, ReaderIdentity.decode, ReaderStatus.decode)
        self.zones = options.zone_map()
        self._antennas = {zone: antenna for antenna, zone in self.zones.items()}
        self.reporter = Reporter(device_id, self.zones, self._emit, utc_now)
        self.view = self.reporter.view

    # ------------------------------------------------------------------ public state

    def health(self) -> dict[str, Health | None]:
        """The reader's health, and that of every zone whose health ever changed."""
        health = self.reporter.zone_health
        zones = {zone_device_id(self.device_id, z): h for z, h in health.items()}
        return {self.device_id: self.supervisor.health if self.supervisor else None, **zones}

    def present(self, zone: Zone | str) -> frozenset[str]:
        """The tags the core was told are in a zone now (crosstalk arbitrated)."""
        return self.reporter.arbiter.present(Zone.parse(zone) if isinstance(zone, str) else zone)

    # ------------------------------------------------------------------ the device contract

    async def query(self) -> DeviceStatus:
        """Online when the reader is; the detail lists the zones whose health changed."""
        health = self.health()
        online = health.get(self.device_id) is Health.ONLINE
        detail = ", ".join(f"{d} {h.value if h else 'unknown'}" for d, h in health.items())
        return DeviceStatus(online, detail=detail)

    def describe(self) -> dict[str, Any]:
        """Identity as the reader reported it, and its antennas' zones."""
        identity = self.identity
        zones = {str(antenna): str(zone) for antenna, zone in sorted(self.zones.items())}
        if identity is None:
            return {"model": None, "approved": True, "zones": zones}
        return {**identity.describe(), "approved": True, "zones": zones}

    # ------------------------------------------------------------------ commands

    async def scan_now(self) -> dict[Zone, frozenset[str]]:
        """SCAN_NOW: reconcile the view with the reader's now; return every zone's tags."""
        snapshot = InventorySnapshot.decode(await self._call(MsgType.SCAN_NOW))
        await self.reporter.snapshot(snapshot)
        return {zone: self.reporter.arbiter.present(zone) for zone in self._antennas}

    async def read_tag_memory(self, zone: Zone | str, uid: str, block: int, count: int) -> bytes:
        """READ_TAG_MEMORY of a tag lying in a zone (``count`` blocks from ``block``)."""
        where = Zone.parse(zone) if isinstance(zone, str) else zone
        antenna = self._antennas.get(where)
        if antenna is None:
            raise ValueError(f"no antenna of {self.device_id} covers {where}")
        request = ReadTagMemory(antenna, bytes.fromhex(uid), block, count)
        return TagMemory.decode(await self._call(MsgType.READ_TAG_MEMORY, request.encode())).data

    # ------------------------------------------------------------------ one connection

    async def _open(self, on_data: DataCallback, on_lost: LostCallback) -> ByteTransport:
        """Open the transport (the serial port; the USB subclass claims its device)."""
        assert isinstance(self.options, TspReaderOptions)
        return await SerialTransport.open(
            self.options.port, on_data, on_lost, self.options.baudrate
        )

    async def _set_up(self, client: LinkClient, identity: ReaderIdentity) -> None:
        """Map the antennas to their zones (SET_ANTENNA_MAP), set scan and debounce (SET_SCAN)."""
        options = self.options
        assignments = []
        for antenna in options.antennas:
            kind, index = zone_code(antenna.parsed_zone)
            assignments.append(AntennaAssignment(antenna.antenna, kind, index, antenna.dwell_ms))
        mapping = SetAntennaMap(tuple(assignments)).encode()
        self._check(await self._request(client, MsgType.SET_ANTENNA_MAP, mapping))
        # Snapshots stay on even without periodic ones: a reader that had to drop an edge
        # sends one to make up for it.
        report = Report.EDGES | Report.SNAPSHOTS
        scan = SetScan(
            ScanMode.CONTINUOUS,
            options.scan_period_ms,
            options.arrive_n,
            options.depart_n,
            report,
            options.snapshot_ms,
        )
        self._check(await self._request(client, MsgType.SET_SCAN, scan.encode()))

    async def _go_online(self, identity: ReaderIdentity) -> str:
        """Reconcile the view with a SCAN_NOW snapshot; the detail names the reader."""
        await self.scan_now()
        detail = (
            f"{identity.vendor} {identity.model} {identity.serial} "
            f"firmware {identity.fw_version}, {len(self.zones)} antennas"
        )
        log.info("reader.online", device=self.device_id, identity=detail)
        return detail

    @staticmethod
    def _check(payload: bytes) -> None:
        result = Result.decode(payload).value
        if result:
            raise DeviceUnavailableError(f"the reader did not apply its configuration ({result})")

    # ------------------------------------------------------------------ events

    async def _on_event(self, item: EventReceived) -> None:
        event = self._decode_event(EVENTS, item)
        if event is None:
            return  # the next snapshot repairs whatever it said
        await self.reporter.event(event, Origin(item.boot_id, item.frame.seq))
