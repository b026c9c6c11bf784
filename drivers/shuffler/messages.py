"""Payloads of the shuffler's requests and responses (docs/protocols/tsp1.md §3.3), both directions.

Each message is a frozen dataclass with ``encode()`` and a ``decode(payload)`` class method that
raises :class:`~drivers.tsp.payload.PayloadError` on a short payload and ignores trailing bytes;
most are a :class:`~drivers.tsp.layout.FlatMessage` (their fields, in order, are the payload).
Requests without a payload (IDENTIFY, GET_STATUS, PING, PRESENT, ABORT, GET_COUNTERS, GET_FAULTS)
have no class: their payload is empty. SET_CONFIG (``result``, 0 = applied), PRESENT and ABORT
(``ok``), DISPENSE_GROUP (``accepted``) and CLEAR_FAULT (``cleared``, a count) answer with the
shared one-byte :class:`~drivers.tsp.common.Result`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from drivers.shuffler.codes import (
    Capability,
    DeviceState,
    IdPolicy,
    Profile,
    ShuffleMode,
    StatusFlag,
)
from drivers.tsp.common import FaultRaised, IdentityHead
from drivers.tsp.layout import (
    U8,
    U16,
    U32,
    U64,
    Bool,
    Bytes16,
    Bytes32,
    Counted,
    FlatMessage,
    Meter,
    enum_of,
    flags_of,
    list_of,
    u8,
    u16,
    u32,
)

# --------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class Identity(IdentityHead):
    """IDENTIFY response: who the device is and what it can do."""

    caps: Annotated[Capability, flags_of(Capability, u32)]
    max_payload: U16


@dataclass(frozen=True, slots=True)
class Status(FlatMessage):
    """GET_STATUS and PING response (19 bytes)."""

    WHAT: ClassVar[str] = "status"
    state: Annotated[DeviceState | int, enum_of(DeviceState, u8)]
    flags: Annotated[StatusFlag, flags_of(StatusFlag, u16)]
    active_faults: U8
    shuffle_id: U32
    cards_in: U8
    cards_out: U8
    uptime_ms: U32
    boot_id: U32
    evt_queue: U8


@dataclass(frozen=True, slots=True)
class StartShuffleResult(FlatMessage):
    """START_SHUFFLE response."""

    WHAT: ClassVar[str] = "START_SHUFFLE response"
    accepted: Bool
    shuffle_id: U32


@dataclass(frozen=True, slots=True)
class TimeSyncResult(FlatMessage):
    """TIME_SYNC response: the device's clock before it was set."""

    WHAT: ClassVar[str] = "TIME_SYNC response"
    device_ms: U64


@dataclass(frozen=True, slots=True)
class DeckReveal(FlatMessage):
    """REVEAL_DECK response: the retired deck's order and the salt of its commitment."""

    WHAT: ClassVar[str] = "REVEAL_DECK response"
    shuffle_id: U32
    salt: Bytes16
    order: Counted


@dataclass(frozen=True, slots=True)
class Counters(FlatMessage):
    """GET_COUNTERS response: the hard count meters, then the device's link counters."""

    WHAT: ClassVar[str] = "GET_COUNTERS response"
    shuffles: Meter = 0
    ok: Meter = 0
    failed: Meter = 0
    jams: Meter = 0
    misreads: Meter = 0
    cards: Meter = 0
    lid_opens: Meter = 0
    power_cycles: Meter = 0
    crc_errors: Meter = 0
    naks: Meter = 0
    retransmits: Meter = 0


@dataclass(frozen=True, slots=True)
class ChallengeResult(FlatMessage):
    """FW_CHALLENGE response: ``mac`` = HMAC-SHA256(key=nonce, msg=firmware image)."""

    WHAT: ClassVar[str] = "FW_CHALLENGE response"
    algo: U8
    mac: Bytes32


@dataclass(frozen=True, slots=True)
class FaultList(FlatMessage):
    """GET_FAULTS response: ``n u8`` then each active fault in the FAULT_RAISED layout."""

    WHAT: ClassVar[str] = "GET_FAULTS response"
    faults: Annotated[tuple[FaultRaised, ...], list_of(FaultRaised)]


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class PlanStep(FlatMessage):
    """One group of the default dispense plan."""

    WHAT: ClassVar[str] = "SET_CONFIG"
    count: U8
    purpose: U8


@dataclass(frozen=True, slots=True)
class SetConfig(FlatMessage):
    """SET_CONFIG request (its response is ``result u8`` followed by this payload echoed)."""

    WHAT: ClassVar[str] = "SET_CONFIG"
    profile: Annotated[Profile | int, u8] = Profile.HAND_FORMING
    deck_size: U8 = 52
    jokers: U8 = 0
    id_policy: Annotated[IdPolicy | int, u8] = IdPolicy.WITHHOLD
    plan: Annotated[tuple[PlanStep, ...], list_of(PlanStep)] = ()


@dataclass(frozen=True, slots=True)
class StartShuffle(FlatMessage):
    """START_SHUFFLE request."""

    WHAT: ClassVar[str] = "START_SHUFFLE"
    mode: U8 = ShuffleMode.SHUFFLE
    host_ref: U32 = 0


@dataclass(frozen=True, slots=True)
class DispenseGroup(FlatMessage):
    """DISPENSE_GROUP request: the host decides purpose and seat of each group."""

    WHAT: ClassVar[str] = "DISPENSE_GROUP"
    shuffle_id: U32
    group: U8
    count: U8
    purpose: U8
    seat: U8


@dataclass(frozen=True, slots=True)
class ClearFault(FlatMessage):
    """CLEAR_FAULT request (0xFFFF clears every clearable fault)."""

    WHAT: ClassVar[str] = "CLEAR_FAULT"
    fault_id: U16 = 0xFFFF


@dataclass(frozen=True, slots=True)
class TimeSync(FlatMessage):
    """TIME_SYNC request: the host's clock in Unix milliseconds."""

    WHAT: ClassVar[str] = "TIME_SYNC"
    unix_ms: U64


@dataclass(frozen=True, slots=True)
class RevealDeck(FlatMessage):
    """REVEAL_DECK request."""

    WHAT: ClassVar[str] = "REVEAL_DECK"
    shuffle_id: U32


@dataclass(frozen=True, slots=True)
class FwChallenge(FlatMessage):
    """FW_CHALLENGE request: a fresh 16-byte nonce."""

    WHAT: ClassVar[str] = "FW_CHALLENGE"
    nonce: Bytes16
