"""The simulated TSP/1 reader as a pure state machine: requests in, responses and events out.

No I/O and no clock: every call takes ``now`` (seconds on a monotonic clock). The model sweeps
its mapped antennas every ``period_ms``, debounces each tag (``arrive_n`` reads to assert,
``depart_n`` clean misses to release), and reports edges, periodic snapshots, antenna faults and
zone overflows. :class:`~simulators.tsp_device.WireDevice` puts it behind the TSP/1 device link;
the pty server and the fake pyusb backend carry the bytes.

Unlike the shuffler's audit events, a reader's edge events live in RAM: a power cut loses them,
and so does a full queue (the reader drops new edges while ``max_queue`` events wait for the
host). Snapshots make up for both; after dropping an edge the reader sends one at the end of its
next sweep.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from drivers.rfid.presence import Debounce
from drivers.rfid.tsp_reader.codes import (
    ZONE_CAPACITY,
    AirInterface,
    AntennaCode,
    Capability,
    MsgType,
    ReaderState,
    Report,
    ScanMode,
    StatusFlag,
)
from drivers.rfid.tsp_reader.events import (
    AntennaFault,
    InventorySnapshot,
    SnapshotEntry,
    TagArrivedEvent,
    TagDepartedEvent,
    ZoneOverflow,
)
from drivers.rfid.tsp_reader.messages import (
    ReaderIdentity,
    ReaderStatus,
)
from drivers.tsp.common import (
    ClearedBy,
    FaultCleared,
    FaultRaised,
    Severity,
)
from drivers.tsp.frame import MAX_PAYLOAD
from simulators.rfid import requests
from simulators.rfid.antenna import Antenna, Assignment

DEFAULT_CAPS = (
    Capability.EDGE_EVENTS
    | Capability.SNAPSHOTS
    | Capability.RSSI
    | Capability.TAG_MEMORY_READ
    | Capability.ANTENNA_DIAGNOSTICS
)


@dataclass
class ReaderConfig:
    """What the simulated reader is."""

    n_antennas: int = 16
    vendor: str = "tablectl"
    model: str = "TSP-RFID-SIM-1"
    serial: str = "RDR-0001"
    hw_rev: str = "A"
    fw_version: str = "1.0.0"
    firmware: bytes = b"tablectl simulated TSP/1 reader 1.0.0\n"
    caps: Capability = DEFAULT_CAPS
    air: AirInterface = AirInterface.ISO14443A | AirInterface.ISO15693
    max_queue: int = 64


@dataclass
class EventFaults:
    """Faults of the reader's event stream (its firmware, not its antennas)."""

    lose_rate: float = 0.0
    """Edge events the reader never sends (lost to a firmware bug)."""
    garble_rate: float = 0.0
    """Edge events sent with a truncated payload (and a good CRC): the host cannot decode them."""
    lost: int = 0
    garbled: int = 0
    dropped: int = 0
    """Edge events dropped because the queue was full."""


@dataclass
class _Scan:
    mode: int = ScanMode.CONTINUOUS
    period_ms: int = 100
    debounce: Debounce = field(default_factory=Debounce)
    report: Report = Report.EDGES | Report.SNAPSHOTS
    snapshot_ms: int = 1000


class ReaderModel:
    """A multi-antenna HF reader speaking the TSP/1 reader message set."""

    #: What it asks of its link, connected by its wire device (unconnected: nothing queued, the
    #: host there; it reports no link counters).
    queued_events: Callable[[], int]
    host_lost: Callable[[float], bool]
    link_counters: Callable[[], dict[str, int]]

    def __init__(self, config: ReaderConfig, rng: random.Random, now: float) -> None:
        self.config = config
        self.rng = rng
        self.antennas = [Antenna(n) for n in range(config.n_antennas)]
        self.events = EventFaults()
        self.faults: dict[int, FaultRaised] = {}
        self._next_fault_id = 1
        self.queued_events = lambda: 0
        self.host_lost = lambda now: False
        self.link_counters = dict
        self.power_cycles = 0
        self.boot(now)

    # ------------------------------------------------------------------ power

    def boot(self, now: float) -> None:
        """Power up: a new boot id, no antenna map, default scan settings, empty event queue.

        The tags on the antennas and broken antennas are physical: they stay.
        """
        self.boot_id = self.rng.getrandbits(32)
        self.booted_at = now
        self.scan = _Scan()
        for antenna in self.antennas:
            antenna.assignment = None
            antenna.reset(self.scan.debounce)
        self.sweep = 0
        self.next_sweep: float | None = None
        self.next_snapshot: float | None = None
        self.snapshot_due = False
        self.events_dropped = False
        self._out: list[tuple[int, bytes]] = []

    def now_ms(self, now: float) -> int:
        """Milliseconds since boot (the device clock, wrapping at 32 bits)."""
        return int((now - self.booted_at) * 1000) & 0xFFFFFFFF

    # ------------------------------------------------------------------ device loop

    def take_events(self) -> list[tuple[int, bytes]]:
        """Events raised since the last call, in order."""
        out, self._out = self._out, []
        return out

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do."""
        return self.next_sweep

    def tick(self, now: float) -> None:
        """Run every sweep that is due."""
        while self.next_sweep is not None and now >= self.next_sweep:
            self.run_sweep(self.next_sweep)
            period = self.scan.period_ms / 1000
            self.next_sweep += period
            if self.next_sweep < now - period:
                self.next_sweep = now + period  # fell behind (the host machine stalled): skip

    def run_sweep(self, now: float) -> None:
        """Read every mapped antenna once; report edges, overflows and a due snapshot."""
        self.sweep = (self.sweep + 1) & 0xFFFF
        now_ms = self.now_ms(now)
        for antenna in self.antennas:
            arrived, departed = antenna.sweep(now_ms, self.rng)
            for uid in departed:
                self._edge(TagDepartedEvent(*self._where(antenna), uid, now_ms, self.sweep))
            for uid in arrived:
                rssi = self.rng.randint(-60, -30)
                reads = self.scan.debounce.arrive_n
                event = TagArrivedEvent(*self._where(antenna), uid, rssi, now_ms, reads, self.sweep)
                self._edge(event)
            self._check_overflow(antenna)
        if self.next_snapshot is not None and now >= self.next_snapshot:
            self.snapshot_due = True
            self.next_snapshot = now + self.scan.snapshot_ms / 1000
        if self.snapshot_due and self.scan.report & Report.SNAPSHOTS:
            self.snapshot_due = False
            self.events_dropped = False
            for snapshot in self.snapshots(now):
                self._emit(snapshot.TYPE, snapshot.encode())

    def _where(self, antenna: Antenna) -> tuple[int, int, int]:
        assert antenna.assignment is not None
        return antenna.number, antenna.assignment.zone_kind, antenna.assignment.zone_index

    def _edge(self, event: TagArrivedEvent | TagDepartedEvent) -> None:
        faults = self.events
        if not self.scan.report & Report.EDGES:
            return
        if self.queued_events() >= self.config.max_queue:
            faults.dropped += 1
            self.snapshot_due = self.events_dropped = True
            return
        if self.rng.random() < faults.lose_rate:
            faults.lost += 1
            return
        payload = event.encode()
        if self.rng.random() < faults.garble_rate:
            faults.garbled += 1
            payload = payload[: len(payload) // 2]
        self._emit(event.TYPE, payload)

    def _check_overflow(self, antenna: Antenna) -> None:
        if antenna.assignment is None:
            return
        capacity = ZONE_CAPACITY.get(antenna.assignment.zone_kind)
        if capacity is None:
            return
        count = len(antenna.tracker.present(antenna.number))
        if count > capacity and count != antenna.overflow:
            antenna.overflow = count
            self._emit(MsgType.ZONE_OVERFLOW, ZoneOverflow(antenna.number, count).encode())
        elif antenna.overflow and count <= capacity:
            antenna.overflow = 0
            self._emit(MsgType.ZONE_OVERFLOW, ZoneOverflow(antenna.number, count).encode())

    def _emit(self, msg_type: int, payload: bytes) -> None:
        self._out.append((msg_type, payload))

    # ------------------------------------------------------------------ snapshots

    def entries(self) -> list[SnapshotEntry]:
        """Every mapped antenna's status and asserted tags."""
        out = []
        for antenna in self.antennas:
            if antenna.assignment is None:
                continue
            if antenna.fault:
                status = antenna.fault
            elif not antenna.settled(self.scan.debounce):
                status = AntennaCode.SETTLING
            else:
                status = AntennaCode.OK
            out.append(SnapshotEntry(antenna.number, status, tuple(antenna.asserted())))
        return out

    def snapshots(self, now: float) -> list[InventorySnapshot]:
        """The current view, in as many frames as it takes (each within the payload limit)."""
        room = MAX_PAYLOAD - InventorySnapshot.HEADER_SIZE
        groups: list[list[SnapshotEntry]] = [[]]
        used = 0
        for listed in self.entries():
            entry = listed
            if entry.size > room or len(entry.uids) > 255:
                entry = SnapshotEntry(entry.antenna, AntennaCode.OVERFULL)
            if used + entry.size > room or len(groups[-1]) == 255:
                groups.append([])
                used = 0
            groups[-1].append(entry)
            used += entry.size
        now_ms = self.now_ms(now)
        return [InventorySnapshot(self.sweep, now_ms, tuple(group)) for group in groups]

    # ------------------------------------------------------------------ requests

    def handle(self, msg_type: int, payload: bytes, now: float) -> tuple[int, bytes]:
        """Execute one request; return the response type and payload (:mod:`.requests`)."""
        return requests.handle(self, msg_type, payload, now)

    def identity(self) -> ReaderIdentity:
        """Who the reader is (the IDENTIFY response, also the USB identity request's answer)."""
        config = self.config
        return ReaderIdentity(
            1,
            1,
            config.vendor,
            config.model,
            config.serial,
            config.hw_rev,
            config.fw_version,
            hashlib.sha256(config.firmware).digest(),
            self.boot_id,
            config.caps,
            config.air,
            config.n_antennas,
        )

    def status(self, now: float) -> ReaderStatus:
        """The GET_STATUS / PING answer."""
        mapped = [a for a in self.antennas if a.assignment is not None]
        flags = StatusFlag.NONE
        if self.host_lost(now):
            flags |= StatusFlag.HOST_LOST
        if not mapped:
            flags |= StatusFlag.CONFIG_PENDING
        if self.events_dropped:
            flags |= StatusFlag.EVENTS_DROPPED
        if any(a.fault for a in mapped):
            flags |= StatusFlag.ANTENNA_FAULT
        if not mapped:
            state = ReaderState.UNCONFIGURED
        elif any(f.severity >= Severity.ERROR for f in self.faults.values()):
            state = ReaderState.FAULT
        elif self.scan.mode == ScanMode.TRIGGERED:
            state = ReaderState.IDLE
        else:
            state = ReaderState.SCANNING
        antenna_ok = sum(1 << a.number for a in self.antennas if not a.fault)
        dwell = sum(a.assignment.dwell_ms for a in mapped if a.assignment is not None)
        sweep_ms = min(self.scan.period_ms, dwell)
        uptime = self.now_ms(now)
        return ReaderStatus(state, flags, sweep_ms, antenna_ok, self.boot_id, uptime)

    def map_antennas(self, wanted: dict[int, Assignment], now: float) -> None:
        """Apply an antenna map (antennas not in it are disabled); a broken antenna that is
        newly mapped is reported at once."""
        for antenna in self.antennas:
            was = antenna.assignment
            antenna.assign(wanted.get(antenna.number), self.scan.debounce)
            if antenna.fault and antenna.assignment is not None and antenna.assignment != was:
                fault = AntennaFault(antenna.number, antenna.fault, antenna.fault_value)
                self._emit(MsgType.ANTENNA_FAULT, fault.encode())
        self.schedule(now)

    def set_scan(
        self,
        mode: int,
        period_ms: int,
        debounce: Debounce,
        report: Report,
        snapshot_ms: int,
        now: float,
    ) -> None:
        """Apply scan settings; a changed debounce applies to the runs in progress."""
        scan = self.scan
        if debounce != scan.debounce:
            for antenna in self.antennas:
                antenna.tracker.debounce = debounce
        scan.mode, scan.period_ms, scan.debounce = mode, period_ms, debounce
        scan.report, scan.snapshot_ms = report, snapshot_ms
        self.next_sweep = None
        self.schedule(now)

    def schedule(self, now: float) -> None:
        """Plan the next sweep and snapshot after the settings changed."""
        scanning = self.scan.mode == ScanMode.CONTINUOUS
        if scanning and any(a.enabled for a in self.antennas):
            if self.next_sweep is None:
                self.next_sweep = now + self.scan.period_ms / 1000
        else:
            self.next_sweep = None
        snapshots = self.scan.report & Report.SNAPSHOTS and self.scan.snapshot_ms
        self.next_snapshot = now + self.scan.snapshot_ms / 1000 if snapshots else None

    # ------------------------------------------------------------------ physical happenings

    def place(self, antenna: int, uids: list[bytes]) -> None:
        """Put tags on an antenna (a tag lying elsewhere is moved)."""
        for uid in uids:
            for other in self.antennas:
                other.remove(uid)
            self.antennas[antenna].place(uid)

    def remove(self, uids: list[bytes], antenna: int | None = None) -> None:
        """Lift tags off one antenna, or off whichever they lie on."""
        for uid in uids:
            for other in self.antennas:
                if antenna is None or other.number == antenna:
                    other.remove(uid)

    def break_antenna(self, number: int, code: int, value: int, now: float) -> None:
        """An antenna fails (open, short, detuned, noise)."""
        antenna = self.antennas[number]
        first = not antenna.fault
        antenna.break_(code, value, self.now_ms(now))
        if antenna.enabled and first:
            self._emit(MsgType.ANTENNA_FAULT, AntennaFault(number, code, value).encode())

    def repair_antenna(self, number: int) -> bool:
        """A broken antenna works again; return whether it was broken."""
        antenna = self.antennas[number]
        if not antenna.fault:
            return False
        antenna.repair()
        if antenna.enabled:
            self._emit(MsgType.ANTENNA_FAULT, AntennaFault(number, AntennaCode.OK).encode())
        return True

    def raise_fault(self, code: int, severity: Severity, detail: str = "") -> int:
        """A device fault (RF front end, temperature); returns its id."""
        fault = FaultRaised(self._next_fault_id, code, severity, 0x01, 0, detail)
        self._next_fault_id += 1
        self.faults[fault.fault_id] = fault
        self._emit(MsgType.FAULT_RAISED, fault.encode())
        return fault.fault_id

    def clear_fault(self, code: int | None = None) -> int:
        """Clear the device faults with ``code`` (None: all); return how many."""
        cleared = [f for f in self.faults.values() if code is None or f.code == code]
        for fault in cleared:
            del self.faults[fault.fault_id]
            event = FaultCleared(fault.fault_id, fault.code, ClearedBy.OPERATOR)
            self._emit(MsgType.FAULT_CLEARED, event.encode())
        return len(cleared)
