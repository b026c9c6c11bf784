"""The ``feig-isc`` driver: a FEIG ID ISC reader, ISO/IEC 15693 tags on multiplexed antennas.

One :class:`FeigReader` per reader, one connection per :meth:`run` (the supervision loop of
:mod:`drivers.supervisor` reconnects with backoff). A connection

1. opens the serial port (pyserial; a CDC-ACM USB reader is a tty too) or, with ``vid``/``pid``,
   the USB device's bulk endpoints (pyusb; ``backend = "simulated"``: the simulators' fake bus);
2. reads the software version (``[0x65]``), resets the RF (``[0x69]``) and reports the reader
   ``online``;
3. sweeps every ``scan_period_ms``: one ISO Host Command Inventory (``[0xB0][0x01]``) over every
   mapped antenna (ANT_SEL), asking for the next page (MODE bit MORE) while the answer's status
   is 0x94. Each antenna's tags go to the presence tracker as that zone's poll, their RSSI to
   the crosstalk :class:`~drivers.rfid.arbiter.Arbiter`, whose edges reach the core;
4. on status 0x84 (RF warning) asks the multiplexer diagnostic (``[0x6E]`` mode 0x04) which
   antennas are broken: ``ANTENNA_FAULT`` and the zone ``stale`` at once, nothing departs; when
   the antenna works again the fault clears and the zone reconciles.

A sweep that fails (no answer, a bad CRC, an error status) is no news: after ``stale_after`` in
a row the reader is ``stale``, after ``reset_after`` its RF is reset. A lost port ends the
connection (``reconnecting``); the first sweeps after reconnection reconcile the view.
"""

from __future__ import annotations

import asyncio
import importlib
from datetime import datetime
from typing import Any, ClassVar

import structlog

from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    Health,
    TagArrived,
    TagDeparted,
    Zone,
)
from controller.uids import UidError, uid_from_bytes
from drivers.contract import READ, Device, DeviceContext, DeviceStatus, InputSink
from drivers.errors import DeviceError, DeviceUnavailableError
from drivers.rfid.arbiter import Arbiter
from drivers.rfid.feig import protocol as p
from drivers.rfid.feig.link import FeigLink
from drivers.rfid.feig.options import FeigOptions
from drivers.rfid.presence import (
    Arrived,
    Departed,
    PresenceEdge,
    PresenceTracker,
    ZoneFresh,
    ZoneStale,
)
from drivers.rfid.tsp_reader.reporter import zone_device_id
from drivers.serial_transport import SerialTransport
from drivers.supervisor import RestartPolicy, utc_now
from drivers.transport import ByteTransport, DataCallback, LostCallback

log = structlog.get_logger("tablectl.rfid")

MAX_PAGES = 64
"""More pages than 32 antennas' worth of tags can fill: a reader that never stops is broken."""


class ReaderStatusError(DeviceError):
    """The reader answered with an error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class FeigReader(Device):
    """One ID ISC reader; its antennas' zones, arbitrated, reported through one input stream."""

    options_model: ClassVar[type[FeigOptions]] = FeigOptions
    kind = "reader"
    capabilities = frozenset({READ})
    reports_health = True
    options: FeigOptions

    def __init__(
        self,
        device_id: str,
        options: FeigOptions,
        context: DeviceContext | None = None,
        *,
        usb_backend: Any = None,
    ) -> None:
        super().__init__(device_id, options, context)
        self.usb_backend = usb_backend
        """The pyusb backend of a USB reader (tests pass a simulated bus; else the options')."""
        self.zones = options.zone_map()
        self.tracker: PresenceTracker[Zone] = PresenceTracker(options.debounce)
        self.arbiter: Arbiter[Zone] = Arbiter(
            margin=options.crosstalk_margin,
            switch_after=options.crosstalk_switch_after,
            settle=options.crosstalk_settle,
        )
        self.version: p.SoftwareVersion | None = None
        self.link: FeigLink | None = None
        self.zone_health: dict[Zone, Health] = {}
        self.faulty: dict[int, int] = {}
        """Broken antennas and their multiplexer state (OPEN, SHORT)."""
        self.sweeps = 0
        self.failed_sweeps = 0
        self.pages = 0
        self.rf_resets = 0
        self._sink: InputSink | None = None
        self._failures = 0
        self._warned: set[int] = set()

    # ------------------------------------------------------------------ the device contract

    def restart_policy(self, default: RestartPolicy) -> RestartPolicy:
        """Reconnect with the reader's own backoff; a reader is never given up on."""
        o = self.options
        return RestartPolicy(o.reconnect_min, o.reconnect_max, fail_after=None, stable_after=10.0)

    async def query(self) -> DeviceStatus:
        """Online when the reader is; the detail names the zones that are not."""
        health = self.supervisor.health if self.supervisor else None
        zones = ", ".join(
            f"{zone_device_id(self.device_id, z)} {h.value}" for z, h in self.zone_health.items()
        )
        return DeviceStatus(health is Health.ONLINE, detail=zones)

    def describe(self) -> dict[str, Any]:
        """The reader's version and its antennas' zones."""
        zones = {str(antenna): str(zone) for antenna, zone in sorted(self.zones.items())}
        return {
            "model": "FEIG ID ISC",
            "firmware": str(self.version) if self.version else None,
            "approved": True,
            "zones": zones,
        }

    def present(self, zone: Zone | str) -> frozenset[str]:
        """The tags the core was told are in a zone."""
        return self.arbiter.present(Zone.parse(zone) if isinstance(zone, str) else zone)

    def health(self) -> dict[str, Health | None]:
        """The reader's health, and that of every zone whose health ever changed."""
        zones = {zone_device_id(self.device_id, z): h for z, h in self.zone_health.items()}
        return {self.device_id: self.supervisor.health if self.supervisor else None, **zones}

    async def reset(self) -> None:
        """Reset the reader's RF (``[0x69]``): every tag is inventoried afresh."""
        if self.link is None:
            raise DeviceUnavailableError(f"{self.device_id} is not connected")
        await self._call(self.link, p.encode_request(p.CMD_RF_RESET, b"", self.options.address))
        self.rf_resets += 1

    # ------------------------------------------------------------------ one connection

    async def run(self, sink: InputSink) -> None:
        """Open the reader, set it up and sweep until the connection ends."""
        self._sink = sink
        link = FeigLink(timeout=self.options.response_timeout)
        transport = await self._open(link.data_received, link.connection_lost)
        link.write = transport.write
        self.link = link
        try:
            await self._set_up(link)
            await self._sweep_forever(link)
        finally:
            self.link = None
            transport.close()
            # However the connection ended, the tags stay where they were, unseen.
            ts = utc_now()
            for zone in self.zones.values():
                self.tracker.lost(ts, zone, "the reader is gone")

    async def _open(self, on_data: DataCallback, on_lost: LostCallback) -> ByteTransport:
        o = self.options
        if o.port is not None:
            return await SerialTransport.open(o.port, on_data, on_lost, o.baudrate)
        # pyusb only for a USB reader; ``backend = "simulated"`` is the simulators' fake bus.
        usb = importlib.import_module("drivers.usb_transport")
        if self.usb_backend is None:
            self.usb_backend = usb.backend_named(o.backend, o)
        assert o.vid is not None
        assert o.pid is not None
        match = usb.UsbMatch(o.vid, o.pid, o.serial_number, o.interface)
        transport: ByteTransport = await usb.UsbBulkTransport.open(
            match, on_data, on_lost, backend=self.usb_backend
        )
        return transport

    async def _set_up(self, link: FeigLink) -> None:
        address = self.options.address
        answer = await self._call(link, p.encode_request(p.CMD_SOFTWARE_VERSION, b"", address))
        self.version = p.SoftwareVersion.decode(answer.data)
        await self._call(link, p.encode_request(p.CMD_RF_RESET, b"", address))
        self.rf_resets += 1
        where = self.options.port or f"USB {self.options.vid:04x}:{self.options.pid:04x}"
        detail = f"{self.version} on {where}, {len(self.zones)} antennas"
        log.info("reader.online", device=self.device_id, identity=detail)
        await self._health(utc_now(), Health.ONLINE, detail)

    async def _sweep_forever(self, link: FeigLink) -> None:
        loop = asyncio.get_running_loop()
        period = self.options.scan_period_ms / 1000
        while True:
            started = loop.time()
            await self.sweep(link)
            await asyncio.sleep(max(0.0, period - (loop.time() - started)))

    # ------------------------------------------------------------------ one sweep

    async def sweep(self, link: FeigLink) -> None:
        """One inventory of every mapped antenna; its edges go to the sink."""
        try:
            records, warning = await self._inventory(link)
            if warning or self.faulty:
                await self._antenna_states(link, warning)
        except DeviceUnavailableError:
            raise
        except ReaderStatusError as exc:
            await self._failed(link, await self._diagnosed(link, exc))
            return
        except DeviceError as exc:
            await self._failed(link, str(exc))
            return
        self.sweeps += 1
        ts = utc_now()
        heard: dict[int, set[str]] = {antenna: set() for antenna in self.zones}
        rssi: dict[tuple[Zone, str], int] = {}
        for record in records:
            zone = self.zones.get(record.antenna)
            if zone is None:
                self._unmapped(record.antenna)
                continue
            try:
                uid = uid_from_bytes(record.uid, lsb_first=True)
            except UidError as exc:
                log.error("reader.bad_uid", device=self.device_id, error=str(exc))
                continue
            heard[record.antenna].add(uid)
            rssi[(zone, uid)] = max(record.rssi, rssi.get((zone, uid), 0))
        edges: list[PresenceEdge[Zone]] = []
        for antenna, zone in self.zones.items():
            if antenna in self.faulty:
                edges += self.tracker.lost(ts, zone, self._fault_detail(antenna))
            else:
                edges += self.tracker.seen(ts, zone, heard[antenna])
        if self._failures:
            self._failures = 0
            await self._health(ts, Health.ONLINE, "sweeps succeed again")
        await self._publish(self.arbiter.sweep(ts, edges, rssi))

    async def _inventory(self, link: FeigLink) -> tuple[list[p.TagRecord], bool]:
        """Every data set of one inventory, page by page; and whether it warned (0x84)."""
        antennas, address = sorted(self.zones), self.options.address
        frame = await self._call(
            link, p.inventory_request(antennas, address=address), inventory=True
        )
        records: list[p.TagRecord] = []
        warning = False
        for _ in range(MAX_PAGES):
            records += p.decode_inventory_data(frame.data)
            warning |= frame.status == p.Status.RF_WARNING
            if frame.status != p.Status.MORE_DATA:
                return records, warning
            self.pages += 1
            more = p.inventory_request(antennas, more=True, address=address)
            frame = await self._call(link, more, inventory=True)
        raise p.ProtocolError(f"the reader sent more than {MAX_PAGES} pages of one inventory")

    async def _call(self, link: FeigLink, request: bytes, *, inventory: bool = False) -> p.Frame:
        frame = await link.call(request)
        ok = {p.Status.OK}
        if inventory:
            ok |= {p.Status.NO_TRANSPONDER, p.Status.RF_WARNING, p.Status.MORE_DATA}
        if frame.status not in ok:
            status = frame.status or 0
            raise ReaderStatusError(
                f"0x{frame.command:02x} answered {p.status_name(status)}", status
            )
        return frame

    async def _diagnosed(self, link: FeigLink, exc: ReaderStatusError) -> str:
        """Why the reader refused: its own diagnostic (``[0x6E]`` mode 0x01) says, if it can."""
        if exc.status != p.Status.RF_COMMUNICATION_ERROR:
            return str(exc)
        try:
            request = p.diagnostic_request(p.DIAG_GENERAL, self.options.address)
            general = p.GeneralDiagnostic.decode((await self._call(link, request)).data)
        except DeviceUnavailableError:
            raise
        except DeviceError:
            return str(exc)
        problems = general.problems()
        return f"{exc}: RF front end: {', '.join(problems)}" if problems else str(exc)

    async def _antenna_states(self, link: FeigLink, warning: bool) -> None:
        """Ask the multiplexer which antennas are broken; report what changed."""
        states: dict[int, int] = {}
        if warning:
            request = p.diagnostic_request(p.DIAG_ANTENNAS, self.options.address)
            states = p.decode_antenna_diagnostic((await self._call(link, request)).data)
        ts = utc_now()
        for antenna in sorted(self.zones):
            state = states.get(antenna, p.AntennaState.OK)
            was = self.faulty.get(antenna)
            if state not in (p.AntennaState.OK, was):
                self.faulty[antenna] = state
                assert self._sink is not None
                detail = self._fault_detail(antenna)
                fault = DeviceFault(ts, self.device_id, "ANTENNA_FAULT", antenna, "error", detail)
                await self._sink(fault)
                await self._zone_health(ts, self.zones[antenna], Health.STALE, detail)
            elif state == p.AntennaState.OK and was is not None:
                del self.faulty[antenna]
                assert self._sink is not None
                await self._sink(DeviceFaultCleared(ts, self.device_id, "ANTENNA_FAULT", antenna))

    def _fault_detail(self, antenna: int) -> str:
        state = self.faulty.get(antenna, p.AntennaState.OK)
        name = p.AntennaState(state).name if state in p.AntennaState._value2member_map_ else state
        return f"antenna {antenna} ({self.zones[antenna]}): {name}"

    async def _failed(self, link: FeigLink, reason: str) -> None:
        self.failed_sweeps += 1
        self._failures += 1
        ts = utc_now()
        edges: list[PresenceEdge[Zone]] = []
        for zone in self.zones.values():
            edges += self.tracker.failed(ts, zone, reason)
        if self._failures == self.options.stale_after:
            detail = f"{self._failures} sweeps failed in a row: {reason}"
            await self._health(ts, Health.STALE, detail)
        await self._publish(self.arbiter.sweep(ts, edges))
        if self._failures % self.options.reset_after == 0:
            try:
                await self.reset()
            except DeviceUnavailableError:
                raise
            except DeviceError as exc:
                log.warning("reader.reset_failed", device=self.device_id, error=str(exc))

    def _unmapped(self, antenna: int) -> None:
        if antenna not in self._warned:
            self._warned.add(antenna)
            log.warning(
                "reader.unmapped_antenna",
                device=self.device_id,
                antenna=antenna,
                detail="its reads are ignored: add it to this device's antennas in the config",
            )

    # ------------------------------------------------------------------ reporting

    async def _publish(self, edges: list[PresenceEdge[Zone]]) -> None:
        assert self._sink is not None, "sweeps run only inside run()"
        for edge in edges:
            if isinstance(edge, Arrived):
                await self._sink(TagArrived(edge.ts, self.device_id, edge.zone, edge.uid))
            elif isinstance(edge, Departed):
                await self._sink(TagDeparted(edge.ts, self.device_id, edge.zone, edge.uid))
            elif isinstance(edge, ZoneFresh):
                await self._zone_health(edge.ts, edge.zone, Health.ONLINE, "antenna works")
            elif isinstance(edge, ZoneStale):
                pass  # a broken antenna reports its zone itself; a silent reader is the reader's

    async def _zone_health(self, ts: datetime, zone: Zone, health: Health, detail: str) -> None:
        if self.zone_health.get(zone, Health.ONLINE) is health:
            return
        self.zone_health[zone] = health
        device = zone_device_id(self.device_id, zone)
        assert self._sink is not None
        await self._sink(DeviceHealthChanged(ts, device, health, None, detail, "reader"))

    async def _health(self, ts: datetime, health: Health, detail: str) -> None:
        assert self._sink is not None
        await self._sink(DeviceHealthChanged(ts, self.device_id, health, None, detail, "reader"))
