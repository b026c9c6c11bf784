"""A reader's configuration blocks, and whether they are what a table needs.

An ID ISC reader keeps its settings in 14-byte configuration blocks, read with ``[0x80]`` and
written with ``[0x81]`` (ID ISC.M02 manual H21010-1e-ID-B §4 p. 19, §5 pp. 41-44). The
``feig-isc`` driver reads two of them at every connection and refuses, in one line, a reader set
up other than the table needs:

* **CFG1, interface** (ID ISC.M02.M8-B manual H90400-0e-ID-B §4.5 p. 17; M02 §4.1 pp. 21-23):
  byte 0 COM-ADR, byte 2 BAUD (5…10: 4800…115200 baud), byte 3 TRANS-FORM (bits 0-1 parity:
  none, even, odd; bit 2 data bits, bit 3 stop bits, both 0 for 8 and 1), bytes 6-7
  TR-RESPONSE-TIME (most significant byte first, in 100 ms: the longest the reader works on a
  transponder command before it answers). The line must run at the reader's BAUD and parity.
  Byte 13 is the M02's READER-MODE (M02 p. 23; the SDK's M02 map, ``OperatingMode.Mode``), bit
  0 SCAN-E: scan mode, in which the reader talks unasked and takes no host command; the M02.M8
  manual shows the byte reserved, 0x00 (p. 17). A reader with the bit set is refused.
* **CFG4, transponder parameters** (M02 §4.4 pp. 30-31; FEIG's SDK reads an ID ISC.M02.M8 with
  the M02's parameter map, ``FEDM_ISCReaderConfig_M02.cpp``): byte 4 ISO 15693 MODE (bit 4
  NO-TS: one time slot instead of sixteen, which "disables" anticollision, so two cards on one
  antenna would hide each other; bit 5 AFI: only tags of the family in byte 5 answer). A table
  needs sixteen slots and no AFI filter.

How to set a reader up is in ``docs/drivers.md`` ("FEIG ID ISC"). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from drivers.rfid.feig.frames import ProtocolError
from drivers.rfid.feig.protocol import CFG_RECORD

CFG_INTERFACE: Final = 1
CFG_TRANSPONDER: Final = 4

BAUD_RATES: Final = {5: 4800, 6: 9600, 7: 19200, 8: 38400, 9: 57600, 10: 115200}
"""CFG1 BAUD (M02.M8 p. 17; an invalid value makes the reader fall back to 38400)."""
PARITIES: Final = {0: "none", 1: "even", 2: "odd"}
"""CFG1 TRANS-FORM bits 0-1 (M02 p. 22; 3 is "do not use")."""
SCAN_MODE: Final = 0x01
NO_TS: Final = 0x10
AFI: Final = 0x20

DEFAULT_CFG1: Final = bytes.fromhex("00 00 08 01 00 00 00 1e 00 00 00 00 00 00")
"""CFG1 as FEIG ships it: COM-ADR 0, 38400 baud, e,8,1, TR-RESPONSE-TIME 3 s (M02.M8 p. 17)."""
DEFAULT_CFG4: Final = bytes.fromhex("00 00 00 00 0b 00 00 00 00 00 00 00 00 04")
"""CFG4 as FEIG ships it: ISO 15693 MODE 0x0B (16 slots, no AFI), ISO-Blocksize 0x04 (M02
p. 30)."""


def _record(record: bytes, block: int) -> bytes:
    if len(record) != CFG_RECORD:
        raise ProtocolError(f"CFG{block} has {CFG_RECORD} bytes, not {len(record)}")
    return record


@dataclass(frozen=True, slots=True)
class Interface:
    """CFG1."""

    record: bytes

    def __post_init__(self) -> None:
        _record(self.record, CFG_INTERFACE)

    @property
    def address(self) -> int:
        """COM-ADR."""
        return self.record[0]

    @property
    def baudrate(self) -> int:
        """The line speed (an invalid BAUD is the 38400 the reader falls back to)."""
        return BAUD_RATES.get(self.record[2], 38400)

    @property
    def parity(self) -> str:
        """``none``, ``even``, ``odd`` (or the reserved value's number)."""
        bits = self.record[3] & 0x03
        return PARITIES.get(bits, f"reserved value {bits}")

    @property
    def response_time(self) -> float:
        """TR-RESPONSE-TIME in seconds."""
        return int.from_bytes(self.record[6:8], "big") * 0.1

    @property
    def scan_mode(self) -> bool:
        """READER-MODE bit SCAN-E."""
        return bool(self.record[13] & SCAN_MODE)

    def with_line(self, *, address: int, baudrate: int, parity: str) -> Interface:
        """The same block with another COM-ADR, BAUD and parity (what ``[0x81]`` would write)."""
        codes = {rate: code for code, rate in BAUD_RATES.items()}
        parities = {name: code for code, name in PARITIES.items()}
        if baudrate not in codes or parity not in parities:
            raise ProtocolError(f"an ID ISC reader has no setting for {baudrate} baud {parity}")
        record = bytearray(self.record)
        record[0], record[2] = address, codes[baudrate]
        record[3] = (record[3] & ~0x03) | parities[parity]
        return Interface(bytes(record))


@dataclass(frozen=True, slots=True)
class Transponder:
    """CFG4."""

    record: bytes

    def __post_init__(self) -> None:
        _record(self.record, CFG_TRANSPONDER)

    @property
    def time_slots(self) -> int:
        """ISO 15693 MODE NO-TS: 16 (anticollision) or 1."""
        return 1 if self.record[4] & NO_TS else 16

    @property
    def afi(self) -> int | None:
        """The application family only whose tags answer, or None (AFI off)."""
        return self.record[5] if self.record[4] & AFI else None


def problems(
    interface: Interface, transponder: Transponder, *, baudrate: int | None, parity: str
) -> list[str]:
    """What keeps a reader from serving a table, a short clause each (empty: nothing).

    ``baudrate`` None: the reader is on USB, where CFG1's line settings do not apply (M02.M8
    p. 17, "not available by the USB-Reader").
    """
    found = []
    if baudrate is not None and (interface.baudrate, interface.parity) != (baudrate, parity):
        found.append(
            f"CFG1 sets {interface.baudrate} baud parity {interface.parity}, "
            f"the table's config {baudrate} baud parity {parity}"
        )
    if interface.scan_mode:
        found.append("CFG1 READER-MODE is scan mode, not host mode")
    if transponder.time_slots != 16:
        found.append("CFG4 ISO 15693 MODE has 1 time slot: two cards on an antenna hide")
    if transponder.afi is not None:
        found.append(f"CFG4 ISO 15693 MODE filters on AFI 0x{transponder.afi:02x}")
    return found
