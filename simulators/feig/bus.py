"""An RS-485 line with simulated ID ISC.M02.M8 readers on it, byte for byte.

Pure (the time comes in with the bytes): :class:`FeigLine` reads the host's bytes as the
readers' receivers do and returns what the line carries back:

* frames are cut by their LENGTH; a partial frame followed by more than 12 ms of silence is
  dropped and what follows is read as a new frame (the data timeout, ID ISC.M02 manual p. 17);
* a frame whose CRC fails, or that no reader on the line is addressed by, gets no answer ("no
  reply … if there is a protocol frame failure", M02 p. 16); an advanced frame (STX and a
  two-byte length) is read whole and not answered: the M02.M8 knows the standard frame only
  (M02.M8 manual H90400-0e-ID-B p. 9);
* COM-ADR 255 is answered by every reader (M02 p. 16): with two or more on the line their
  answers collide and the host gets bytes that are no frame;
* a request that starts less than 5 ms after the line's last answer ended breaks the starting
  delay (M02 p. 17): it is answered, and counted, so a test can see a host that rushes;
* given the speed the host set the line to (``line_baud``), a reader running at another baud
  rate hears noise and answers nothing ("the return protocol will only be sent if the inquiry
  is executed with the baud rate … of the Reader", M02 p. 45);
* the link faults garble answers (``crc``: a flipped CRC byte; ``partial``: the frame cut short)
  or withhold them (``stall``).

The line's antennas are numbered 1… across its readers (:mod:`simulators.feig.reader`).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from drivers.rfid.feig.frames import BROADCAST, STARTING_DELAY, Frame, FrameDecoder, Garbage
from simulators.feig.radio import Radio
from simulators.feig.reader import ANTENNAS, Answer, ReaderModel


@dataclass(slots=True)
class LinkFaults:
    """Faults of the line."""

    crc: float = 0.0
    partial: float = 0.0
    stall_until: float = 0.0

    def describe(self, now: float) -> dict[str, object]:
        """JSON-ready settings."""
        return {"crc": self.crc, "partial": self.partial, "stalled": now < self.stall_until}


@dataclass(slots=True)
class LineCounters:
    """What the line saw."""

    frames: int = 0
    ignored: int = 0
    data_timeouts: int = 0
    advanced: int = 0
    collisions: int = 0
    rushed: int = 0
    """Requests that broke the starting delay."""
    wrong_speed: int = 0
    """Requests sent at a baud rate the reader asked does not run at."""


@dataclass(slots=True)
class FeigLine:
    """The readers on one line, and the tags their antennas hear."""

    addresses: tuple[int, ...] = (0,)
    antennas: int | None = None
    """The line's antennas in all (default: 8 a reader)."""
    seed: int | None = None
    transponders: frozenset[str] = frozenset({"iso15693", "iso14443a"})
    rf_timing: bool = True
    link: LinkFaults = field(default_factory=LinkFaults)
    counters: LineCounters = field(default_factory=LineCounters)
    journal: deque[str] = field(default_factory=lambda: deque(maxlen=64))
    radio: Radio = field(init=False)
    readers: list[ReaderModel] = field(init=False)
    answered_until: float = 0.0
    """When the line's last answer ended (set by whoever puts it on the line)."""
    _rng: random.Random = field(init=False)
    _decoder: FrameDecoder = field(init=False)

    def __post_init__(self) -> None:
        if not self.addresses or len(set(self.addresses)) != len(self.addresses):
            raise ValueError("the readers on a line need distinct COM-ADRs")
        if any(not 0 <= a <= 254 for a in self.addresses):
            raise ValueError("a reader's COM-ADR is 0…254")
        most = ANTENNAS * len(self.addresses)
        total = most if self.antennas is None else self.antennas
        if not 1 <= total <= most:
            raise ValueError(f"{len(self.addresses)} reader(s) have 1…{most} antennas")
        self.antennas = total
        self._rng = random.Random(self.seed)
        self.radio = Radio(total, random.Random(self._rng.random()))
        self.readers = [
            ReaderModel(
                self.radio,
                index,
                address,
                self.transponders,
                journal=self.journal.append,
                rf_timing=self.rf_timing,
            )
            for index, address in enumerate(self.addresses)
        ]
        self._decoder = FrameDecoder(answers=False)

    def power_on(self) -> None:
        """Fresh power for every reader; nothing half-read."""
        self._decoder.reset()
        for reader in self.readers:
            reader.power_on()

    def reader_of(self, antenna: int) -> tuple[ReaderModel, int]:
        """The reader a line antenna hangs off, and its ANT_NR there."""
        self.radio.check_antenna(antenna)
        reader = self.readers[(antenna - 1) // ANTENNAS]
        return reader, antenna - reader.first_antenna + 1

    def receive(self, data: bytes, now: float, line_baud: int | None = None) -> list[Answer]:
        """Bytes from the host: what the line carries back for every request they complete
        (``line_baud``: the speed the host set the line to; None: whatever the readers run at)."""
        if self._decoder.pending == 0 and now - self.answered_until < STARTING_DELAY:
            self.counters.rushed += 1
            self.journal.append("a request broke the 5 ms starting delay")
        answers = []
        for item in self._decoder.feed(data, now):
            if isinstance(item, Garbage):
                self.counters.ignored += 1
                if item.reason.startswith("data timeout"):
                    self.counters.data_timeouts += 1
                self.journal.append(f"dropped {item.size} bytes: {item.reason}")
                continue
            answer = self._request(item, line_baud)
            if answer is None:
                continue
            if now < self.link.stall_until:
                self.journal.append(f"stalled: no answer to 0x{item.command:02x}")
                continue
            answers.append(Answer(self._garble(answer.data), answer.work))
        return answers

    def _request(self, frame: Frame, line_baud: int | None) -> Answer | None:
        self.counters.frames += 1
        if frame.advanced:
            self.counters.advanced += 1
            self.journal.append(f"an advanced frame (0x{frame.command:02x}): not answered")
            return None
        asked = [r for r in self.readers if frame.address in (r.address, BROADCAST)]
        deaf = [r for r in asked if line_baud is not None and r.running_baud != line_baud]
        if deaf:
            self.counters.wrong_speed += 1
            self.journal.append(
                f"the line at {line_baud} baud: readers at another speed heard noise"
            )
            asked = [r for r in asked if r not in deaf]
        if not asked:
            self.counters.ignored += 1
            return None
        answers = [a for a in (reader.answer(frame) for reader in asked) if a is not None]
        if len(answers) <= 1:
            return answers[0] if answers else None
        self.counters.collisions += 1
        self.journal.append(f"{len(answers)} readers answered 0x{frame.command:02x} at once")
        collided = bytearray(max(len(a.data) for a in answers))
        for answer in answers:
            for at, byte in enumerate(answer.data):
                collided[at] |= byte  # drivers fighting on the line: no frame survives
        return Answer(bytes(collided), max(a.work for a in answers))

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
