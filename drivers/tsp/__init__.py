"""TSP/1, the reference device link: COBS framing, CRC-16, sequence numbers, ACK/retransmit.

The codec (:mod:`.cobs`, :mod:`.crc`, :mod:`.frame`, :mod:`.deframer`) is pure and incremental.
The link state machines (:mod:`.link` for the host, :mod:`.device_link` for a device) are sans-IO:
they take bytes and a clock reading and hand back bytes to send, so they are tested against a
lossy in-memory channel deterministically. :mod:`.client` runs the host link on asyncio. None of
it knows a message set: the shuffler and the RFID reader put their own payloads on top.
"""

from drivers.tsp.frame import (
    MAX_PAYLOAD,
    MAX_WIRE_FRAME,
    TYPE_ACK,
    TYPE_ERROR,
    TYPE_IDENTIFY,
    TYPE_NAK,
    TYPE_PING,
    Flags,
    Frame,
    NakReason,
)

__all__ = [
    "MAX_PAYLOAD",
    "MAX_WIRE_FRAME",
    "TYPE_ACK",
    "TYPE_ERROR",
    "TYPE_IDENTIFY",
    "TYPE_NAK",
    "TYPE_PING",
    "Flags",
    "Frame",
    "NakReason",
]
