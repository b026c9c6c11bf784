"""ISO/IEC 14443 type A tags lying on a simulated antenna.

A tag's type follows from its UID length, as with real cards: a 4-byte UID is a MIFARE Classic 1K
(ATQA ``00 04``, SAK ``08``), a 7-byte UID an NTAG213 (ATQA ``00 44``, SAK ``00``, the tag in
most RFID playing cards), a 10-byte UID a triple-size type A tag (ATQA ``00 84``, SAK ``00``).

Each tag follows the ISO/IEC 14443-3 activation states that matter to a reader: a reader's
request (REQA) wakes IDLE tags; a selected tag is ACTIVE; a halted tag (HLTA, which the PN532
sends on InDeselect and InRelease) ignores REQA until the RF field is switched off or the tag
leaves and comes back. That is what lets libnfc enumerate several tags one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import reduce
from operator import xor

CASCADE_TAG = 0x88

#: NTAG213 GET_VERSION answer (vendor NXP, NTAG, 144-byte user memory).
NTAG213_VERSION = bytes.fromhex("0004040201000f03")
NTAG213_PAGES = 45


class TagState(Enum):
    """ISO/IEC 14443-3 activation state, reduced to what a reader can observe."""

    IDLE = "idle"
    ACTIVE = "active"
    HALT = "halt"


def _ntag_memory(uid: bytes) -> bytearray:
    """Power-on memory of an NTAG213: UID and check bytes, capability container, empty NDEF."""
    bcc0 = CASCADE_TAG ^ uid[0] ^ uid[1] ^ uid[2]
    bcc1 = reduce(xor, uid[3:7])
    memory = bytearray(4 * NTAG213_PAGES)
    memory[0:16] = bytes(
        (uid[0], uid[1], uid[2], bcc0, *uid[3:7], bcc1, 0x48, 0x00, 0x00, 0xE1, 0x10, 0x12, 0x00)
    )
    memory[16:20] = bytes((0x03, 0x00, 0xFE, 0x00))  # an empty NDEF message TLV, then terminator
    return memory


@dataclass(slots=True)
class SimTag:
    """One tag on the antenna."""

    uid: bytes
    state: TagState = TagState.IDLE
    memory: bytearray = field(default_factory=bytearray)

    def __post_init__(self) -> None:
        if len(self.uid) not in (4, 7, 10):
            raise ValueError(f"a type A UID has 4, 7 or 10 bytes, not {len(self.uid)}")
        if self.is_ntag and not self.memory:
            self.memory = _ntag_memory(self.uid)

    @property
    def is_ntag(self) -> bool:
        """True for NTAG213 tags (7-byte UIDs)."""
        return len(self.uid) == 7

    @property
    def sens_res(self) -> bytes:
        """ATQA as the PN532 reports it: the UID size sits in bits 7–8 of the second byte."""
        size_bits = {4: 0x00, 7: 0x40, 10: 0x80}[len(self.uid)]
        return bytes((0x00, size_bits | 0x04))

    @property
    def sel_res(self) -> int:
        """SAK: 08 for MIFARE Classic 1K, 00 for NTAG/Ultralight-type tags."""
        return 0x08 if len(self.uid) == 4 else 0x00

    def target_data(self, number: int) -> bytes:
        """InListPassiveTarget / InAutoPoll target data: Tg, SENS_RES, SEL_RES, NFCID1."""
        return bytes((number, *self.sens_res, self.sel_res, len(self.uid))) + self.uid

    def transceive(self, command: bytes) -> bytes | None:
        """Answer a tag command (CRC handled by the reader); None when the tag stays silent."""
        if not command or not self.is_ntag:
            return None
        code = command[0]
        if code == 0x30 and len(command) == 2 and command[1] < NTAG213_PAGES:  # READ 4 pages
            start = 4 * command[1]
            wrapped = self.memory + self.memory
            return bytes(wrapped[start : start + 16])
        if code == 0x60 and len(command) == 1:  # GET_VERSION
            return NTAG213_VERSION
        return None


class Antenna:
    """The tags in the field of one PN532 antenna, in the order they were placed."""

    def __init__(self) -> None:
        self._tags: dict[bytes, SimTag] = {}

    def __len__(self) -> int:
        return len(self._tags)

    def __contains__(self, uid: object) -> bool:
        return uid in self._tags

    @property
    def uids(self) -> list[bytes]:
        """UIDs on the antenna, in placement order."""
        return list(self._tags)

    def get(self, uid: bytes) -> SimTag | None:
        """The tag with this UID, if it is on the antenna."""
        return self._tags.get(uid)

    def place(self, uid: bytes) -> SimTag:
        """Put a tag on the antenna (a tag already there stays as it is)."""
        tag = self._tags.get(uid)
        if tag is None:
            tag = self._tags[uid] = SimTag(uid)
        return tag

    def remove(self, uid: bytes) -> bool:
        """Lift a tag off the antenna; False if it was not there."""
        return self._tags.pop(uid, None) is not None

    def clear(self) -> None:
        """Lift every tag."""
        self._tags.clear()

    def awake(self) -> list[SimTag]:
        """Tags that answer a REQA, in anticollision order (lowest UID first).

        An ACTIVE tag that was not re-selected treats the REQA as an unexpected frame, returns to
        IDLE and answers the reader's retry, so it counts as awake; only HALT tags stay silent.
        """
        return sorted((t for t in self._tags.values() if t.state is not TagState.HALT), key=_uid)

    def field_off(self) -> None:
        """The RF field went off: every tag loses power and restarts IDLE."""
        for tag in self._tags.values():
            tag.state = TagState.IDLE


def _uid(tag: SimTag) -> bytes:
    return tag.uid
