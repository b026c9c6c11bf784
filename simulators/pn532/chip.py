"""The PN532 command set as the simulated chip executes it (NXP UM0701-02, chapter 7).

:meth:`Pn532Chip.execute` takes the data of one command frame (``PD0`` = command code) and
returns what the chip sends back: response data (the code + 1, then the output parameters), the
syntax-error frame for malformed or unknown commands, or a :class:`Deferred` for commands that
keep running (InListPassiveTarget with endless retries, InAutoPoll, target mode) until a tag
shows up, a deadline passes, or the host aborts them with an ACK.

Only type A tags exist in the simulated field, so activations at 212/424 kbps (FeliCa), 106 kbps
type B and Jewel find nothing and raw exchanges with absent targets time out, just as a real
module with only MIFARE-type cards in front of it behaves.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from simulators.pn532.faults import AntennaMode, Faults
from simulators.pn532.tags import CASCADE_TAG, Antenna, SimTag, TagState

#: GetFirmwareVersion answer of a PN532 v1.6: IC 0x32, version 1, revision 6, support A|B|18092.
FIRMWARE: Final = bytes((0x32, 0x01, 0x06, 0x07))

STATUS_OK: Final = 0x00
STATUS_TIMEOUT: Final = 0x01
STATUS_AUTH_ERROR: Final = 0x14
STATUS_NOT_ACCEPTABLE: Final = 0x27
STATUS_OVERCURRENT: Final = 0x2D

POLL_PERIOD_S: Final = 0.150
"""InAutoPoll's Period parameter counts in units of 150 ms."""

#: Commands that use the RF front end (what a broken antenna breaks).
RF_COMMANDS: Final = frozenset({0x40, 0x42, 0x46, 0x4A, 0x4E, 0x50, 0x54, 0x56, 0x60})

#: RFConfiguration items and the length of their configuration data.
RF_CONFIG_LENGTHS: Final = {0x01: 1, 0x02: 3, 0x04: 1, 0x05: 3, 0x0A: 11, 0x0B: 8, 0x0C: 3, 0x0D: 9}

#: InAutoPoll target types a type A tag without ISO-DEP satisfies (generic 106 kbps, MIFARE).
AUTOPOLL_TYPE_A: Final = frozenset({0x00, 0x10})


class SyntaxErrorReply:
    """The chip answers with the application-level error frame."""

    def __repr__(self) -> str:
        return "SYNTAX_ERROR"


SYNTAX_ERROR: Final = SyntaxErrorReply()


@dataclass(slots=True)
class Deferred:
    """A command still running.

    ``attempt`` is called whenever something may have changed (a tag placed, time passing); the
    command completes with its result. At ``deadline`` it completes with ``at_deadline`` instead;
    with no deadline it runs until the host aborts it.
    """

    code: int
    attempt: Callable[[], bytes | None]
    deadline: float | None = None
    at_deadline: bytes = b""


Outcome = bytes | SyntaxErrorReply | Deferred


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

    # ----------------------------------------------------------------- activation

    def _overcurrent(self) -> bool:
        if self.faults.antenna is AntennaMode.OVERCURRENT:
            self.last_error = STATUS_OVERCURRENT
            return True
        return False

    def activate(self, max_targets: int, uid: bytes = b"") -> list[SimTag]:
        """One REQA/anticollision/select round: the tags that answer become the targets."""
        self.field_on = True
        self.targets = []
        if self._overcurrent():
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

    def _target(self, number: int) -> SimTag | None:
        return self.targets[number - 1] if 1 <= number <= len(self.targets) else None

    def _reachable(self, tag: SimTag) -> bool:
        return tag.uid in self.antenna and tag.state is not TagState.HALT

    # ----------------------------------------------------------------- miscellaneous commands

    def diagnose(self, params: bytes, now: float) -> Outcome:
        if not params:
            return SYNTAX_ERROR
        test = params[0]
        if test == 0x00:  # communication line test: echo the test number and the data
            return b"\x01" + params
        if test in (0x01, 0x02):  # ROM and RAM self-tests
            return b"\x01\x00"
        if test == 0x06:  # attention request: is the first target still there?
            tag = self._target(1)
            present = tag is not None and self._reachable(tag)
            return bytes((0x01, STATUS_OK if present else STATUS_TIMEOUT))
        if test == 0x07 and len(params) == 2:  # antenna self-test
            return bytes((0x01, STATUS_OK if self.faults.antenna is None else 0x01))
        return SYNTAX_ERROR

    def get_firmware_version(self, params: bytes, now: float) -> Outcome:
        return b"\x03" + FIRMWARE

    def get_general_status(self, params: bytes, now: float) -> Outcome:
        self._overcurrent()
        out = bytearray((0x05, self.last_error, 0x00, len(self.targets)))
        for number, _tag in enumerate(self.targets, start=1):
            out += bytes((number, 0x00, 0x00, 0x00))  # Tg, 106 kbps rx/tx, type A
        out.append(0x00)  # SAM status
        return bytes(out)

    def read_register(self, params: bytes, now: float) -> Outcome:
        if not params or len(params) % 2:
            return SYNTAX_ERROR
        pairs = zip(params[::2], params[1::2], strict=True)
        return b"\x07" + bytes(self.registers.get(hi << 8 | lo, 0) for hi, lo in pairs)

    def write_register(self, params: bytes, now: float) -> Outcome:
        if not params or len(params) % 3:
            return SYNTAX_ERROR
        for i in range(0, len(params), 3):
            self.registers[params[i] << 8 | params[i + 1]] = params[i + 2]
        return b"\x09"

    def read_gpio(self, params: bytes, now: float) -> Outcome:
        return bytes((0x0D, *self.gpio, 0x00))

    def write_gpio(self, params: bytes, now: float) -> Outcome:
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
        return b"\x11" if len(params) == 1 and params[0] <= 0x08 else SYNTAX_ERROR

    def set_parameters(self, params: bytes, now: float) -> Outcome:
        return b"\x13" if len(params) == 1 else SYNTAX_ERROR

    def sam_configuration(self, params: bytes, now: float) -> Outcome:
        if not params or not 0x01 <= params[0] <= 0x04 or (params[0] == 0x02 and len(params) < 2):
            return SYNTAX_ERROR
        self.sam_mode = params[0]
        return b"\x15"

    def power_down(self, params: bytes, now: float) -> Outcome:
        if not params:
            return SYNTAX_ERROR
        self.wake_sources = params[0]
        return b"\x17\x00"

    def rf_configuration(self, params: bytes, now: float) -> Outcome:
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

    # ----------------------------------------------------------------- initiator commands

    def in_list_passive_target(self, params: bytes, now: float) -> Outcome:
        if len(params) < 2 or params[0] not in (1, 2) or params[1] > 0x04:
            return SYNTAX_ERROR
        max_targets, modulation, uid = params[0], params[1], params[2:]

        def attempt() -> bytes | None:
            found = self.activate(max_targets, uid) if modulation == 0x00 else []
            if not found:
                return None
            data = b"".join(tag.target_data(n) for n, tag in enumerate(found, start=1))
            return bytes((0x4B, len(found))) + data

        result = attempt()
        if result is not None:
            return result
        if self.max_retries[2] == 0xFF:  # retry for ever, until a tag comes or the host aborts
            return Deferred(0x4A, attempt)
        return b"\x4b\x00"

    def in_auto_poll(self, params: bytes, now: float) -> Outcome:
        if len(params) < 3 or params[0] == 0 or not 0x01 <= params[1] <= 0x0F:
            return SYNTAX_ERROR
        polls, period, types = params[0], params[1], params[2:]
        if len(types) > 15:
            return SYNTAX_ERROR

        def attempt() -> bytes | None:
            kind = next((t for t in types if t in AUTOPOLL_TYPE_A), None)
            found = self.activate(2) if kind is not None else []
            if kind is None or not found:
                return None
            out = bytearray((0x61, len(found)))
            for number, tag in enumerate(found, start=1):
                data = tag.target_data(number)
                out += bytes((kind, len(data))) + data
            return bytes(out)

        result = attempt()
        if result is not None:
            return result
        deadline = None if polls == 0xFF else now + polls * len(types) * period * POLL_PERIOD_S
        return Deferred(0x60, attempt, deadline, b"\x61\x00")

    def in_data_exchange(self, params: bytes, now: float) -> Outcome:
        if not params:
            return SYNTAX_ERROR
        tag = self._target(params[0] & 0x0F)
        if tag is None:
            return bytes((0x41, STATUS_NOT_ACCEPTABLE))
        if self._overcurrent():
            return bytes((0x41, STATUS_OVERCURRENT))
        command = params[1:]
        if not self._reachable(tag):
            return bytes((0x41, STATUS_TIMEOUT))
        if not tag.is_ntag and command[:1] in (b"\x60", b"\x61"):
            tag.state = TagState.IDLE  # no key matches: the card drops out of the session
            return bytes((0x41, STATUS_AUTH_ERROR))
        answer = tag.transceive(command)
        if answer is None:
            tag.state = TagState.IDLE
            return bytes((0x41, STATUS_TIMEOUT))
        return bytes((0x41, STATUS_OK)) + answer

    def in_communicate_thru(self, params: bytes, now: float) -> Outcome:
        # No data is legal: the reader only listens (libnfc probes for NFC Barcode tags, which
        # talk first). Type A tags never talk first, so that times out.
        if self._overcurrent():
            return bytes((0x43, STATUS_OVERCURRENT))
        tag = self._target(1)
        answer = tag.transceive(params) if tag is not None and self._reachable(tag) else None
        if answer is None:
            return bytes((0x43, STATUS_TIMEOUT))
        return bytes((0x43, STATUS_OK)) + answer

    def _halt(self, params: bytes, reply: int, *, release: bool) -> Outcome:
        if len(params) != 1:
            return SYNTAX_ERROR
        number = params[0]
        chosen = self.targets if number == 0 else [t for t in [self._target(number)] if t]
        if number and not chosen:
            return bytes((reply, STATUS_NOT_ACCEPTABLE))
        for tag in chosen:
            if tag.uid in self.antenna:
                tag.state = TagState.HALT  # the PN532 sends HLTA to MIFARE-type targets
        if release:
            self.targets = [t for t in self.targets if t not in chosen]
        return bytes((reply, STATUS_OK))

    def in_deselect(self, params: bytes, now: float) -> Outcome:
        return self._halt(params, 0x45, release=False)

    def in_release(self, params: bytes, now: float) -> Outcome:
        return self._halt(params, 0x53, release=True)

    def in_select(self, params: bytes, now: float) -> Outcome:
        if len(params) != 1:
            return SYNTAX_ERROR
        tag = self._target(params[0])
        if tag is None:
            return bytes((0x55, STATUS_NOT_ACCEPTABLE))
        if tag.uid not in self.antenna or self._overcurrent():
            return bytes((0x55, STATUS_TIMEOUT))
        tag.state = TagState.ACTIVE  # WUPA wakes a halted tag, then select
        return bytes((0x55, STATUS_OK))


def _status_only(code: int, status: int) -> Callable[[Pn532Chip, bytes, float], Outcome]:
    """A command that, in this field, can only answer with one status byte."""

    def reply(chip: Pn532Chip, params: bytes, now: float) -> Outcome:
        return bytes((code + 1, status))

    return reply


def _until_aborted(code: int) -> Callable[[Pn532Chip, bytes, float], Outcome]:
    """A command that keeps the chip busy until the host aborts it with an ACK."""

    def run(chip: Pn532Chip, params: bytes, now: float) -> Outcome:
        return Deferred(code, lambda: None)

    return run


_HANDLERS: dict[int, Callable[[Pn532Chip, bytes, float], Outcome]] = {
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
    0x40: Pn532Chip.in_data_exchange,
    0x42: Pn532Chip.in_communicate_thru,
    0x44: Pn532Chip.in_deselect,
    0x46: _status_only(0x46, STATUS_TIMEOUT),  # InJumpForPSL: no NFC-DEP peer answers
    0x4A: Pn532Chip.in_list_passive_target,
    0x4E: _status_only(0x4E, STATUS_NOT_ACCEPTABLE),  # InPSL: no DEP target to talk to
    0x50: _status_only(0x50, STATUS_NOT_ACCEPTABLE),  # InATR: likewise
    0x52: Pn532Chip.in_release,
    0x54: Pn532Chip.in_select,
    0x56: _status_only(0x56, STATUS_TIMEOUT),  # InJumpForDEP
    0x58: _until_aborted(0x58),  # RFRegulationTest
    0x60: Pn532Chip.in_auto_poll,
    0x8A: lambda chip, params, now: b"\x8b\x00",  # TgGetTargetStatus: no initiator, free
    0x8C: _until_aborted(0x8C),  # TgInitAsTarget: waits for an external initiator
    **{
        code: _status_only(code, STATUS_NOT_ACCEPTABLE)  # target-mode commands, not in target mode
        for code in (0x86, 0x88, 0x8E, 0x90, 0x92, 0x94)
    },
}
