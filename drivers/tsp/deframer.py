"""The incremental receiver: bytes in any chunking → frames, never an exception.

Feed it whatever the transport delivers. It cuts the stream at every ``0x00``, decodes each piece,
and hands back :class:`~drivers.tsp.frame.Frame` objects (and :class:`~drivers.tsp.frame.Rejected`
ones the link answers with a NAK). Anything else is counted and dropped: corrupt frames are
recovered by the sender's retransmit timer, not here. The buffer never holds more than one
maximum-size frame; a longer run without a delimiter is discarded up to the next ``0x00``, which
is how the receiver resynchronises after noise or a lost delimiter.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.tsp.frame import MAX_WIRE_FRAME, CorruptFrameError, Frame, Rejected, decode_wire


@dataclass(slots=True)
class DeframerStats:
    """What the receiver dropped, by cause."""

    frames: int = 0
    crc_errors: int = 0
    cobs_errors: int = 0
    short_frames: int = 0
    oversized: int = 0
    rejected: int = 0
    dropped_bytes: int = 0


class Deframer:
    """Cuts a byte stream into frames; bounded, resynchronising and exception-free."""

    def __init__(self, max_frame: int = MAX_WIRE_FRAME) -> None:
        self._max = max_frame
        self._buffer = bytearray()
        # Set after an overlong run: everything up to the next delimiter belongs to garbage.
        self._discarding = False
        self.stats = DeframerStats()

    @property
    def buffered(self) -> int:
        """Bytes held while waiting for a delimiter (never more than the maximum frame)."""
        return len(self._buffer)

    def reset(self) -> None:
        """Forget a partial frame (the transport was reconnected)."""
        self.stats.dropped_bytes += len(self._buffer)
        self._buffer.clear()
        self._discarding = False

    def feed(self, data: bytes) -> list[Frame | Rejected]:
        """Take the next chunk of the stream; return the frames it completed, in order."""
        out: list[Frame | Rejected] = []
        start = 0
        while True:
            end = data.find(0, start)
            piece = data[start:] if end < 0 else data[start:end]
            self._take(piece)
            if end < 0:
                return out
            start = end + 1
            self._frame_end(out)

    def _take(self, piece: bytes) -> None:
        if self._discarding:
            self.stats.dropped_bytes += len(piece)
            return
        if len(self._buffer) + len(piece) > self._max:
            self.stats.oversized += 1
            self.stats.dropped_bytes += len(self._buffer) + len(piece)
            self._buffer.clear()
            self._discarding = True
            return
        self._buffer += piece

    def _frame_end(self, out: list[Frame | Rejected]) -> None:
        if self._discarding:
            self._discarding = False
            return
        wire = bytes(self._buffer)
        self._buffer.clear()
        if not wire:
            return  # back-to-back delimiters are idle fill, not frames
        try:
            frame = decode_wire(wire)
        except CorruptFrameError as exc:
            self.stats.dropped_bytes += len(wire) + 1
            if exc.what == "crc":
                self.stats.crc_errors += 1
            elif exc.what == "cobs":
                self.stats.cobs_errors += 1
            else:
                self.stats.short_frames += 1
            return
        if isinstance(frame, Rejected):
            self.stats.rejected += 1
        else:
            self.stats.frames += 1
        out.append(frame)
