"""A simulated PN532 module on its HSU (UART) link: bytes from the host in, bytes back out.

Pure and clock-free: every call takes the current time from the caller, randomness comes from
one seeded RNG, and the transport (a pty, a test) decides when bytes move. The link layer
follows UM0701-02 §6.2:

- after power-up (and after PowerDown) the chip sleeps; the host wakes it through the HSU with
  ``0x55``; bytes before that wake-up byte are lost, so a host that skips the wake-up sequence
  gets no ACK;
- every well-formed command frame is acknowledged with an ACK frame, then answered with a
  response frame (or the error frame); frames with a bad checksum are ignored;
- a NACK from the host asks for the last response again; an ACK from the host aborts the
  command still running;
- with the ``corrupt`` fault, response frames leave with a bit flipped now and then (the clean
  copy is what a NACK repeats, and the repeat may be garbled again).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field

from drivers.rfid.pn532.frames import (
    ACK_BYTES,
    ERROR_FRAME_BYTES,
    TFI_HOST,
    TFI_PN532,
    Ack,
    FrameDecoder,
    Garbage,
    InformationFrame,
    Nack,
    encode_information,
)
from simulators.pn532.chip import Pn532Chip
from simulators.pn532.faults import AntennaMode, Faults
from simulators.pn532.outcome import Deferred, SyntaxErrorReply
from simulators.pn532.tags import Antenna

WAKE_BYTE = 0x55
HSU_WAKE_SOURCE = 0x10
"""PowerDown's WakeUpEnable bit for the HSU interface."""


@dataclass(slots=True)
class LinkStats:
    """What crossed the link, for tests, benchmarks and the control channel."""

    commands: Counter[int] = field(default_factory=Counter)
    acks_sent: int = 0
    errors_sent: int = 0
    aborts: int = 0
    nacks: int = 0
    garbage_bytes: int = 0
    ignored_bytes: int = 0
    wakeups: int = 0
    journal: deque[str] = field(default_factory=lambda: deque(maxlen=512))
    """Recent link events in order: ``wake``, ``cmd 4a``, ``abort 4a``, ``nack``, ``sleep``."""


class Pn532Module:
    """One PN532 module: the chip, its antenna and the faults it suffers."""

    def __init__(self, *, seed: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.antenna = Antenna()
        self.faults = Faults()
        self.stats = LinkStats()
        self.chip = Pn532Chip(self.antenna, self.faults, self.rng)
        self._decoder = FrameDecoder()
        self._asleep = True
        self._pending: Deferred | None = None
        self._last_response = b""
        self.power_on()

    @property
    def asleep(self) -> bool:
        """True while the chip waits for an HSU wake-up."""
        return self._asleep

    @property
    def busy_with(self) -> int | None:
        """The code of the command still running, if any."""
        return None if self._pending is None else self._pending.code

    @property
    def next_deadline(self) -> float | None:
        """When the running command completes on its own (InAutoPoll running out of polls)."""
        return None if self._pending is None else self._pending.deadline

    def power_on(self) -> None:
        """Power-up (or replug): the chip starts asleep in LowVbat mode, RF off, no targets."""
        self.chip = Pn532Chip(self.antenna, self.faults, self.rng)
        self.antenna.field_off()
        self._decoder.reset()
        self._asleep = True
        self._pending = None
        self._last_response = b""

    def receive(self, data: bytes, now: float) -> bytes:
        """Bytes from the host; returns the bytes the module sends back right away."""
        if self.faults.antenna is AntennaMode.SILENT:
            self.stats.ignored_bytes += len(data)
            return b""
        if self._asleep:
            data = self._wake(data)
        out = bytearray()
        for item in self._decoder.feed(data):
            match item:
                case Garbage(size=size):
                    self.stats.garbage_bytes += size
                case Ack():
                    if self._pending is not None:
                        self.stats.aborts += 1
                        self.stats.journal.append(f"abort {self._pending.code:02x}")
                        self._pending = None
                case Nack():
                    self.stats.nacks += 1
                    self.stats.journal.append("nack")
                    if self._pending is None:  # while busy there is no new response to repeat
                        out += self.faults.garble(self._last_response, self.rng)
                case InformationFrame(tfi=tfi, data=payload):
                    out += self._command(tfi, payload, now)
                case _:  # an error frame is never sent to the PN532: ignore it
                    pass
            if self._asleep:  # PowerDown just took effect: the rest of the input is lost
                break
        return bytes(out)

    def advance(self, now: float) -> bytes:
        """Let the running command look again (a tag may have come, time may be up)."""
        pending = self._pending
        if pending is None:
            return b""
        result = pending.attempt()
        if result is None and pending.deadline is not None and now >= pending.deadline:
            result = pending.at_deadline
        if result is None:
            return b""
        self._pending = None
        return self._respond(result)

    # ----------------------------------------------------------------- internals

    def _wake(self, data: bytes) -> bytes:
        sources = self.chip.wake_sources
        hsu_can_wake = sources is None or bool(sources & HSU_WAKE_SOURCE)
        index = data.find(bytes((WAKE_BYTE,)))
        if not hsu_can_wake or index < 0:
            self.stats.ignored_bytes += len(data)
            return b""
        self.stats.ignored_bytes += index + 1
        self.stats.wakeups += 1
        self.stats.journal.append("wake")
        self._asleep = False
        self.chip.wake_sources = None
        # The rest of the wake-up preamble (more 0x55, then zeros) is not a frame, nor garbage.
        return data[index + 1 :].lstrip(bytes((WAKE_BYTE,)))

    def _command(self, tfi: int, payload: bytes, now: float) -> bytes:
        self.stats.acks_sent += 1
        if self._pending is not None:  # a new command replaces one still running
            self.stats.journal.append(f"abort {self._pending.code:02x}")
            self._pending = None
        if tfi != TFI_HOST or not payload:
            return ACK_BYTES + self._respond(SyntaxErrorReply())
        self.stats.commands[payload[0]] += 1
        self.stats.journal.append(f"cmd {payload[0]:02x}")
        outcome = self.chip.execute(payload, now)
        if isinstance(outcome, Deferred):
            self._pending = outcome
            return ACK_BYTES
        response = ACK_BYTES + self._respond(outcome)
        if self.chip.wake_sources is not None:  # PowerDown: answer first, then sleep
            self._asleep = True
            self._decoder.reset()
            self.stats.journal.append("sleep")
        return response

    def _respond(self, outcome: bytes | SyntaxErrorReply) -> bytes:
        if isinstance(outcome, SyntaxErrorReply):
            self.stats.errors_sent += 1
            frame = ERROR_FRAME_BYTES
        else:
            frame = encode_information(TFI_PN532, outcome)
        self._last_response = frame
        return self.faults.garble(frame, self.rng)
