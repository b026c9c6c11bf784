"""Consistent Overhead Byte Stuffing: removes every zero byte so ``0x00`` can end a frame.

A block is a code byte ``n`` (1…255) followed by ``n - 1`` non-zero bytes; a code below 255 stands
for a zero after its block, except at the very end. The overhead is one byte plus one per 254.
"""

from __future__ import annotations


class CobsError(ValueError):
    """Bytes that are not a valid COBS encoding."""


def cobs_encode(data: bytes) -> bytes:
    """Encode ``data``; the result contains no zero byte (the delimiter is not appended)."""
    out = bytearray()
    block = bytearray()
    # True right after a full 254-byte block: if the data ends there, no final block follows.
    after_full_block = False
    for byte in data:
        after_full_block = False
        if byte == 0:
            out.append(len(block) + 1)
            out += block
            block.clear()
            continue
        block.append(byte)
        if len(block) == 254:
            out.append(255)
            out += block
            block.clear()
            after_full_block = True
    if not after_full_block:
        out.append(len(block) + 1)
        out += block
    return bytes(out)


def cobs_decode(encoded: bytes) -> bytes:
    """Decode one COBS block sequence (without its delimiter); raise :class:`CobsError`."""
    out = bytearray()
    index = 0
    size = len(encoded)
    while index < size:
        code = encoded[index]
        if code == 0:
            raise CobsError(f"zero code byte at offset {index}")
        end = index + code
        if end > size:
            raise CobsError(f"block at offset {index} runs past the end ({code - 1} bytes wanted)")
        block = encoded[index + 1 : end]
        if 0 in block:
            raise CobsError(f"zero byte inside the block at offset {index}")
        out += block
        index = end
        if code != 0xFF and index < size:
            out.append(0)
    return bytes(out)
