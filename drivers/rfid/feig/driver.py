"""The ``feig-isc`` driver: FEIG ID ISC readers on one line, ISO 15693 tags on their antennas.

One :class:`FeigReader` per line (an RS-485 bus with one or more readers, or one USB reader),
one connection per :meth:`run` (the supervision loop of :mod:`drivers.supervisor` reconnects
with backoff). A connection

1. opens the serial port at the readers' baud rate and parity (pyserial; a CDC-ACM USB reader
   is a tty too) or, with ``vid``/``pid``, the USB device's bulk endpoints (pyusb;
   ``backend = "simulated"``: the simulators' fake bus);
2. for each reader (each COM-ADR the antennas name): asks ``[0x52]``, which a reader answers
   only at its own baud rate and parity (a reader that stays silent is looked for at FEIG's
   other rates, to say in one line where it is), reads its software version (``[0x65]``) and
   refuses a model not approved for the table (``config/approved-devices.toml``), reads its
   configuration (``[0x80]`` CFG1 in RAM and EEPROM, CFG4) and refuses, in one line, one set up
   other than the table needs (:mod:`drivers.rfid.feig.setup`), then resets its RF (``[0x69]``);
3. sweeps: for each reader in turn, one ISO Host Command Inventory (``[0xB0][0x01]``) over the
   mapped antennas due (ANT_SEL), asking for the next page (MODE bit MORE) while the status is
   0x94. Each antenna's tags go to the presence tracker as that zone's poll, their RSSI to the
   crosstalk :class:`~drivers.rfid.arbiter.Arbiter` (across the readers, as across antennas),
   whose edges reach the core. An antenna is read every sweep when its zone is one the hand can
   change (:meth:`expect`, from the daemon), when it has not settled (a tag heard there and not
   yet arrived, or arrived and not heard), when it is broken, or when no hint came; of the
   others, ``background_per_sweep`` in turn (FEIG's reader takes 163 ms an antenna: the fewer a
   sweep, the sooner a card put down where the hand expects one is seen, and every zone is still
   read every few sweeps);
4. on status 0x84 (RF warning) asks the reader's diagnostic (``[0x6E]`` mode 0x01, then mode
   0x05 for the multiplexer's channels) which antennas are broken: ``ANTENNA_FAULT`` and the
   zone ``stale`` at once, nothing departs; when the antenna works again the fault clears and
   the zone reconciles.

A reader whose inventory fails (no answer, a bad CRC, an error status) is no news for its
zones: after ``stale_after`` failures in a row they are ``stale`` (and the line, naming the
reader), after ``reset_after`` its RF is reset; the other readers sweep on. A lost port ends the
connection (``reconnecting``); the first sweeps after reconnection reconcile the view.
"""

from __future__ import annotations

import asyncio
import importlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

import structlog

from controller.aio import utc_now
from controller.table.inputs import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    Health,
    TagArrived,
    TagDeparted,
    Zone,
)
from drivers.contract import READ, Device, DeviceContext, DeviceStatus
from drivers.errors import (
    DeviceError,
    DeviceRejectedError,
    DeviceUnavailableError,
    LinkTimeoutError,
)
from drivers.rfid.arbiter import Arbiter
from drivers.rfid.feig import datasets as d
from drivers.rfid.feig import protocol as p
from drivers.rfid.feig import setup
from drivers.rfid.feig.approval import ReaderApprovals
from drivers.rfid.feig.frames import BROADCAST, Frame, ProtocolError, encode_request
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
from drivers.supervisor import InputSink, RestartPolicy
from drivers.transport import ByteTransport, DataCallback, LostCallback

log = structlog.get_logger("tablectl.rfid")

MAX_PAGES = 64
"""More pages than eight antennas' worth of tags can fill: a reader that never stops is broken."""
PARITY = {"none": "N", "even": "E", "odd": "O"}


class ReaderSilentError(DeviceError):
    """A reader does not answer ``[0x52]`` at the line's baud rate and parity."""

    def __init__(self, reader: LineReader) -> None:
        super().__init__(f"{reader.name()} does not answer")
        self.reader = reader


class ReaderStatusError(DeviceError):
    """A reader answered with an error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def fault_id(address: int, antenna: int) -> int:
    """An antenna's ``ANTENNA_FAULT`` id: COM-ADR × 100 + ANT_NR (103: reader 1, antenna 3)."""
    return address * 100 + antenna


@dataclass(slots=True)
class LineReader:
    """What the driver knows of one reader on the line."""

    address: int
    antennas: dict[int, Zone]
    """ANT_NR → zone."""
    version: p.SoftwareVersion | None = None
    response_time: float = 3.0
    """CFG1 TR-RESPONSE-TIME: the longest it works before answering."""
    failures: int = 0
    faulty: dict[int, p.ChannelState] = field(default_factory=dict)
    """Broken antennas, by ANT_NR, and how the multiplexer sees them."""

    def name(self) -> str:
        """``the reader at COM-ADR 1``."""
        return f"the reader at COM-ADR {self.address}"


class FeigReader(Device):
    """The readers on one line; their antennas' zones, arbitrated, in one input stream."""

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
        self.readers: dict[int, LineReader] = {}
        for (address, antenna), zone in self.zones.items():
            reader = self.readers.setdefault(address, LineReader(address, {}))
            reader.antennas[antenna] = zone
        self.approvals = ReaderApprovals.load(options.approved_devices)
        self.tracker: PresenceTracker[Zone] = PresenceTracker(options.debounce)
        self.arbiter: Arbiter[Zone] = Arbiter(
            margin=options.crosstalk_margin,
            switch_after=options.crosstalk_switch_after,
            settle=options.crosstalk_settle,
        )
        self.link: FeigLink | None = None
        self.zone_health: dict[Zone, Health] = {}
        self.sweeps = 0
        self.failed_sweeps = 0
        self.pages = 0
        self.rf_resets = 0
        self._sink: InputSink | None = None
        self._stale: set[int] = set()
        self._warned: set[tuple[int, int]] = set()
        self._expected: frozenset[Zone] | None = None
        self._heard: dict[Zone, set[str]] = {}
        self._turn = 0
        """Where the round of the zones the hand cannot change stands."""
        self.antenna_seconds: float | None = None
        """How long one antenna's inventory takes (a moving average of the sweeps')."""

    # ------------------------------------------------------------------ the device contract

    def restart_policy(self, default: RestartPolicy) -> RestartPolicy:
        """Reconnect with the readers' own backoff; a line is never given up on."""
        o = self.options
        return RestartPolicy(o.reconnect_min, o.reconnect_max, fail_after=None, stable_after=10.0)

    async def query(self) -> DeviceStatus:
        """Online when the line is; the detail names the zones that are not."""
        health = self.supervisor.health if self.supervisor else None
        zones = ", ".join(
            f"{zone_device_id(self.device_id, z)} {h.value}" for z, h in self.zone_health.items()
        )
        return DeviceStatus(health is Health.ONLINE, detail=zones)

    def describe(self) -> dict[str, Any]:
        """The readers' models and firmware and their antennas' zones."""
        readers = {
            str(reader.address): {
                "model": reader.version.reader_type if reader.version else None,
                "firmware": reader.version.firmware if reader.version else None,
                "antennas": {str(a): str(z) for a, z in sorted(reader.antennas.items())},
            }
            for reader in self.readers.values()
        }
        return {"model": "FEIG ID ISC", "approved": True, "readers": readers}

    def present(self, zone: Zone | str) -> frozenset[str]:
        """The tags the core was told are in a zone."""
        return self.arbiter.present(Zone.parse(zone) if isinstance(zone, str) else zone)

    def health(self) -> dict[str, Health | None]:
        """The line's health, and that of every zone whose health ever changed."""
        zones = {zone_device_id(self.device_id, z): h for z, h in self.zone_health.items()}
        return {self.device_id: self.supervisor.health if self.supervisor else None, **zones}

    def expect(self, zones: frozenset[Zone] | None) -> None:
        """The zones the hand can change next: read every sweep, the others less often."""
        self._expected = zones

    def plan(self) -> dict[int, list[int]]:
        """The antennas to read next sweep, by COM-ADR, ascending (:meth:`sweep`'s plan).

        Without a hint, or while reading every antenna takes less than ``full_sweep_ms``, every
        antenna. Else the antennas every sweep must read (the zones the hand can change, those
        not settled, the broken ones) and the next ``background_per_sweep`` of the others in
        turn; the turn moves on with each plan.
        """
        everyone = [(r.address, a) for r in self.readers.values() for a in sorted(r.antennas)]
        quick = self.antenna_seconds is not None and (
            self.antenna_seconds * len(everyone) * 1000 < self.options.full_sweep_ms
        )
        if self._expected is None or quick:
            chosen = set(everyone)
        else:
            chosen = {place for place in everyone if self._must_read(*place)}
            others = [place for place in everyone if place not in chosen]
            if others:
                count = min(self.options.background_per_sweep, len(others))
                start = self._turn % len(others)
                chosen.update((others + others)[start : start + count])
                self._turn = start + count
        return {
            address: [a for adr, a in everyone if adr == address and (adr, a) in chosen]
            for address in self.readers
        }

    def _must_read(self, address: int, antenna: int) -> bool:
        reader = self.readers[address]
        zone = reader.antennas[antenna]
        if self._expected is not None and zone in self._expected:
            return True
        unsettled = self._heard.get(zone, set()) != self.tracker.present(zone)
        return unsettled or antenna in reader.faulty

    async def reset(self) -> None:
        """Reset every reader's RF (``[0x69]``): every tag is inventoried afresh."""
        if self.link is None:
            raise DeviceUnavailableError(f"{self.device_id} is not connected")
        for reader in self.readers.values():
            await self._rf_reset(self.link, reader)

    # ------------------------------------------------------------------ one connection

    async def run(self, sink: InputSink) -> None:
        """Open the line, check and set up its readers and sweep until the connection ends."""
        self._sink = sink
        link = FeigLink(timeout=self.options.response_timeout)
        transport = await self._open(link.data_received, link.connection_lost)
        link.write = transport.write
        self.link = link
        try:
            await self._set_up(link)
            await self._sweep_forever(link)
        except ReaderSilentError as silent:
            transport.close()
            raise await self._look_for(silent.reader) from None
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
            return await SerialTransport.open(
                o.port, on_data, on_lost, o.baudrate, parity=PARITY[o.parity]
            )
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
        described = []
        for reader in self.readers.values():
            await self._check(link, reader)
            await self._rf_reset(link, reader)
            described.append(f"{reader.version} at COM-ADR {reader.address}")
        where = self.options.port or f"USB {self.options.vid:04x}:{self.options.pid:04x}"
        detail = f"{'; '.join(described)} on {where}, {len(self.zones)} antennas"
        log.info("reader.online", device=self.device_id, identity=detail)
        await self._health(utc_now(), Health.ONLINE, detail)

    async def _look_for(self, reader: LineReader) -> DeviceError:
        """Where a silent reader is: ``[0x52]`` at each of FEIG's other baud rates (M02 p. 45).

        Found: :class:`DeviceRejectedError` saying at what rate; not found: unavailable.
        """
        o = self.options
        assert o.port is not None
        for rate in sorted(setup.BAUD_RATES.values(), reverse=True):
            if rate == o.baudrate:
                continue
            link = FeigLink(timeout=o.response_timeout)
            transport = await SerialTransport.open(
                o.port, link.data_received, link.connection_lost, rate, parity=PARITY[o.parity]
            )
            link.write = transport.write
            try:
                await link.call(p.baud_rate_detection_request(reader.address))
            except DeviceUnavailableError:
                raise
            except DeviceError:
                continue
            finally:
                transport.close()
            return DeviceRejectedError(
                f"{reader.name()} does not answer at {o.baudrate} baud but at {rate} (its CFG1 "
                f"BAUD): set baudrate = {rate}, or the reader to {o.baudrate} baud"
            )
        return DeviceUnavailableError(
            f"{reader.name()} answers at none of FEIG's baud rates, parity {o.parity}: is it "
            "on the line, powered, at that COM-ADR?"
        )

    async def _check(self, link: FeigLink, reader: LineReader) -> None:
        """Refuse a reader not approved, or not set up for the table, in one line."""
        address = reader.address
        try:
            await self._call(link, p.baud_rate_detection_request(address))
        except LinkTimeoutError:
            if self.options.port is None:
                raise  # no baud rate on USB: a silent reader is just silent
            raise ReaderSilentError(reader) from None
        answer = await self._call(link, encode_request(p.CMD_SOFTWARE_VERSION, b"", address))
        version = p.SoftwareVersion.decode(answer.data)
        reader.version = version
        approved = self.approvals.check(address, version)
        beyond = sorted(a for a in reader.antennas if a > approved.antennas)
        if beyond:
            raise DeviceRejectedError(
                f"{reader.name()} is a {approved.model} with {approved.antennas} antenna "
                f"outputs: the table maps its antenna {', '.join(map(str, beyond))}"
            )
        if not version.reads(p.TransponderSupport.ISO15693) and not version.reads(
            p.TransponderSupport.ISO14443A
        ):
            raise DeviceRejectedError(f"{reader.name()} ({version}) reads no card tags")
        records = {}
        for block, eeprom in (
            (setup.CFG_INTERFACE, False),
            (setup.CFG_INTERFACE, True),
            (setup.CFG_TRANSPONDER, False),
        ):
            request = p.read_config_request(block, eeprom=eeprom, address=address)
            records[(block, eeprom)] = (await self._call(link, request)).data
        interface = setup.Interface(records[(setup.CFG_INTERFACE, False)])
        stored = setup.Interface(records[(setup.CFG_INTERFACE, True)])
        transponder = setup.Transponder(records[(setup.CFG_TRANSPONDER, False)])
        serial = self.options.port is not None
        baudrate = self.options.baudrate if serial else None
        parity = self.options.parity
        found = setup.problems(interface, transponder, baudrate=baudrate, parity=parity)
        found += [
            f"{problem} once reset (EEPROM)"
            for problem in setup.problems(stored, transponder, baudrate=baudrate, parity=parity)
            if problem not in found and problem.startswith("CFG1")
        ]
        if found:
            raise DeviceRejectedError(f"{reader.name()} ({version}): {'; '.join(found)}")
        reader.response_time = interface.response_time

    async def _rf_reset(self, link: FeigLink, reader: LineReader) -> None:
        await self._call(link, encode_request(p.CMD_RF_RESET, b"", reader.address))
        self.rf_resets += 1

    async def _sweep_forever(self, link: FeigLink) -> None:
        loop = asyncio.get_running_loop()
        period = self.options.scan_period_ms / 1000
        while True:
            started = loop.time()
            await self.sweep(link)
            await asyncio.sleep(max(0.0, period - (loop.time() - started)))

    # ------------------------------------------------------------------ one sweep

    async def sweep(self, link: FeigLink) -> None:
        """One inventory of the antennas due on every reader; its edges go to the sink."""
        heard: dict[Zone, set[str]] = {}
        rssi: dict[tuple[Zone, str], int] = {}
        edges: list[PresenceEdge[Zone]] = []
        swept: list[Zone] = []
        failed = False
        plan = self.plan()
        for reader in self.readers.values():
            antennas = plan[reader.address]
            if not antennas:
                continue
            try:
                sets = await self._inventory(link, reader, antennas)
            except DeviceUnavailableError:
                raise
            except DeviceError as exc:
                failed = True
                edges += await self._failed(link, reader, await self._diagnosed(link, reader, exc))
                continue
            ts = utc_now()
            await self._reader_fine(ts, reader)
            for antenna in antennas:
                heard[reader.antennas[antenna]] = set()
            for item in sets:
                self._collect(reader, item, heard, rssi)
            for antenna in antennas:
                zone = reader.antennas[antenna]
                self._heard[zone] = heard[zone]
                if antenna in reader.faulty:
                    edges += self.tracker.lost(ts, zone, self._fault_detail(reader, antenna))
                else:
                    edges += self.tracker.seen(ts, zone, heard[zone])
                    swept.append(zone)
        if failed:
            self.failed_sweeps += 1
        else:
            self.sweeps += 1
        ts = utc_now()
        partial = swept if len(swept) < len(self.zones) else None
        await self._publish(self.arbiter.sweep(ts, edges, rssi, swept=partial))

    def _collect(
        self,
        reader: LineReader,
        item: d.DataSet,
        heard: dict[Zone, set[str]],
        rssi: dict[tuple[Zone, str], int],
    ) -> None:
        if not item.flags & d.FLAG_TRANSPONDER:
            return  # antenna information alone: no tag to place
        uid = item.uid_text()
        for read in item.antennas:
            zone = reader.antennas.get(read.antenna)
            if zone is None:
                self._unmapped(reader, read.antenna)
                continue
            if zone not in heard:
                continue  # not asked for: a reader is not to answer for it
            heard[zone].add(uid)
            rssi[(zone, uid)] = max(read.rssi, rssi.get((zone, uid), 0))

    async def _inventory(
        self, link: FeigLink, reader: LineReader, antennas: list[int]
    ) -> list[d.DataSet]:
        """Every data set of one inventory of ``antennas`` of ``reader``, page by page (its 0x84
        diagnosed)."""
        address = reader.address
        timeout = reader.response_time + self.options.response_timeout
        started = asyncio.get_running_loop().time()
        frame = await self._call(
            link, p.inventory_request(antennas, address=address), inventory=True, timeout=timeout
        )
        each = (asyncio.get_running_loop().time() - started) / len(antennas)
        known = self.antenna_seconds
        self.antenna_seconds = each if known is None else 0.8 * known + 0.2 * each
        sets: list[d.DataSet] = []
        warning = False
        for _ in range(MAX_PAGES):
            sets += d.decode_inventory(frame.data, with_antenna=True)
            warning |= frame.status == p.Status.RF_WARNING
            if frame.status != p.Status.MORE_DATA:
                break
            self.pages += 1
            more = p.inventory_request(antennas, more=True, address=address)
            frame = await self._call(link, more, inventory=True, timeout=timeout)
        else:
            raise ProtocolError(f"{reader.name()} sent more than {MAX_PAGES} pages")
        if warning or reader.faulty:
            await self._antenna_states(link, reader, antennas, warning)
        return sets

    async def _call(
        self,
        link: FeigLink,
        request: bytes,
        *,
        inventory: bool = False,
        timeout: float | None = None,
    ) -> Frame:
        frame = await link.call(request, timeout=timeout)
        ok = {p.Status.OK}
        if inventory:
            ok |= {p.Status.NO_TRANSPONDER, p.Status.RF_WARNING, p.Status.MORE_DATA}
        if frame.status not in ok:
            status = frame.status or 0
            raise ReaderStatusError(
                f"COM-ADR {frame.address}: 0x{frame.command:02x} answered {p.status_name(status)}",
                status,
            )
        return frame

    async def _general(self, link: FeigLink, reader: LineReader) -> p.GeneralDiagnostic:
        request = p.diagnostic_request(p.DIAG_GENERAL, reader.address)
        return p.GeneralDiagnostic.decode((await self._call(link, request)).data)

    async def _diagnosed(self, link: FeigLink, reader: LineReader, exc: DeviceError) -> str:
        """Why an inventory failed: the reader's own diagnostic (mode 0x01) says, if it can."""
        if not (
            isinstance(exc, ReaderStatusError) and exc.status == p.Status.RF_COMMUNICATION_ERROR
        ):
            return str(exc)
        try:
            problems = (await self._general(link, reader)).problems()
        except DeviceUnavailableError:
            raise
        except DeviceError:
            return str(exc)
        return f"{exc}: RF front end: {', '.join(problems)}" if problems else str(exc)

    async def _antenna_states(
        self, link: FeigLink, reader: LineReader, antennas: list[int], warning: bool
    ) -> None:
        """Ask the reader which of ``antennas`` are broken; report what changed."""
        states: dict[int, p.ChannelState] = {}
        if warning:
            general = await self._general(link, reader)
            if general.flags & p.GeneralFlag.MULTIPLEXER:
                states = await self._channels(link, reader)
            elif general.problems():
                log.warning(
                    "reader.rf_warning",
                    device=self.device_id,
                    reader=reader.address,
                    problems=general.problems(),
                )
        ts = utc_now()
        assert self._sink is not None
        for antenna in antennas:
            state = states.get(antenna, p.ChannelState.OK)
            was = reader.faulty.get(antenna)
            if state not in (p.ChannelState.OK, was):
                reader.faulty[antenna] = state
                detail = self._fault_detail(reader, antenna)
                ident = fault_id(reader.address, antenna)
                fault = DeviceFault(ts, self.device_id, "ANTENNA_FAULT", ident, "error", detail)
                await self._sink(fault)
                await self._zone_health(ts, reader.antennas[antenna], Health.STALE, detail)
            elif state is p.ChannelState.OK and was is not None:
                del reader.faulty[antenna]
                ident = fault_id(reader.address, antenna)
                await self._sink(DeviceFaultCleared(ts, self.device_id, "ANTENNA_FAULT", ident))

    async def _channels(self, link: FeigLink, reader: LineReader) -> dict[int, p.ChannelState]:
        """The broken channels: mode 0x05 names how; a reader without it, mode 0x03 which."""
        address = reader.address
        try:
            request = p.diagnostic_request(p.DIAG_MULTIPLEXER_IMPEDANCE, address)
            return p.MultiplexerImpedance.decode((await self._call(link, request)).data).faults()
        except ReaderStatusError:
            request = p.diagnostic_request(p.DIAG_MULTIPLEXER, address)
            return p.decode_multiplexer_status((await self._call(link, request)).data)

    def _fault_detail(self, reader: LineReader, antenna: int) -> str:
        state = reader.faulty.get(antenna, p.ChannelState.OK)
        zone = reader.antennas[antenna]
        return f"COM-ADR {reader.address} antenna {antenna} ({zone}): {state.name.lower()}"

    async def _failed(
        self, link: FeigLink, reader: LineReader, reason: str
    ) -> list[PresenceEdge[Zone]]:
        reader.failures += 1
        ts = utc_now()
        edges: list[PresenceEdge[Zone]] = []
        for zone in reader.antennas.values():
            edges += self.tracker.failed(ts, zone, reason)
        if reader.failures == self.options.stale_after:
            self._stale.add(reader.address)
            detail = f"{reader.name()}: {reader.failures} inventories failed in a row: {reason}"
            await self._health(ts, Health.STALE, detail)
            for zone in reader.antennas.values():
                await self._zone_health(ts, zone, Health.STALE, detail)
        if reader.failures % self.options.reset_after == 0:
            try:
                await self._rf_reset(link, reader)
            except DeviceUnavailableError:
                raise
            except DeviceError as exc:
                log.warning("reader.reset_failed", device=self.device_id, error=str(exc))
        return edges

    async def _reader_fine(self, ts: datetime, reader: LineReader) -> None:
        reader.failures = 0
        if reader.address not in self._stale:
            return
        self._stale.discard(reader.address)
        for antenna, zone in reader.antennas.items():
            if antenna not in reader.faulty:
                await self._zone_health(ts, zone, Health.ONLINE, f"{reader.name()} answers again")
        if not self._stale:
            await self._health(ts, Health.ONLINE, "every reader answers again")

    def _unmapped(self, reader: LineReader, antenna: int) -> None:
        if (reader.address, antenna) not in self._warned:
            self._warned.add((reader.address, antenna))
            log.warning(
                "reader.unmapped_antenna",
                device=self.device_id,
                reader=reader.address,
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
                pass  # a broken antenna or a silent reader reports its zones itself

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


__all__ = ["BROADCAST", "FeigReader", "LineReader", "ReaderStatusError", "fault_id"]
