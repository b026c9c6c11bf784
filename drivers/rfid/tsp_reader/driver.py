"""The TSP/1 reference reader driver: ``tsp-reader`` (serial; ``tsp-reader-usb`` in :mod:`.usb`).

One :class:`TspReader` per configured reader. :meth:`TspReader.run` keeps it connected (see
:mod:`drivers.supervisor`); each connection identifies the reader, maps its antennas to the
configured zones (SET_ANTENNA_MAP), sets the scan and debounce (SET_SCAN), reconciles the host's
view with a SCAN_NOW snapshot and then heartbeats it. Reader events become the core's inputs:

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
to the ``sink`` (acknowledged to the reader once the sink has taken them); without a sink they
queue for :meth:`TspReader.events`, the same shape as the PN532 driver. What the events mean is
:mod:`.reporter`'s business; this module runs the session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any, ClassVar, Self

import structlog

from controller.table.inputs import DeviceInput, DeviceRebooted, Health, Zone
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
from drivers.supervisor import Backoff, Clock, InputSink, Supervisor, utc_now
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


class TspReader:
    """Drives one TSP/1 reader on a serial port and feeds its events to the core."""

    OPTIONS: ClassVar[type[ReaderOptions]] = TspReaderOptions

    def __init__(
        self,
        device_id: str,
        options: ReaderOptions,
        sink: InputSink | None = None,
        *,
        clock: Clock = utc_now,
    ) -> None:
        self.device_id = device_id
        self.options = options
        self._clock = clock
        self._queue: asyncio.Queue[DeviceInput] = asyncio.Queue()
        self._own_queue = sink is None
        self._sink: InputSink = sink or self._enqueue
        self.zones = options.zone_map()
        self._antennas = {zone: antenna for antenna, zone in self.zones.items()}
        timers = LinkTimers(options.response_timeout, options.max_retransmits)
        self._link = HostLink(timers, boot_id_of)
        self.supervisor = Supervisor(
            device_id,
            self._session,
            self._sink,
            backoff=Backoff(options.backoff_base, options.backoff_cap),
            fail_after=options.fail_after,
            clock=clock,
            kind="reader",
        )
        self.reporter = Reporter(device_id, self.zones, self._sink, clock)
        self.view = self.reporter.view
        self.identity: ReaderIdentity | None = None
        self.last_status: ReaderStatus | None = None
        self.bad_events = 0
        self._client: LinkClient | None = None
        self._link_client: LinkClient | None = None
        self._configured = asyncio.Event()
        self._restart = asyncio.Event()
        self._session_boot: int | None = None
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def from_options(cls, device_id: str, options: Mapping[str, Any], **kwargs: Any) -> Self:
        """Build from a table config's options (raises pydantic's ValidationError if wrong)."""
        return cls(device_id, cls.OPTIONS.model_validate(dict(options)), **kwargs)

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
        return {self.device_id: self.supervisor.health, **zones}

    def present(self, zone: Zone | str) -> frozenset[str]:
        """The tags the host believes are in a zone now."""
        return self.view.present(Zone.parse(zone) if isinstance(zone, str) else zone)

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Keep the reader connected until cancelled."""
        await self.supervisor.run()

    async def start(self) -> None:
        """Run in a background task."""
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"reader {self.device_id}")

    async def stop(self) -> None:
        """Stop the background task and close the transport."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def wait_online(self, timeout: float | None = None) -> None:
        """Wait until the reader is online and configured."""
        async with asyncio.timeout(timeout):
            await self.supervisor.wait_for(Health.ONLINE)
            await self._configured.wait()

    # ------------------------------------------------------------------ output (no sink)

    async def _enqueue(self, item: DeviceInput) -> None:
        self._queue.put_nowait(item)

    def _require_queue(self) -> None:
        if not self._own_queue:
            raise RuntimeError("this reader hands its events to a sink")

    async def events(self) -> AsyncIterator[DeviceInput]:
        """Every device input, in order (when built without a sink)."""
        self._require_queue()
        while True:
            yield await self._queue.get()

    async def next_event(self) -> DeviceInput:
        """The next device input (when built without a sink)."""
        self._require_queue()
        return await self._queue.get()

    def pending_events(self) -> list[DeviceInput]:
        """The inputs produced and not yet taken, without waiting."""
        self._require_queue()
        out = []
        while not self._queue.empty():
            out.append(self._queue.get_nowait())
        return out

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
            health = self.supervisor.health
            state = health.value if health else "not connected"
            raise DeviceNotReadyError(f"{self.device_id} is not available ({state})")
        return await call(client, msg_type, payload, msg_type.name)

    # ------------------------------------------------------------------ session

    async def _open(self, on_data: DataCallback, on_lost: LostCallback) -> ByteTransport:
        """Open the transport (the serial port; the USB subclass claims its device)."""
        assert isinstance(self.options, TspReaderOptions)
        return await SerialTransport.open(
            self.options.port, on_data, on_lost, self.options.baudrate
        )

    async def _session(self, supervisor: Supervisor) -> None:
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
            await supervisor.set_health(Health.ONLINE, detail=detail)
            await serve(
                client,
                supervisor,
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
        await self._sink(DeviceRebooted(self._clock(), self.device_id, change.boot_id))
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
        await self.reporter.event(event)
