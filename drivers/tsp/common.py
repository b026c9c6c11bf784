"""The message pieces every TSP/1 message set shares: ERROR, FAULT_RAISED and FAULT_CLEARED.

The shuffler and the RFID reader give these the same type numbers and the same layouts, so one
codec serves both; each message set keeps its own fault-code names.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar, Literal, Self

from drivers.tsp.frame import TYPE_ERROR
from drivers.tsp.payload import PayloadReader, PayloadWriter

TYPE_FAULT_RAISED = 0x46
TYPE_FAULT_CLEARED = 0x47


class ErrorCode(IntEnum):
    """ERROR ``code``: why a device refused a request."""

    UNKNOWN_TYPE = 1
    BAD_LENGTH = 2
    BAD_STATE = 3
    BAD_ARG = 4
    BUSY = 5
    NOT_SUPPORTED = 6
    FAULT_ACTIVE = 7
    DENIED_BY_POLICY = 8


class Severity(IntEnum):
    """FAULT_RAISED ``severity``."""

    INFO = 1
    WARN = 2
    ERROR = 3
    CRITICAL = 4


class ClearedBy(IntEnum):
    """FAULT_CLEARED ``by``."""

    AUTO = 0
    OPERATOR = 1
    HOST = 2


SeverityName = Literal["info", "warn", "error", "critical"]
#: FAULT_RAISED severities as the core's DeviceFault spells them.
SEVERITY_NAMES: dict[int, SeverityName] = {1: "info", 2: "warn", 3: "error", 4: "critical"}


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """ERROR: the device refused a request."""

    TYPE: ClassVar[int] = TYPE_ERROR
    code: ErrorCode | int
    detail: str = ""

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u8(int(self.code)).text(self.detail).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes (a bare code is accepted)."""
        r = PayloadReader(payload, "ERROR")
        code = r.u8("code")
        detail = r.text("detail") if r.remaining else ""
        return cls(ErrorCode(code) if code in ErrorCode._value2member_map_ else code, detail)

    @property
    def name(self) -> str:
        """The code's name (its number when this host does not know it)."""
        return self.code.name if isinstance(self.code, ErrorCode) else str(self.code)


@dataclass(frozen=True, slots=True)
class FaultRaised:
    """FAULT_RAISED (also the layout of each entry of the shuffler's GET_FAULTS response)."""

    TYPE: ClassVar[int] = TYPE_FAULT_RAISED
    fault_id: int
    code: int
    severity: int
    flags: int
    card_index: int
    detail: str = ""

    def encode(self) -> bytes:
        """The payload bytes."""
        w = PayloadWriter().u16(self.fault_id).u16(self.code).u8(self.severity)
        return w.u8(self.flags).u8(self.card_index).text(self.detail).build()

    @classmethod
    def read(cls, r: PayloadReader) -> Self:
        """Read one fault from ``r`` (shared with the GET_FAULTS list)."""
        return cls(
            r.u16("fault_id"),
            r.u16("code"),
            r.u8("severity"),
            r.u8("flags"),
            r.u8("card_index"),
            r.text("detail"),
        )

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        return cls.read(PayloadReader(payload, "FAULT_RAISED"))


@dataclass(frozen=True, slots=True)
class FaultCleared:
    """FAULT_CLEARED."""

    TYPE: ClassVar[int] = TYPE_FAULT_CLEARED
    fault_id: int
    code: int
    by: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return PayloadWriter().u16(self.fault_id).u16(self.code).u8(self.by).build()

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        r = PayloadReader(payload, "FAULT_CLEARED")
        return cls(r.u16("fault_id"), r.u16("code"), r.u8("by"))
