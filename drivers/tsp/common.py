"""The message pieces every TSP/1 message set shares: ERROR, FAULT_RAISED, FAULT_CLEARED and
the one-byte result responses.

The shuffler and the RFID reader give these the same type numbers and the same layouts, so one
codec serves both; each message set keeps its own fault-code names in a :class:`FaultNames`, which
also turns its faults into the core's inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from typing import ClassVar, Literal, Protocol, Self

from controller.table.inputs import DeviceFault, DeviceFaultCleared, Origin
from drivers.tsp.frame import TYPE_ERROR, TYPE_GET_STATUS, TYPE_IDENTIFY, TYPE_PING, Frame
from drivers.tsp.layout import U8, U16, U32, Bytes32, FlatMessage, Text, known
from drivers.tsp.payload import PayloadError, PayloadReader, PayloadWriter

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
    #: The request asks for what the device already did (a DISPENSE_GROUP of a group it has
    #: dispensed): nothing was done again. A host that resends after a crash reads this as done.
    ALREADY_DONE = 9


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
#: FAULT_RAISED severities as the core's DeviceFault spells them (an unknown one is "error").
SEVERITY_NAMES: dict[int, SeverityName] = {1: "info", 2: "warn", 3: "error", 4: "critical"}


@dataclass(frozen=True, slots=True)
class Result:
    """A one-byte response (``result``, ``ok``, ``accepted`` or a count); each message set says
    which of its requests answer with one and what the byte means there."""

    value: int

    def encode(self) -> bytes:
        """The payload bytes."""
        return bytes([self.value])

    @classmethod
    def decode(cls, payload: bytes) -> Self:
        """Parse the payload bytes."""
        return cls(PayloadReader(payload, "result").u8("result"))


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
        return cls(known(ErrorCode, code), detail)

    @property
    def name(self) -> str:
        """The code's name (its number when this host does not know it)."""
        return self.code.name if isinstance(self.code, ErrorCode) else str(self.code)


@dataclass(frozen=True, slots=True)
class FaultRaised(FlatMessage):
    """FAULT_RAISED (also the layout of each entry of the shuffler's GET_FAULTS response)."""

    TYPE: ClassVar[int] = TYPE_FAULT_RAISED
    WHAT: ClassVar[str] = "FAULT_RAISED"
    fault_id: U16
    code: U16
    severity: U8
    flags: U8
    card_index: U8
    detail: Text = ""


@dataclass(frozen=True, slots=True)
class FaultCleared(FlatMessage):
    """FAULT_CLEARED."""

    TYPE: ClassVar[int] = TYPE_FAULT_CLEARED
    WHAT: ClassVar[str] = "FAULT_CLEARED"
    fault_id: U16
    code: U16
    by: U8


class FaultNames:
    """A message set's fault codes (high byte = class, docs/protocols/tsp1.md §3.5) and names."""

    def __init__(self, names: dict[int, str], what: str = "fault") -> None:
        self.names = names
        self.codes = {name: code for code, name in names.items()}
        self._what = what

    def name(self, code: int) -> str:
        """The name of a fault code (``FAULT_0x0999`` for one this host does not know)."""
        return self.names.get(code, f"FAULT_{code:#06x}")

    def code(self, name: str) -> int:
        """The code of a fault name; raise ValueError naming the known ones."""
        try:
            return self.codes[name.upper()]
        except KeyError:
            known = ", ".join(self.codes)
            raise ValueError(f"unknown {self._what} {name!r} (known: {known})") from None

    def input_of(
        self,
        event: FaultRaised | FaultCleared,
        device: str,
        ts: datetime,
        origin: Origin | None = None,
    ) -> DeviceFault | DeviceFaultCleared:
        """The core's input of a FAULT_RAISED or FAULT_CLEARED: the fault by its name."""
        name = self.name(event.code)
        if isinstance(event, FaultCleared):
            return DeviceFaultCleared(ts, device, name, event.fault_id, origin=origin)
        severity = SEVERITY_NAMES.get(event.severity, "error")
        return DeviceFault(ts, device, name, event.fault_id, severity, event.detail, origin=origin)


@dataclass(frozen=True, slots=True)
class IdentityHead(FlatMessage):
    """The fields every TSP/1 device's IDENTIFY response starts with (its own fields follow)."""

    WHAT: ClassVar[str] = "IDENTIFY response"
    proto_min: U8
    proto_max: U8
    vendor: Text
    model: Text
    serial: Text
    hw_rev: Text
    fw_version: Text
    fw_sha256: Bytes32
    boot_id: U32

    def describe(self) -> dict[str, str]:
        """Who the device says it is, as the drivers' ``describe()`` reports it."""
        return {
            "vendor": self.vendor,
            "model": self.model,
            "serial": self.serial,
            "firmware": self.fw_version,
        }


class HasBootId(Protocol):
    """An IDENTIFY or status response: each carries the device's boot id (§2.6)."""

    @property
    def boot_id(self) -> int: ...


def boot_id_reader(
    identity: Callable[[bytes], HasBootId], status: Callable[[bytes], HasBootId]
) -> Callable[[Frame], int | None]:
    """What the link needs to spot a reboot: the boot id in IDENTIFY, GET_STATUS and PING
    responses (the same three type numbers in every message set)."""

    def boot_id_of(frame: Frame) -> int | None:
        try:
            if frame.type == TYPE_IDENTIFY:
                return identity(frame.payload).boot_id
            if frame.type in (TYPE_GET_STATUS, TYPE_PING):
                return status(frame.payload).boot_id
        except PayloadError:
            return None
        return None

    return boot_id_of
