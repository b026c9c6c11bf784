"""The data sets of an ``[0xB0][0x01]`` inventory answer, with and without antenna information.

Without antennas (MODE bit ANT clear), a data set is led by its TR-TYPE and laid out by it:

* ISO/IEC 15693 (TR-TYPE 0x03): ``[TR-TYPE][DSFID][UID: 8]`` (ID ISC.M02 manual H21010-1e-ID-B
  §7.1.1 p. 57);
* ISO/IEC 14443-A (TR-TYPE 0x04): ``[TR-TYPE][TR_INFO][OPT_INFO][UID: 7 or 10]`` (ID CPR40.xx
  manual §6.1.1.1 pp. 93-94; FEIG's SDK fedm-classlib 04.06.10, ``FEDM_ISOTabItem.cpp``
  ``SetSnr_wo_Antenna``).

With antennas (MODE bit ANT set), a data set is led by FLAGS (bit 0: a transponder follows,
bit 4: antenna information follows; ID ISC.MU02.02 manual H90701-3e-ID-B §10.1.1 pp. 76-77) and
read as the SDK's ``SetSnr_with_Antenna`` reads it::

    [FLAGS][TR-TYPE][DSFID][UID_LEN][UID]                 ISO/IEC 15693
    [FLAGS][TR-TYPE][TR_INFO][OPT_INFO][UID: 7 or 10]     ISO/IEC 14443-A
    then [ANT_COUNT] and, ANT_COUNT times, [ANT_NR][ANT_STATUS][RSSI][4 reserved bytes]

(FLAGS with bit 4 but not bit 0: one antenna block and no ANT_COUNT.)

UIDs travel most significant byte first in host mode (M02 §3.1 p. 17; the SDK's ``GetSnr``
reads byte 0 as the most significant): the ISO/IEC 15693 tag ``e0040150a1b2c3d4`` travels as
``e0 04 01 50 a1 b2 c3 d4``, which is already tablectl's spelling. An ISO/IEC 14443-A UID
travels ``UIDn … UID1 UID0``, the manufacturer byte UID0 last and a short UID padded with
zeros in front (CPR40 p. 94), while tablectl (like the PN532 and every deck manifest) spells it
``UID0 UID1 …``: :meth:`DataSet.uid_text` turns it round and drops the padding. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from controller.uids import normalize_uid
from drivers.rfid.feig.frames import ProtocolError

FLAG_TRANSPONDER: Final = 0x01
"""FLAGS bit 0 (MU02 p. 77 "IDD"): the transponder's type and identifier follow."""
FLAG_ANTENNA: Final = 0x10
"""FLAGS bit 4 (MU02 p. 77 "ANT"): ANT_COUNT and the antenna blocks follow."""
ANTENNA_BLOCK: Final = 7
"""ANT_NR, ANT_STATUS, RSSI and four reserved bytes (SDK ``SetSnr_with_Antenna``)."""

TR_INFO_CL3: Final = 0x04
"""TR_INFO bit 2: the UID field has 10 bytes (cascade level 3), else 7 (CPR40 p. 93)."""
OPT_INFO_LEVEL: Final = 0x03
"""OPT_INFO bits 0-1, the cascade level: 0 → 4-byte, 1 → 7-byte, 2 → 10-byte UID (p. 94)."""


class TrType(IntEnum):
    """Transponder types (M02 Annex A p. 96; the SDK's ``FEDM_ISC.h`` for the others)."""

    ICODE1 = 0x00
    TAGIT = 0x01
    ISO15693 = 0x03
    ISO14443A = 0x04
    ISO14443B = 0x05
    ISO18000_3M3 = 0x09


@dataclass(frozen=True, slots=True)
class AntennaRead:
    """One antenna's hearing of a transponder."""

    antenna: int
    """ANT_NR: the antenna output, 1…8 on an ID ISC.M02.M8."""
    rssi: int
    """How strongly it heard the transponder, 0…255."""
    status: int = 0
    """ANT_STATUS, as the reader gives it."""


@dataclass(frozen=True, slots=True)
class DataSet:
    """One transponder of an inventory answer."""

    tr_type: int
    uid: bytes
    """The identifier as it travels (see the module's note on byte order)."""
    dsfid: int = 0
    tr_info: int = 0
    opt_info: int = 0
    antennas: tuple[AntennaRead, ...] = ()
    flags: int = FLAG_TRANSPONDER | FLAG_ANTENNA
    """Only in answers with antenna information."""

    @classmethod
    def iso15693(cls, uid: str, *, dsfid: int = 0, antennas: Sequence[AntennaRead] = ()) -> DataSet:
        """The data set of the ISO/IEC 15693 tag spelt ``uid`` (8 bytes)."""
        raw = bytes.fromhex(normalize_uid(uid))
        if len(raw) != 8:
            raise ProtocolError(f"an ISO/IEC 15693 UID has 8 bytes, not {len(raw)}: {uid}")
        return cls(TrType.ISO15693, raw, dsfid=dsfid, antennas=tuple(antennas))

    @classmethod
    def iso14443a(cls, uid: str, *, antennas: Sequence[AntennaRead] = ()) -> DataSet:
        """The data set of the ISO/IEC 14443-A tag spelt ``uid`` (4, 7 or 10 bytes, UID0 first).

        TR_INFO carries the cascade level 3 bit; OPT_INFO its cascade level, as a reader whose
        OPT_INFO is enabled sends it (CPR40 p. 94).
        """
        raw = bytes.fromhex(normalize_uid(uid))
        levels = {4: 0, 7: 1, 10: 2}
        if len(raw) not in levels:
            raise ProtocolError(f"an ISO/IEC 14443-A UID has 4, 7 or 10 bytes, not {len(raw)}")
        field = 10 if len(raw) == 10 else 7
        wire = bytes(field - len(raw)) + raw[::-1]
        tr_info = TR_INFO_CL3 if field == 10 else 0
        return cls(
            TrType.ISO14443A, wire, tr_info=tr_info, opt_info=levels[len(raw)],
            antennas=tuple(antennas),
        )  # fmt: skip

    def uid_text(self) -> str:
        """The UID in tablectl's spelling (``controller.uids``)."""
        if self.tr_type != TrType.ISO14443A:
            return normalize_uid(self.uid.hex())
        order = self.uid[::-1]  # UID0 first
        if len(self.uid) == 10:
            return order.hex()
        # A 7-byte field holds a 7- or a 4-byte UID, zero-padded in front (CPR40 p. 94). OPT_INFO
        # names the cascade level; a reader with OPT_INFO disabled sends 0, so a zero level is
        # believed only when the three padding bytes are zero.
        level = self.opt_info & OPT_INFO_LEVEL
        if level == 0 and not any(self.uid[:3]):
            return order[:4].hex()
        return order.hex()


def _uid_field(data: bytes, at: int, size: int, what: str) -> bytes:
    if len(data) < at + size:
        raise ProtocolError(f"{what} ends before its {size}-byte UID")
    return data[at : at + size]


def _read_transponder(data: bytes, at: int, *, with_antenna: bool) -> tuple[DataSet, int]:
    if at >= len(data):
        raise ProtocolError("a data set ends before its TR-TYPE")
    tr_type = data[at]
    at += 1
    if tr_type in (TrType.ISO15693, TrType.ICODE1, TrType.TAGIT):
        if with_antenna:
            if at + 2 > len(data):
                raise ProtocolError("an ISO/IEC 15693 data set ends before its UID_LEN")
            dsfid, size = data[at], data[at + 1]
            at += 2
        else:
            if at + 1 > len(data):
                raise ProtocolError("an ISO/IEC 15693 data set ends before its DSFID")
            dsfid, size = data[at], 8
            at += 1
        uid = _uid_field(data, at, size, "an ISO/IEC 15693 data set")
        return DataSet(tr_type, uid, dsfid=dsfid), at + size
    if tr_type == TrType.ISO14443A:
        if at + 2 > len(data):
            raise ProtocolError("an ISO/IEC 14443-A data set ends before its OPT_INFO")
        tr_info, opt_info = data[at], data[at + 1]
        at += 2
        size = 10 if tr_info & TR_INFO_CL3 else 7
        uid = _uid_field(data, at, size, "an ISO/IEC 14443-A data set")
        return DataSet(tr_type, uid, tr_info=tr_info, opt_info=opt_info), at + size
    raise ProtocolError(f"TR-TYPE 0x{tr_type:02x}: a data set this host cannot read")


def _read_antenna(data: bytes, at: int) -> tuple[AntennaRead, int]:
    if at + ANTENNA_BLOCK > len(data):
        raise ProtocolError("an antenna block ends early")
    return AntennaRead(data[at], data[at + 2], data[at + 1]), at + ANTENNA_BLOCK


def decode_inventory(data: bytes, *, with_antenna: bool) -> list[DataSet]:
    """An inventory answer's DATA: DATA-SETS, then the data sets (empty DATA: none)."""
    if not data:
        return []
    count, at = data[0], 1
    sets: list[DataSet] = []
    for _ in range(count):
        if not with_antenna:
            item, at = _read_transponder(data, at, with_antenna=False)
            sets.append(item)
            continue
        if at >= len(data):
            raise ProtocolError("a data set ends before its FLAGS")
        flags = data[at]
        at += 1
        item = DataSet(0, b"", flags=flags)
        if flags & FLAG_TRANSPONDER:
            item, at = _read_transponder(data, at, with_antenna=True)
        reads: list[AntennaRead] = []
        if flags & FLAG_ANTENNA:
            if flags & FLAG_TRANSPONDER:
                if at >= len(data):
                    raise ProtocolError("a data set ends before its ANT_COUNT")
                blocks = data[at]
                at += 1
            else:
                blocks = 1  # antenna information for one antenna, without ANT_COUNT
            for _ in range(blocks):
                read, at = _read_antenna(data, at)
                reads.append(read)
        sets.append(
            DataSet(
                item.tr_type, item.uid, item.dsfid, item.tr_info, item.opt_info,
                tuple(reads), flags,
            )
        )  # fmt: skip
    if at != len(data):
        raise ProtocolError(f"{len(data) - at} bytes after the {count} data sets of an inventory")
    return sets


def encode_data_set(item: DataSet, *, with_antenna: bool) -> bytes:
    """One data set's bytes."""
    if item.tr_type == TrType.ISO14443A:
        body = bytes((item.tr_type, item.tr_info, item.opt_info)) + item.uid
    elif with_antenna:
        body = bytes((item.tr_type, item.dsfid, len(item.uid))) + item.uid
    else:
        body = bytes((item.tr_type, item.dsfid)) + item.uid
    if not with_antenna:
        return body
    blocks = b"".join(
        bytes((read.antenna, read.status, read.rssi)) + bytes(4) for read in item.antennas
    )
    return bytes((item.flags,)) + body + bytes((len(item.antennas),)) + blocks


def encode_inventory(items: Iterable[DataSet], *, with_antenna: bool) -> bytes:
    """An inventory answer's DATA."""
    chosen = list(items)
    encoded = b"".join(encode_data_set(item, with_antenna=with_antenna) for item in chosen)
    return bytes((len(chosen),)) + encoded
