"""Payloads of the shuffler's events (docs/protocols/tsp1.md §3.4), both directions.

:func:`decode_event` turns an event frame into its dataclass; unknown types come back as
:class:`UnknownEvent` so a newer device never breaks an older host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Self

from drivers.shuffler.codes import MsgType
from drivers.tsp import common
from drivers.tsp.payload import PayloadReader, PayloadWriter


@dataclass(frozen=True, slots=True)
class StateChanged:
    """STATE_CHANGED."""

    TYPE: ClassVar[MsgType] = MsgType.STATE_CHANGED
    state: int
    prev: int
    flags: int
    shuffle_id: int

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u8(self.state).u8(self.prev)
        return w.u16(self.flags).u32(self.shuffle_id).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "STATE_CHANGED")
        return cls(r.u8("state"), r.u8("prev"), r.u16("flags"), r.u32("shuffle_id"))


@dataclass(frozen=True, slots=True)
class ShuffleStarted:
    """SHUFFLE_STARTED."""

    TYPE: ClassVar[MsgType] = MsgType.SHUFFLE_STARTED
    shuffle_id: int
    mode: int
    host_ref: int
    trigger: int

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u32(self.shuffle_id).u8(self.mode)
        return w.u32(self.host_ref).u8(self.trigger).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "SHUFFLE_STARTED")
        return cls(r.u32("shuffle_id"), r.u8("mode"), r.u32("host_ref"), r.u8("trigger"))


@dataclass(frozen=True, slots=True)
class DeckCheck:
    """DECK_CHECK: what the device counted and recognised (missing/duplicate are card codes)."""

    TYPE: ClassVar[MsgType] = MsgType.DECK_CHECK
    shuffle_id: int
    verdict: int
    counted: int
    recognized: int
    unreadable: int
    foreign: int
    missing: bytes = b""
    duplicates: bytes = b""

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u32(self.shuffle_id).u8(self.verdict).u8(self.counted)
        w.u8(self.recognized).u8(self.unreadable).u8(self.foreign)
        return w.counted(self.missing).counted(self.duplicates).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "DECK_CHECK")
        return cls(
            r.u32("shuffle_id"),
            r.u8("verdict"),
            r.u8("counted"),
            r.u8("recognized"),
            r.u8("unreadable"),
            r.u8("foreign"),
            r.counted("missing"),
            r.counted("dup"),
        )


@dataclass(frozen=True, slots=True)
class ShuffleComplete:
    """SHUFFLE_COMPLETE: the result and the deck commitment (docs/protocols/tsp1.md §3.6)."""

    TYPE: ClassVar[MsgType] = MsgType.SHUFFLE_COMPLETE
    shuffle_id: int
    result: int
    duration_ms: int
    card_count: int
    commitment: bytes

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u32(self.shuffle_id).u8(self.result).u32(self.duration_ms)
        return w.u8(self.card_count).raw(self.commitment).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "SHUFFLE_COMPLETE")
        return cls(
            r.u32("shuffle_id"),
            r.u8("result"),
            r.u32("duration_ms"),
            r.u8("card_count"),
            r.raw(32, "commitment"),
        )


@dataclass(frozen=True, slots=True)
class DeckMoved:
    """DECK_MOVED."""

    TYPE: ClassVar[MsgType] = MsgType.DECK_MOVED
    shuffle_id: int
    what: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u32(self.shuffle_id).u8(self.what).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "DECK_MOVED")
        return cls(r.u32("shuffle_id"), r.u8("what"))


@dataclass(frozen=True, slots=True)
class GroupDispensedEvent:
    """GROUP_DISPENSED: card codes are 0xFD while identities are withheld."""

    TYPE: ClassVar[MsgType] = MsgType.GROUP_DISPENSED
    shuffle_id: int
    group: int
    purpose: int
    seat: int
    cards: bytes
    remaining: int

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u32(self.shuffle_id).u8(self.group).u8(self.purpose).u8(self.seat)
        return w.counted(self.cards).u8(self.remaining).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "GROUP_DISPENSED")
        return cls(
            r.u32("shuffle_id"),
            r.u8("group"),
            r.u8("purpose"),
            r.u8("seat"),
            r.counted("cards"),
            r.u8("remaining"),
        )


#: Shared by every TSP/1 message set (:mod:`drivers.tsp.common`).
FaultRaised = common.FaultRaised


#: Shared by every TSP/1 message set (:mod:`drivers.tsp.common`).
FaultCleared = common.FaultCleared


@dataclass(frozen=True, slots=True)
class OperatorInput:
    """OPERATOR_INPUT: a button on the device was pressed."""

    TYPE: ClassVar[MsgType] = MsgType.OPERATOR_INPUT
    button: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return bytes([self.button])

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        return cls(PayloadReader(payload, "OPERATOR_INPUT").u8("button"))


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event type this host does not know (acknowledged and reported, never fatal)."""

    type: int
    payload: bytes


DeviceEvent = (
    StateChanged
    | ShuffleStarted
    | DeckCheck
    | ShuffleComplete
    | DeckMoved
    | GroupDispensedEvent
    | FaultRaised
    | FaultCleared
    | OperatorInput
)

EVENT_CLASSES: dict[int, type[DeviceEvent]] = {
    cls.TYPE: cls
    for cls in (
        StateChanged,
        ShuffleStarted,
        DeckCheck,
        ShuffleComplete,
        DeckMoved,
        GroupDispensedEvent,
        FaultRaised,
        FaultCleared,
        OperatorInput,
    )
}


def decode_event(msg_type: int, payload: bytes) -> DeviceEvent | UnknownEvent:
    """The event in a frame; raise PayloadError when its payload is too short."""
    cls = EVENT_CLASSES.get(msg_type)
    if cls is None:
        return UnknownEvent(msg_type, payload)
    return cls.decode(payload)
