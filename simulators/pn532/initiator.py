"""The simulated PN532's initiator commands: activating tags and talking to them.

Only type A tags exist in the simulated field, so activations at 212/424 kbps (FeliCa), 106 kbps
type B and Jewel find nothing, DEP commands find no peer, and raw exchanges with absent targets
time out, just as a real module with only MIFARE-type cards in front of it behaves.
"""

from __future__ import annotations

from typing import Final, Protocol

from simulators.pn532.outcome import (
    STATUS_AUTH_ERROR,
    STATUS_NOT_ACCEPTABLE,
    STATUS_OK,
    STATUS_OVERCURRENT,
    STATUS_TIMEOUT,
    SYNTAX_ERROR,
    Deferred,
    Handler,
    Outcome,
)
from simulators.pn532.tags import Antenna, SimTag, TagState

POLL_PERIOD_S: Final = 0.150
"""InAutoPoll's Period parameter counts in units of 150 ms."""

#: InAutoPoll target types a type A tag without ISO-DEP satisfies (generic 106 kbps, MIFARE).
AUTOPOLL_TYPE_A: Final = frozenset({0x00, 0x10})


class Initiator(Protocol):
    """What the initiator commands use of the chip (:class:`~simulators.pn532.chip.Pn532Chip`,
    which imports them to run them)."""

    targets: list[SimTag]

    @property
    def antenna(self) -> Antenna: ...
    @property
    def max_retries(self) -> tuple[int, int, int]: ...
    def activate(self, max_targets: int, uid: bytes = b"") -> list[SimTag]: ...
    def target(self, number: int) -> SimTag | None: ...
    def overcurrent(self) -> bool: ...
    def reachable(self, tag: SimTag) -> bool: ...


def in_list_passive_target(chip: Initiator, params: bytes, now: float) -> Outcome:
    """Activate up to MaxTg targets; with endless retries, wait until one comes."""
    if len(params) < 2 or params[0] not in (1, 2) or params[1] > 0x04:
        return SYNTAX_ERROR
    max_targets, modulation, uid = params[0], params[1], params[2:]

    def attempt() -> bytes | None:
        found = chip.activate(max_targets, uid) if modulation == 0x00 else []
        if not found:
            return None
        data = b"".join(tag.target_data(n) for n, tag in enumerate(found, start=1))
        return bytes((0x4B, len(found))) + data

    result = attempt()
    if result is not None:
        return result
    if chip.max_retries[2] == 0xFF:  # retry for ever, until a tag comes or the host aborts
        return Deferred(0x4A, attempt)
    return b"\x4b\x00"


def in_auto_poll(chip: Initiator, params: bytes, now: float) -> Outcome:
    """Poll for the given target types, PollNr times (0xFF: for ever), every Period × 150 ms."""
    if len(params) < 3 or params[0] == 0 or not 0x01 <= params[1] <= 0x0F or len(params) > 17:
        return SYNTAX_ERROR
    polls, period, types = params[0], params[1], params[2:]

    def attempt() -> bytes | None:
        kind = next((t for t in types if t in AUTOPOLL_TYPE_A), None)
        found = chip.activate(2) if kind is not None else []
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


def in_data_exchange(chip: Initiator, params: bytes, now: float) -> Outcome:
    """Send a command to an activated target and return its answer."""
    if not params:
        return SYNTAX_ERROR
    tag = chip.target(params[0] & 0x0F)
    if tag is None:
        return bytes((0x41, STATUS_NOT_ACCEPTABLE))
    if chip.overcurrent():
        return bytes((0x41, STATUS_OVERCURRENT))
    command = params[1:]
    if not chip.reachable(tag):
        return bytes((0x41, STATUS_TIMEOUT))
    if not tag.is_ntag and command[:1] in (b"\x60", b"\x61"):
        tag.state = TagState.IDLE  # no key matches: the card drops out of the session
        return bytes((0x41, STATUS_AUTH_ERROR))
    answer = tag.transceive(command)
    if answer is None:
        tag.state = TagState.IDLE
        return bytes((0x41, STATUS_TIMEOUT))
    return bytes((0x41, STATUS_OK)) + answer


def in_communicate_thru(chip: Initiator, params: bytes, now: float) -> Outcome:
    """Raw exchange with the first target.

    No data is legal: the reader only listens (libnfc probes for NFC Barcode tags, which talk
    first). Type A tags never talk first, so that times out.
    """
    if chip.overcurrent():
        return bytes((0x43, STATUS_OVERCURRENT))
    tag = chip.target(1)
    answer = tag.transceive(params) if tag is not None and chip.reachable(tag) else None
    if answer is None:
        return bytes((0x43, STATUS_TIMEOUT))
    return bytes((0x43, STATUS_OK)) + answer


def _halt(chip: Initiator, params: bytes, reply: int, *, release: bool) -> Outcome:
    if len(params) != 1:
        return SYNTAX_ERROR
    number = params[0]
    tag = chip.target(number)
    chosen = list(chip.targets) if number == 0 else [tag] if tag is not None else []
    if number and not chosen:
        return bytes((reply, STATUS_NOT_ACCEPTABLE))
    for target in chosen:
        if target.uid in chip.antenna:
            target.state = TagState.HALT  # the PN532 sends HLTA to MIFARE-type targets
    if release:
        chip.targets = [t for t in chip.targets if t not in chosen]
    return bytes((reply, STATUS_OK))


def in_deselect(chip: Initiator, params: bytes, now: float) -> Outcome:
    """Halt a target (or all with 0); the chip keeps it for InSelect."""
    return _halt(chip, params, 0x45, release=False)


def in_release(chip: Initiator, params: bytes, now: float) -> Outcome:
    """Halt and forget a target (or all with 0)."""
    return _halt(chip, params, 0x53, release=True)


def in_select(chip: Initiator, params: bytes, now: float) -> Outcome:
    """Wake a deselected target again (WUPA, then select)."""
    if len(params) != 1:
        return SYNTAX_ERROR
    tag = chip.target(params[0])
    if tag is None:
        return bytes((0x55, STATUS_NOT_ACCEPTABLE))
    if tag.uid not in chip.antenna or chip.overcurrent():
        return bytes((0x55, STATUS_TIMEOUT))
    tag.state = TagState.ACTIVE
    return bytes((0x55, STATUS_OK))


def _status_only(code: int, status: int) -> Handler[Initiator]:
    """A command that, in this field, can only answer with one status byte."""

    def reply(chip: Initiator, params: bytes, now: float) -> Outcome:
        return bytes((code + 1, status))

    return reply


INITIATOR_COMMANDS: Final[dict[int, Handler[Initiator]]] = {
    0x40: in_data_exchange,
    0x42: in_communicate_thru,
    0x44: in_deselect,
    0x46: _status_only(0x46, STATUS_TIMEOUT),  # InJumpForPSL: no NFC-DEP peer answers
    0x4A: in_list_passive_target,
    0x4E: _status_only(0x4E, STATUS_NOT_ACCEPTABLE),  # InPSL: no DEP target to talk to
    0x50: _status_only(0x50, STATUS_NOT_ACCEPTABLE),  # InATR: likewise
    0x52: in_release,
    0x54: in_select,
    0x56: _status_only(0x56, STATUS_TIMEOUT),  # InJumpForDEP
    0x60: in_auto_poll,
}

#: Commands that need the RF front end (what a broken antenna breaks).
RF_COMMANDS: Final = frozenset(INITIATOR_COMMANDS)
