"""Payloads of the shuffler's requests and responses (docs/protocols/tsp1.md §3.3), both directions.

Each message is a frozen dataclass with ``encode()`` and a ``decode(payload)`` class method that
raises :class:`~drivers.tsp.payload.PayloadError` on a short payload and ignores trailing bytes.
Requests without a payload (IDENTIFY, GET_STATUS, PING, PRESENT, ABORT, GET_COUNTERS, GET_FAULTS)
have no class: their payload is empty. SET_CONFIG (``result``, 0 = applied), PRESENT and ABORT
(``ok``), DISPENSE_GROUP (``accepted``) and CLEAR_FAULT (``cleared``, a count) answer with the
shared one-byte :class:`~drivers.tsp.common.Result`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from drivers.shuffler.codes import (
    Capability,
    DeviceState,
    IdPolicy,
    Profile,
    ShuffleMode,
    StatusFlag,
)
from drivers.tsp.common import FaultRaised, IdentityHead, read_identity_head
from drivers.tsp.payload import PayloadReader, PayloadWriter

# --------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class Identity(IdentityHead):
    """IDENTIFY response: who the device is and what it can do."""

    caps: Capability
    max_payload: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return self.head().u32(int(self.caps)).u16(self.max_payload).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "IDENTIFY response")
        return cls(*read_identity_head(r), Capability(r.u32("caps")), r.u16("max_payload"))


@dataclass(frozen=True, slots=True)
class Status:
    """GET_STATUS and PING response (19 bytes)."""

    state: DeviceState | int
    flags: StatusFlag
    active_faults: int
    shuffle_id: int
    cards_in: int
    cards_out: int
    uptime_ms: int
    boot_id: int
    evt_queue: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return (
            PayloadWriter()
            .u8(int(self.state))
            .u16(int(self.flags))
            .u8(self.active_faults)
            .u32(self.shuffle_id)
            .u8(self.cards_in)
            .u8(self.cards_out)
            .u32(self.uptime_ms)
            .u32(self.boot_id)
            .u8(self.evt_queue)
            .build()
        )

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "status")
        state = r.u8("state")
        return cls(
            DeviceState(state) if state in DeviceState._value2member_map_ else state,
            StatusFlag(r.u16("flags")),
            r.u8("active_faults"),
            r.u32("shuffle_id"),
            r.u8("cards_in"),
            r.u8("cards_out"),
            r.u32("uptime_ms"),
            r.u32("boot_id"),
            r.u8("evt_queue"),
        )


@dataclass(frozen=True, slots=True)
class StartShuffleResult:
    """START_SHUFFLE response."""

    accepted: bool
    shuffle_id: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u8(int(self.accepted)).u32(self.shuffle_id).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "START_SHUFFLE response")
        return cls(bool(r.u8("accepted")), r.u32("shuffle_id"))


@dataclass(frozen=True, slots=True)
class TimeSyncResult:
    """TIME_SYNC response: the device's clock before it was set."""

    device_ms: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u64(self.device_ms).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        return cls(PayloadReader(payload, "TIME_SYNC response").u64("device_ms"))


@dataclass(frozen=True, slots=True)
class DeckReveal:
    """REVEAL_DECK response: the retired deck's order and the salt of its commitment."""

    shuffle_id: int
    salt: bytes
    order: bytes

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u32(self.shuffle_id).raw(self.salt).counted(self.order).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "REVEAL_DECK response")
        return cls(r.u32("shuffle_id"), r.raw(16, "salt"), r.counted("order"))


#: GET_COUNTERS fields in wire order: the device meters, then its link counters.
COUNTER_FIELDS = (
    "shuffles",
    "ok",
    "failed",
    "jams",
    "misreads",
    "cards",
    "lid_opens",
    "power_cycles",
    "crc_errors",
    "naks",
    "retransmits",
)


@dataclass(frozen=True, slots=True)
class Counters:
    """GET_COUNTERS response: the hard count meters and the device's link counters."""

    shuffles: int = 0
    ok: int = 0
    failed: int = 0
    jams: int = 0
    misreads: int = 0
    cards: int = 0
    lid_opens: int = 0
    power_cycles: int = 0
    crc_errors: int = 0
    naks: int = 0
    retransmits: int = 0

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter()
        for name in COUNTER_FIELDS:
            w.u32(getattr(self, name) & 0xFFFFFFFF)
        return w.build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "GET_COUNTERS response")
        return cls(*(r.u32(name) for name in COUNTER_FIELDS))


@dataclass(frozen=True, slots=True)
class ChallengeResult:
    """FW_CHALLENGE response: ``mac`` = HMAC-SHA256(key=nonce, msg=firmware image)."""

    algo: int
    mac: bytes

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u8(self.algo).raw(self.mac).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "FW_CHALLENGE response")
        return cls(r.u8("algo"), r.raw(32, "mac"))


@dataclass(frozen=True, slots=True)
class FaultList:
    """GET_FAULTS response: ``n u8`` then each active fault in the FAULT_RAISED layout."""

    faults: tuple[FaultRaised, ...]

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u8(len(self.faults))
        for fault in self.faults:
            w.raw(fault.encode())
        return w.build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "GET_FAULTS response")
        count = r.u8("n")
        return cls(tuple(FaultRaised.read(r) for _ in range(count)))


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One group of the default dispense plan."""

    count: int
    purpose: int


@dataclass(frozen=True, slots=True)
class SetConfig:
    """SET_CONFIG request (its response is ``result u8`` followed by this payload echoed)."""

    profile: Profile | int = Profile.HAND_FORMING
    deck_size: int = 52
    jokers: int = 0
    id_policy: IdPolicy | int = IdPolicy.WITHHOLD
    plan: tuple[PlanStep, ...] = ()

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u8(int(self.profile)).u8(self.deck_size).u8(self.jokers)
        w.u8(int(self.id_policy)).u8(len(self.plan))
        for step in self.plan:
            w.u8(step.count).u8(step.purpose)
        return w.build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "SET_CONFIG")
        profile, deck_size, jokers, policy = (r.u8(f) for f in ("profile", "deck", "jokers", "id"))
        plan = tuple(PlanStep(r.u8("count"), r.u8("purpose")) for _ in range(r.u8("n")))
        return cls(profile, deck_size, jokers, policy, plan)


@dataclass(frozen=True, slots=True)
class StartShuffle:
    """START_SHUFFLE request."""

    mode: ShuffleMode | int = ShuffleMode.SHUFFLE
    host_ref: int = 0

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u8(int(self.mode)).u32(self.host_ref).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "START_SHUFFLE")
        return cls(r.u8("mode"), r.u32("host_ref"))


@dataclass(frozen=True, slots=True)
class DispenseGroup:
    """DISPENSE_GROUP request: the host decides purpose and seat of each group."""

    shuffle_id: int
    group: int
    count: int
    purpose: int
    seat: int

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u32(self.shuffle_id)
        return w.u8(self.group).u8(self.count).u8(self.purpose).u8(self.seat).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "DISPENSE_GROUP")
        return cls(r.u32("shuffle_id"), r.u8("group"), r.u8("count"), r.u8("purpose"), r.u8("seat"))


@dataclass(frozen=True, slots=True)
class ClearFault:
    """CLEAR_FAULT request (0xFFFF clears every clearable fault)."""

    fault_id: int = 0xFFFF

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u16(self.fault_id).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        return cls(PayloadReader(payload, "CLEAR_FAULT").u16("fault_id"))


@dataclass(frozen=True, slots=True)
class TimeSync:
    """TIME_SYNC request: the host's clock in Unix milliseconds."""

    unix_ms: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u64(self.unix_ms).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        return cls(PayloadReader(payload, "TIME_SYNC").u64("unix_ms"))


@dataclass(frozen=True, slots=True)
class RevealDeck:
    """REVEAL_DECK request."""

    shuffle_id: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u32(self.shuffle_id).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        return cls(PayloadReader(payload, "REVEAL_DECK").u32("shuffle_id"))


@dataclass(frozen=True, slots=True)
class FwChallenge:
    """FW_CHALLENGE request: a fresh 16-byte nonce."""

    nonce: bytes

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().raw(self.nonce).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        return cls(PayloadReader(payload, "FW_CHALLENGE").raw(16, "nonce"))
