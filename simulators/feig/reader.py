"""The simulated reader's host side: frames in, answers out, byte-faithful to the ID ISC protocol.

Pure (the time is passed in): :class:`FeigReaderModel` decodes request frames, carries out
``[0xB0][0x01]`` inventory (paged 19 data sets a frame: status 0x94 while more remain, the next
page for MODE bit MORE), ``[0x65]``, ``[0x69]`` and ``[0x6E]``, and garbles its answers as the
link faults say: ``crc`` (a flipped CRC byte), ``partial`` (the frame cut short), ``stall`` (no
answer at all for a while). A request with a bad CRC, or addressed to another reader, gets no
answer, as on a real RS-485 line.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field

from drivers.rfid.feig import protocol as p
from simulators.feig.radio import AntennaFault, Heard, Radio

VERSION = p.SoftwareVersion(sw_rev=0x0304, d_rev=0x00, hw_type=0x4C, sw_type=0x49, tr_type=0x0008)


@dataclass(slots=True)
class Answer:
    """Bytes for the host and how long the reader works before sending them."""

    data: bytes
    rf_seconds: float = 0.0


@dataclass(slots=True)
class LinkFaults:
    """Faults of the host link."""

    crc: float = 0.0
    partial: float = 0.0
    stall_until: float = 0.0

    def describe(self, now: float) -> dict[str, object]:
        """JSON-ready settings."""
        return {"crc": self.crc, "partial": self.partial, "stalled": now < self.stall_until}


@dataclass(slots=True)
class FeigReaderModel:
    """One ID ISC reader with ``antennas`` multiplexed antennas."""

    antennas: int = 16
    address: int = 0x00
    seed: int | None = None
    radio: Radio = field(init=False)
    link: LinkFaults = field(default_factory=LinkFaults)
    commands: Counter[int] = field(default_factory=Counter)
    inventories: int = 0
    pages_sent: int = 0
    ignored_requests: int = 0
    resets: int = 0
    journal: deque[str] = field(default_factory=lambda: deque(maxlen=64))
    _rng: random.Random = field(init=False)
    _decoder: p.FrameDecoder = field(init=False)
    rf_flags: int = 0
    """The RF front end's problems (``GeneralDiagnostic`` flags): inventories fail with 0x83."""
    _pending: list[p.TagRecord] = field(default_factory=list)
    _pending_status: int = p.Status.OK

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self.radio = Radio(self.antennas, random.Random(self._rng.random()))
        self._decoder = p.FrameDecoder(responses=False)

    def power_on(self) -> None:
        """Fresh power: no half-read request, no inventory pages waiting."""
        self._decoder.reset()
        self._pending = []

    # ------------------------------------------------------------------ requests

    def receive(self, data: bytes, now: float) -> list[Answer]:
        """Bytes from the host: the answers to every request they complete."""
        answers = []
        for item in self._decoder.feed(data):
            if isinstance(item, p.Garbage):
                self.ignored_requests += 1
                self.journal.append(f"ignored {item.size} bytes: {item.reason}")
                continue
            if item.address not in (self.address, p.BROADCAST):
                self.ignored_requests += 1
                continue
            self.commands[item.command] += 1
            answer = self._answer(item)
            if now < self.link.stall_until:
                self.journal.append(f"stalled: no answer to 0x{item.command:02x}")
                continue
            answers.append(Answer(self._garble(answer.data), answer.rf_seconds))
        return answers

    def _answer(self, frame: p.Frame) -> Answer:
        command, data = frame.command, frame.data
        if command == p.CMD_ISO_HOST and data[:1] == bytes((p.ISO_INVENTORY,)):
            return self._inventory(data)
        if command == p.CMD_SOFTWARE_VERSION:
            return self._reply(command, p.Status.OK, VERSION.encode())
        if command == p.CMD_RF_RESET:
            self.resets += 1
            self._pending = []
            return Answer(self._reply(command, p.Status.OK).data, 0.005)
        if command == p.CMD_DIAGNOSTIC and len(data) == 1:
            return self._diagnostic(data[0])
        if command == p.CMD_DIAGNOSTIC:
            return self._reply(command, p.Status.LENGTH_ERROR)
        return self._reply(command, p.Status.UNKNOWN_COMMAND)

    def _reply(self, command: int, status: int, data: bytes = b"") -> Answer:
        return Answer(p.encode_response(command, status, data, self.address))

    def _inventory(self, data: bytes) -> Answer:
        if len(data) != 2 + p.ANT_SEL_BYTES or not data[1] & p.MODE_ANT:
            return self._reply(p.CMD_ISO_HOST, p.Status.LENGTH_ERROR)
        rf_seconds = 0.0
        if self.rf_flags:
            self._pending = []
            return self._reply(p.CMD_ISO_HOST, p.Status.RF_COMMUNICATION_ERROR)
        if not data[1] & p.MODE_MORE:
            self.inventories += 1
            selected = p.selected_antennas(data[2:])
            heard, rf_seconds = self.radio.inventory(selected)
            self._pending = [self._record(item) for item in heard]
            broken = any(a in self.radio.faults for a in selected)
            self._pending_status = p.Status.RF_WARNING if broken else p.Status.OK
        page, self._pending = (
            self._pending[: p.RECORDS_PER_FRAME],
            self._pending[p.RECORDS_PER_FRAME :],
        )
        if self._pending:
            status: int = p.Status.MORE_DATA
            self.pages_sent += 1
        elif page:
            status = self._pending_status
        else:
            status = (
                self._pending_status
                if self._pending_status != p.Status.OK
                else p.Status.NO_TRANSPONDER
            )
        body = p.encode_inventory_data(page) if page else b""
        answer = self._reply(p.CMD_ISO_HOST, status, body)
        return Answer(answer.data, rf_seconds)

    @staticmethod
    def _record(item: Heard) -> p.TagRecord:
        return p.TagRecord.of(item.uid, item.antenna, item.rssi)

    def _diagnostic(self, mode: int) -> Answer:
        if mode == p.DIAG_GENERAL:
            flags = bytes((p.DIAG_GENERAL, self.rf_flags))
            return self._reply(p.CMD_DIAGNOSTIC, p.Status.OK, flags)
        if mode == p.DIAG_ANTENNAS:
            codes = {
                AntennaFault.OPEN: p.AntennaState.OPEN,
                AntennaFault.SHORT: p.AntennaState.SHORT,
            }
            states = [
                codes[self.radio.faults[a]] if a in self.radio.faults else p.AntennaState.OK
                for a in range(1, self.antennas + 1)
            ]
            return self._reply(p.CMD_DIAGNOSTIC, p.Status.OK, p.encode_antenna_diagnostic(states))
        return self._reply(p.CMD_DIAGNOSTIC, p.Status.NOT_AVAILABLE)

    def _garble(self, frame: bytes) -> bytes:
        rng = self._rng
        if self.link.crc and rng.random() < self.link.crc:
            garbled = bytearray(frame)
            garbled[-1 - rng.randrange(2)] ^= 1 << rng.randrange(8)
            self.journal.append("sent a frame with a bad CRC")
            return bytes(garbled)
        if self.link.partial and rng.random() < self.link.partial:
            self.journal.append("sent a partial frame")
            return frame[: rng.randrange(1, len(frame))]
        return frame
