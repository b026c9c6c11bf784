"""CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, not reflected, no final XOR; check 0x29B1).

The standard library has it as :func:`binascii.crc_hqx`; this module only names the variant so no
caller passes the wrong initial value (``crc_hqx(data, 0)`` is XMODEM, a different CRC).
"""

from __future__ import annotations

import binascii


def crc16_ccitt_false(data: bytes) -> int:
    """The CRC-16/CCITT-FALSE of ``data``."""
    return binascii.crc_hqx(data, 0xFFFF)
