"""Tag UIDs as text: lowercase hex, most significant byte first, no separators.

Readers, deck manifests and events all speak of a tag by this one spelling (``"04a1b2c3d4e580"``),
so a UID read by a PN532, reported by a TSP/1 reader or typed into a manifest compares equal.
Input may use upper case and the usual separators (``04:A1:B2…``, ``04-a1-b2…``, ``04 a1 b2…``).
"""

from __future__ import annotations

import re
from typing import Final

#: UID sizes in bytes: ISO/IEC 14443 A single, double and triple size; ISO/IEC 15693 and FeliCa.
UID_SIZES: Final = frozenset({4, 7, 8, 10})

_SEPARATORS = re.compile(r"[\s:\-]")
_HEX = re.compile(r"[0-9a-f]+")


class UidError(ValueError):
    """Text or bytes that are not a tag UID."""


def uid_from_bytes(data: bytes | bytearray, *, lsb_first: bool = False) -> str:
    """The canonical text of a UID read off the air.

    ``lsb_first`` is for readers that deliver the UID least significant byte first (ISO/IEC
    15693 inventories do): it is reversed into the canonical order.
    """
    if len(data) not in UID_SIZES:
        raise UidError(f"a tag UID has 4, 7, 8 or 10 bytes, not {len(data)}: {bytes(data).hex()}")
    return bytes(reversed(data)).hex() if lsb_first else bytes(data).hex()


def normalize_uid(text: str) -> str:
    """Canonical spelling of a UID written by a person or another system."""
    compact = _SEPARATORS.sub("", text).lower()
    if not compact or not _HEX.fullmatch(compact) or len(compact) % 2:
        raise UidError(f"not a tag UID (hex bytes expected): {text!r}")
    size = len(compact) // 2
    if size not in UID_SIZES:
        raise UidError(f"a tag UID has 4, 7, 8 or 10 bytes, not {size}: {text!r}")
    return compact


def uid_to_bytes(uid: str) -> bytes:
    """The bytes of a UID, most significant first."""
    return bytes.fromhex(normalize_uid(uid))


def is_uid(text: str) -> bool:
    """True if ``text`` is a UID in any accepted spelling."""
    try:
        normalize_uid(text)
    except UidError:
        return False
    return True
