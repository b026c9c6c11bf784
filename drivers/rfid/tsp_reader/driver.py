"""The TSP/1 reference reader driver: ``tsp-reader`` (serial; ``tsp-reader-usb`` in :mod:`.usb`).

One :class:`TspReader` per configured reader, a :class:`~drivers.contract.Device`. Each
connection (:meth:`TspReader.run`) identifies the reader, maps its antennas to the configured
zones (SET_ANTENNA_MAP), sets the scan and debounce (SET_SCAN), reconciles the host's view with a
SCAN_NOW snapshot and then heartbeats it; the supervision loop (:mod:`drivers.supervisor`)
reconnects. Reader events become the core's inputs:

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

import asyncio
import contextlib
from typing import Any, ClassVar

import structlog

from controller.table.inputs import (
    DeviceHealthChanged,
    DeviceInput,
    DeviceRebooted,
    Health,
    Origin,
    Zone,
)
from drivers.contract import READ, Device, DeviceContext, DeviceStatus, InputSink
from drivers.errors import DeviceNotReadyError, DeviceUnavailableError
from drivers.rfid.tsp_reader.codes import MsgType, Report, ScanMode, zone_code
from drivers.rfid.tsp_reader.events import InventorySnapshot, decode_event
from drivers.rfid.tsp_reader.messages import (
    AntennaAssignment,
    ReaderIdentity,
    ReaderStatus,
    ReadTagMemory,
    Result,
    SetAntennaMap,
    SetScan,
    TagMemory,
)
from drivers.rfid.tsp_reader.options import ReaderOptions, TspReaderOptions
from drivers.rfid.tsp_reader.reporter import Reporter, zone_device_id
from drivers.serial_transport import SerialTransport
from drivers.supervisor import RestartPolicy, utc_now
from drivers.transport import ByteTransport, DataCallback, LostCallback
from drivers.tsp.client import LinkClient
from drivers.tsp.common import boot_id_reader
from drivers.tsp.frame import Frame
from drivers.tsp.heartbeat import serve
from drivers.tsp.link import EventReceived, HostLink, LinkTimers, SessionChanged
from drivers.tsp.payload import PayloadError
from drivers.tsp.session import EventPump, call
from drivers.tsp.stats import LinkStats

log = structlog.get_logger("tablectl.rfid")


#: The boot id in the reader's IDENTIFY, GET_STATUS and PING responses.
boot_id_of = boot_id_reader(
    MsgType.IDENTIFY, (MsgType.GET_STATUS, MsgType.PING), ReaderIdentity.decode, ReaderStatus.decode
)


class TspReader(Device):
    """Drives one TSP/1 reader on a serial port and feeds its events to the core."""

    options_model: ClassVar[type[ReaderOptions]] = TspReaderOptions
    kind = "reader"
    capabilities = frozenset({READ})
    reports_health = True
    options: ReaderOptions

    def __init__(
        self, device_id: str, options: ReaderOptions, context: DeviceContext | None = None
    ) -> None:
        super().__init__(device_id, options, context)
        self.zones = options.zone_map()
        self._antennas = {zone: antenna for antenna, zone in self.zones.items()}
        timers = LinkTimers(options.response_timeout, options.max_retransmits)
        self._link = HostLink(timers, boot_id_of)
        self._sink: InputSink | None = None
        self.reporter = Reporter(device_id, self.zones, self._emit, utc_now)
        self.view = self.reporter.view
        self.identity: ReaderIdentity | None = None
        self.last_status: ReaderStatus | None = None
        self.bad_events = 0
        self._client: LinkClient | None = None
        self._link_client: LinkClient | None = None
        self._configured = asyncio.Event()
        self._restart = asyncio.Event()
        self._session_boot: int | None = None

    def restart_policy(self, default: RestartPolicy) -> RestartPolicy:
        """The backoff and failure count of the options."""
        o = self.options
        return RestartPolicy(o.backoff_base, o.backoff_cap, o.fail_after, stable_after=10.0)

    # ------------------------------------------------------------------ public state

    @property
    def stats(self) -> LinkStats:
        """Link statistics: CRC errors, NAKs, retransmits, round-trip times."""
        return self._link.stats

    @property
    def boot_id(self) -> int | None:
        """The reader's current boot id."""
        return self._link.boot_id

    def health(self) -> dict[str, Health | None]:
        """The reader's health, and that of every zone whose health ever changed."""
        health = self.reporter.zone_health
        zones = {zone_device_id(self.device_id, z): h for z, h in health.items()}
        return {self.device_id: self.supervisor.health if self.supervisor else None, **zones}

    def present(self, zone: Zone | str) -> frozenset[str]:
        """The tags the host believes are in a zone now."""
        return self.view.present(Zone.parse(zone) if isinstance(zone, str) else zone)

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
        return {
            "vendor": identity.vendor,
            "model": identity.model,
            "serial": identity.serial,
            "firmware": identity.fw_version,
            "approved": True,
            "zones": zones,
        }

    # ------------------------------------------------------------------ commands

    async def get_status(self) -> ReaderStatus:
        """GET_STATUS."""
        status = ReaderStatus.decode(await self._call(MsgType.GET_STATUS))
        self.last_status = status
        return status

    async def scan_now(self) -> dict[Zone, frozenset[str]]:
        """SCAN_NOW: reconcile the view with the reader's now; return every zone's tags."""
        snapshot = InventorySnapshot.decode(await self._call(MsgType.SCAN_NOW))
        await self.reporter.snapshot(snapshot)
        return {zone: self.view.present(zone) for zone in self._antennas}

    async def read_tag_memory(self, zone: Zone | str, uid: str, block: int, count: int) -> bytes:
        """READ_TAG_MEMORY of a tag lying in a zone (``count`` blocks from ``block``)."""
        where = Zone.parse(zone) if isinstance(zone, str) else zone
        antenna = self._antennas.get(where)
        if antenna is None:
            raise ValueError(f"no antenna of {self.device_id} covers {where}")
        request = ReadTagMemory(antenna, bytes.fromhex(uid), block, count)
        return TagMemory.decode(await self._call(MsgType.READ_TAG_MEMORY, request.encode())).data

    async def _call(self, msg_type: MsgType, payload: bytes = b"") -> bytes:
        client = self._client
        if client is None or not self._configured.is_set():
            health = self.supervisor.health if self.supervisor else None
            state = health.value if health else "not connected"
            raise DeviceNotReadyError(f"{self.device_id} is not available ({state})")
        return await call(client, msg_type, payload, msg_type.name)

    # ------------------------------------------------------------------ one connection

    async def _open(self, on_data: DataCallback, on_lost: LostCallback) -> ByteTransport:
        """Open the transport (the serial port; the USB subclass claims its device)."""
        assert isinstance(self.options, TspReaderOptions)
        return await SerialTransport.open(
            self.options.port, on_data, on_lost, self.options.baudrate
        )

    async def run(self, sink: InputSink) -> None:
        """Connect, identify, configure, reconcile, then heartbeat until the connection ends."""
        self._sink = sink
        # One client for the driver's lifetime: the link's de-duplication state survives a
        # reconnect, so an event retransmitted after a replug is recognised.
        if self._link_client is None:
            self._link_client = LinkClient(self._link)
        client = self._link_client
        self._session_boot = None
        transport = await self._open(client.data_received, client.connection_lost)
        client.attach(transport)
        pump = EventPump(client, self._on_event, self._on_session)
        consumer = asyncio.create_task(pump.run(), name=f"{self.device_id}:events")
        self._restart.clear()
        try:
            identity = ReaderIdentity.decode(await call(client, MsgType.IDENTIFY, name="IDENTIFY"))
            self.identity = identity
            self._session_boot = identity.boot_id
            await self._configure(client)
            self._client = client
            self._configured.set()
            snapshot = await call(client, MsgType.SCAN_NOW, name="SCAN_NOW")
            await self.reporter.snapshot(InventorySnapshot.decode(snapshot))
            detail = (
                f"{identity.vendor} {identity.model} {identity.serial} "
                f"firmware {identity.fw_version}, {len(self.zones)} antennas"
            )
            log.info("reader.online", device=self.device_id, identity=detail)
            await self._report(Health.ONLINE, detail)
            await serve(
                client,
                self._report,
                consumer,
                name=self.device_id,
                interval=self.options.heartbeat_interval,
                max_failures=self.options.heartbeat_failures,
                restart=self._restart,
                on_response=self._on_ping,
            )
        finally:
            self._client = None
            self._configured.clear()
            consumer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await consumer
            await pump.finish()
            transport.close()
            await transport.wait_closed()
            client.detach()

    async def _emit(self, item: DeviceInput) -> None:
        assert self._sink is not None, "inputs are made only while run() is connected"
        await self._sink(item)

    async def _report(self, health: Health, detail: str = "") -> None:
        await self._emit(
            DeviceHealthChanged(utc_now(), self.device_id, health, None, detail, self.kind)
        )

    async def _configure(self, client: LinkClient) -> None:
        options = self.options
        assignments = []
        for antenna in options.antennas:
            kind, index = zone_code(antenna.parsed_zone)
            assignments.append(AntennaAssignment(antenna.antenna, kind, index, antenna.dwell_ms))
        mapping = SetAntennaMap(tuple(assignments)).encode()
        self._check(await call(client, MsgType.SET_ANTENNA_MAP, mapping, "SET_ANTENNA_MAP"))
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
        self._check(await call(client, MsgType.SET_SCAN, scan.encode(), "SET_SCAN"))

    @staticmethod
    def _check(payload: bytes) -> None:
        result = Result.decode(payload).value
        if result:
            raise DeviceUnavailableError(f"the reader did not apply its configuration ({result})")

    def _on_ping(self, frame: Frame) -> None:
        if frame.type == MsgType.PING:
            with contextlib.suppress(PayloadError):
                self.last_status = ReaderStatus.decode(frame.payload)

    async def _on_session(self, change: SessionChanged) -> None:
        if change.previous is None:
            return
        log.warning("reader.rebooted", device=self.device_id, boot_id=change.boot_id)
        await self._emit(DeviceRebooted(utc_now(), self.device_id, change.boot_id))
        if self._session_boot is not None and change.boot_id != self._session_boot:
            # The reader forgot its antenna map and scan settings: configure it again.
            self._restart.set()

    # ------------------------------------------------------------------ events

    async def _on_event(self, item: EventReceived) -> None:
        try:
            event = decode_event(item.frame.type, item.frame.payload)
        except PayloadError as exc:
            # Acknowledged and dropped: the next snapshot repairs whatever it said.
            self.bad_events += 1
            kind = item.frame.type
            log.error("reader.bad_event", device=self.device_id, type=kind, error=str(exc))
            return
        await self.reporter.event(event, Origin(item.boot_id, item.frame.seq))
