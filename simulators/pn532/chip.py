"""The simulated PN532 chip: its state and its command set (NXP UM0701-02, chapter 7).

:meth:`Pn532Chip.execute` takes the data of one command frame (``PD0`` = command code) and
returns what the chip sends back: response data (the code + 1, then the output parameters), the
syntax-error frame for malformed or unknown commands, or a :class:`Deferred` for commands that
keep running (InListPassiveTarget with endless retries, InAutoPoll, target mode) until a tag
shows up, a deadline passes, or the host aborts them with an ACK. The initiator commands live in
:mod:`simulators.pn532.initiator`; the miscellaneous ones are here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Final

from simulators.pn532.faults import AntennaMode, Faults
from simulators.pn532.initiator import INITIATOR_COMMANDS, RF_COMMANDS
from simulators.pn532.outcome import (
    STATUS_NOT_ACCEPTABLE,
    STATUS_OK,
    STATUS_OVERCURRENT,
    STATUS_TIMEOUT,
    SYNTAX_ERROR,
    Deferred,
    Handler,
    Outcome,
)
from simulators.pn532.tags import CASCADE_TAG, Antenna, SimTag, TagState

#: GetFirmwareVersion answer of a PN532 v1.6: IC 0x32, version 1, revision 6, support A|B|18092.
FIRMWARE: Final = bytes((0x32, 0x01, 0x06, 0x07))

#: RFConfiguration items and the length of their configuration data.
RF_CONFIG_LENGTHS: Final = {0x01: 1, 0x02: 3, 0x04: 1, 0x05: 3, 0x0A: 11, 0x0B: 8, 0x0C: 3, 0x0D: 9}


def _strip_cascade(uid: bytes) -> bytes:
    """An InListPassiveTarget UID filter may carry cascade tags (88 …); the tag's UID does not."""
    if len(uid) == 8 and uid[0] == CASCADE_TAG:
        return uid[1:]
    if len(uid) == 12 and uid[0] == CASCADE_TAG and uid[4] == CASCADE_TAG:
        return uid[1:4] + uid[5:]
    return uid


@dataclass(slots=True)
class Pn532Chip:
    """The chip's state: registers, RF settings, the targets it has initialised."""

    antenna: Antenna
    faults: Faults
    rng: random.Random
    registers: dict[int, int] = field(default_factory=dict)
    sam_mode: int | None = None
    field_on: bool = False
    max_retries: tuple[int, int, int] = (0xFF, 0x01, 0xFF)
    targets: list[SimTag] = field(default_factory=list)
    last_error: int = STATUS_OK
    wake_sources: int | None = None
    """Set by PowerDown: the wake-up enable bits (bit 4 = HSU) until the chip sleeps."""
    gpio: tuple[int, int] = (0x3F, 0x06)

    def execute(self, data: bytes, now: float) -> Outcome:
        """Run one command; ``data`` is PD0…PDn of the command frame."""
        if not data:
            return SYNTAX_ERROR
        code, params = data[0], data[1:]
        if code in RF_COMMANDS and self.faults.antenna is AntennaMode.TIMEOUT:
            return Deferred(code, lambda: None)
        if code in RF_COMMANDS and self.faults.antenna is AntennaMode.ERROR:
            return SYNTAX_ERROR
        handler = _HANDLERS.get(code)
        if handler is None:
            return SYNTAX_ERROR
        return handler(self, params, now)

    # ----------------------------------------------------------------- RF state

    def overcurrent(self) -> bool:
        """True (and noted as the last error) while the antenna drivers are shut down."""
        if self.faults.antenna is AntennaMode.OVERCURRENT:
            self.last_error = STATUS_OVERCURRENT
            return True
        return False

    def activate(self, max_targets: int, uid: bytes = b"") -> list[SimTag]:
        """One REQA/anticollision/select round: the tags that answer become the targets."""
        self.field_on = True
        self.targets = []
        if self.overcurrent():
            return []
        self.last_error = STATUS_OK
        candidates = self.antenna.awake()
        if uid:
            wanted = _strip_cascade(uid)
            candidates = [tag for tag in candidates if tag.uid == wanted]
        answering = self.faults.answering(candidates, len(self.antenna), self.rng)
        self.targets = answering[:max_targets]
        for tag in self.targets:
            tag.state = TagState.ACTIVE
        return self.targets

    def target(self, number: int) -> SimTag | None:
        """Initialised target number ``number`` (Tg, from 1)."""
        return self.targets[number - 1] if 1 <= number <= len(self.targets) else None

    def reachable(self, tag: SimTag) -> bool:
        """Whether a target would answer: still in the field and not halted."""
        return tag.uid in self.antenna and tag.state is not TagState.HALT

    # ----------------------------------------------------------------- miscellaneous commands

    def diagnose(self, params: bytes, now: float) -> Outcome:
        """Self-tests; libnfc's communication test (0x00) must echo its data."""
        if not params:
            return SYNTAX_ERROR
        test = params[0]
        if test == 0x00:  # communication line test: echo the test number and the data
            return b"\x01" + params
        if test in (0x01, 0x02):  # ROM and RAM self-tests
            return b"\x01\x00"
        if test == 0x06:  # attention request: is the first target still there?
            tag = self.target(1)
            present = tag is not None and self.reachable(tag)
            return bytes((0x01, STATUS_OK if present else STATUS_TIMEOUT))
        if test == 0x07 and len(params) == 2:  # antenna self-test
            return bytes((0x01, STATUS_OK if self.faults.antenna is None else 0x01))
        return SYNTAX_ERROR

    def get_firmware_version(self, params: bytes, now: float) -> Outcome:
        """IC, version, revision, supported protocols."""
        return b"\x03" + FIRMWARE

    def get_general_status(self, params: bytes, now: float) -> Outcome:
        """Last error, external field, the initialised targets, SAM status."""
        self.overcurrent()
        out = bytearray((0x05, self.last_error, 0x00, len(self.targets)))
        for number, _tag in enumerate(self.targets, start=1):
            out += bytes((number, 0x00, 0x00, 0x00))  # Tg, 106 kbps rx/tx, type A
        out.append(0x00)  # SAM status
        return bytes(out)

    def read_register(self, params: bytes, now: float) -> Outcome:
        """Values of the registers at the given 16-bit addresses (unwritten ones read 0)."""
        if not params or len(params) % 2:
            return SYNTAX_ERROR
        pairs = zip(params[::2], params[1::2], strict=True)
        return b"\x07" + bytes(self.registers.get(hi << 8 | lo, 0) for hi, lo in pairs)

    def write_register(self, params: bytes, now: float) -> Outcome:
        """Address/value triples."""
        if not params or len(params) % 3:
            return SYNTAX_ERROR
        for i in range(0, len(params), 3):
            self.registers[params[i] << 8 | params[i + 1]] = params[i + 2]
        return b"\x09"

    def read_gpio(self, params: bytes, now: float) -> Outcome:
        """P3, P7 and I0I1 port states."""
        return bytes((0x0D, *self.gpio, 0x00))

    def write_gpio(self, params: bytes, now: float) -> Outcome:
        """P3 and P7, each applied only when its validation bit (0x80) is set."""
        if len(params) != 2:
            return SYNTAX_ERROR
        p3, p7 = self.gpio
        if params[0] & 0x80:
            p3 = params[0] & 0x3F
        if params[1] & 0x80:
            p7 = params[1] & 0x06
        self.gpio = (p3, p7)
        return b"\x0f"

    def set_serial_baud_rate(self, params: bytes, now: float) -> Outcome:
        """Accepted (a pty has no baud rate)."""
        return b"\x11" if len(params) == 1 and params[0] <= 0x08 else SYNTAX_ERROR

    def set_parameters(self, params: bytes, now: float) -> Outcome:
        """One flags byte."""
        return b"\x13" if len(params) == 1 else SYNTAX_ERROR

    def sam_configuration(self, params: bytes, now: float) -> Outcome:
        """Normal mode also takes the chip out of LowVbat; virtual card mode needs a timeout."""
        if not params or not 0x01 <= params[0] <= 0x04 or (params[0] == 0x02 and len(params) < 2):
            return SYNTAX_ERROR
        self.sam_mode = params[0]
        return b"\x15"

    def power_down(self, params: bytes, now: float) -> Outcome:
        """Answer, then sleep until a wake-up source in the given bits fires."""
        if not params:
            return SYNTAX_ERROR
        self.wake_sources = params[0]
        return b"\x17\x00"

    def rf_configuration(self, params: bytes, now: float) -> Outcome:
        """RF field on/off (tags lose power when it goes off) and retry counts."""
        if not params or RF_CONFIG_LENGTHS.get(params[0]) != len(params) - 1:
            return SYNTAX_ERROR
        item, values = params[0], params[1:]
        if item == 0x01:
            self.field_on = bool(values[0] & 0x01)
            if not self.field_on:
                self.antenna.field_off()
                self.targets = []
        elif item == 0x05:
            self.max_retries = (values[0], values[1], values[2])
        return b"\x33"


def _until_aborted(code: int) -> Handler[Pn532Chip]:
    """A command that keeps the chip busy until the host aborts it with an ACK."""

    def run(chip: Pn532Chip, params: bytes, now: float) -> Outcome:
        return Deferred(code, lambda: None)

    return run


def _not_in_target_mode(code: int) -> Handler[Pn532Chip]:
    def reply(chip: Pn532Chip, params: bytes, now: float) -> Outcome:
        return bytes((code + 1, STATUS_NOT_ACCEPTABLE))

    return reply


_HANDLERS: dict[int, Handler[Pn532Chip]] = {
    0x00: Pn532Chip.diagnose,
    0x02: Pn532Chip.get_firmware_version,
    0x04: Pn532Chip.get_general_status,
    0x06: Pn532Chip.read_register,
    0x08: Pn532Chip.write_register,
    0x0C: Pn532Chip.read_gpio,
    0x0E: Pn532Chip.write_gpio,
    0x10: Pn532Chip.set_serial_baud_rate,
    0x12: Pn532Chip.set_parameters,
    0x14: Pn532Chip.sam_configuration,
    0x16: Pn532Chip.power_down,
    0x32: Pn532Chip.rf_configuration,
    0x58: _until_aborted(0x58),  # RFRegulationTest
    **INITIATOR_COMMANDS,
    0x8A: lambda chip, params, now: b"\x8b\x00",  # TgGetTargetStatus: no initiator, free
    0x8C: _until_aborted(0x8C),  # TgInitAsTarget: waits for an external initiator
    **{code: _not_in_target_mode(code) for code in (0x86, 0x88, 0x8E, 0x90, 0x92, 0x94)},
}
