"""The deck commitment: SHA-256("TSP1-deck" ‖ shuffle_id u32 LE ‖ salt[16] ‖ order[n]).

The device publishes it when the shuffle completes and reveals salt and order only after the deck
is retired, so the order never leaves the device while it can be in play, yet the host can prove
afterwards that the order it is shown is the one that was dealt (docs/protocols/tsp1.md §3.6).
"""

from __future__ import annotations

import hashlib
import hmac

DOMAIN = b"TSP1-deck"


def deck_commitment(shuffle_id: int, salt: bytes, order: bytes) -> bytes:
    """The 32-byte commitment of a deck order (card codes, top first)."""
    return hashlib.sha256(DOMAIN + shuffle_id.to_bytes(4, "little") + salt + order).digest()


def verify_commitment(commitment: bytes, shuffle_id: int, salt: bytes, order: bytes) -> bool:
    """True when ``order`` and ``salt`` are what ``commitment`` committed to."""
    return hmac.compare_digest(commitment, deck_commitment(shuffle_id, salt, order))
