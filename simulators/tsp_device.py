"""A simulated TSP/1 device between its model and the wire: bytes in, wire bytes out, no I/O.

:class:`WireDevice` puts a device model (the shuffler's, the reader's) behind the TSP/1 device
link and injects the faults that live between the link and the wire: corrupted CRCs in either
direction, frames cut short without their delimiter, and a stalled firmware that neither reads nor
sends. Every transport runs the same object: the pty server (:mod:`simulators.tsp_pty`) from an
asyncio loop, the fake pyusb backend from a device thread.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Protocol

from drivers.tsp.cobs import cobs_encode
from drivers.tsp.common import Severity
from drivers.tsp.device_link import DeviceLink, DeviceTimers

#: A raised fault's severity by the name a control command gives it.
SEVERITIES = {severity.name.lower(): severity for severity in Severity}


class DeviceModel(Protocol):
    """What a device model offers its link: requests in, responses and events out, timers; and
    what it asks of its link (set by :class:`WireDevice`): what it holds, whether the host is
    gone, its counters."""

    queued_events: Callable[[], int]
    host_lost: Callable[[float], bool]
    link_counters: Callable[[], dict[str, int]]

    def handle(self, msg_type: int, payload: bytes, now: float) -> tuple[int, bytes]:
        """Execute a request; return the response's type and payload."""

    def tick(self, now: float) -> None:
        """Let time pass."""

    def take_events(self) -> list[tuple[int, bytes]]:
        """Events raised since the last call, in order."""

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do."""


class WireDevice:
    """One device model on a TSP/1 device link, with link-level fault injection."""

    def __init__(
        self,
        model: DeviceModel,
        rng: random.Random | None = None,
        timers: DeviceTimers | None = None,
    ) -> None:
        self.model = model
        self.rng = rng or random.Random()
        self.link = DeviceLink(timers)
        #: Fraction of frames whose CRC is corrupted, per direction ("in": from the host).
        self.crc_rate = {"in": 0.0, "out": 0.0}
        #: Fraction of outgoing frames cut short, without their delimiter.
        self.partial_rate = 0.0
        #: Until then the firmware hangs: input is dropped unread and nothing is sent.
        self.stalled_until = 0.0
        self.corrupted = {"in": 0, "out": 0}
        self.truncated = 0
        self._wire = bytearray()
        model.queued_events = lambda: self.link.queued_events
        model.host_lost = self.link.host_lost
        model.link_counters = self.link_counters

    # ------------------------------------------------------------------ the device loop

    def receive(self, data: bytes, now: float) -> None:
        """Bytes from the host."""
        if now < self.stalled_until or not data:
            return
        self.link.receive(self._corrupt_incoming(data), now)
        for request in self.link.take_requests():
            msg_type, payload = self.model.handle(request.type, request.payload, now)
            self.link.respond(request, payload, msg_type)
        self.step(now)

    def step(self, now: float) -> None:
        """Run the model's and the link's timers; queue what they send."""
        if now < self.stalled_until:
            return
        self.model.tick(now)
        for msg_type, payload in self.model.take_events():
            self.link.queue_event(msg_type, payload)
        self.link.tick(now)
        for frame in self.link.take_frames():
            self._send(frame)

    def next_deadline(self) -> float | None:
        """When :meth:`step` next has something to do."""
        deadlines = [
            d for d in (self.model.next_deadline(), self.link.next_deadline()) if d is not None
        ]
        if self.stalled_until and deadlines:
            deadlines = [max(d, self.stalled_until) for d in deadlines]
        return min(deadlines) if deadlines else None

    def take_wire(self) -> bytes:
        """Wire bytes to send to the host, in order."""
        data = bytes(self._wire)
        self._wire.clear()
        return data

    @property
    def pending_wire(self) -> int:
        """Wire bytes waiting to be taken."""
        return len(self._wire)

    def reset_transport(self) -> None:
        """The cable was unplugged or replugged: a partial frame and unsent bytes are gone."""
        self.link.reset_transport()
        self._wire.clear()

    def link_counters(self) -> dict[str, int]:
        """The device's link counters (as GET_COUNTERS-style meters report them)."""
        stats = self.link.stats
        return {
            "crc_errors": stats.crc_errors,
            "naks": stats.naks_sent + stats.naks_received,
            "retransmits": stats.retransmits,
        }

    def fault_status(self) -> dict[str, object]:
        """The injected link faults and what they did."""
        return {
            "crc_rate": dict(self.crc_rate),
            "partial_rate": self.partial_rate,
            "corrupted": dict(self.corrupted),
            "truncated": self.truncated,
        }

    # ------------------------------------------------------------------ faults

    def inject(self, fault: str, rate: float, direction: str, seconds: float, now: float) -> bool:
        """Inject a line fault: ``crc`` (``direction`` in, out or both), ``partial`` or
        ``stall`` (for ``seconds``); False if ``fault`` is none of them."""
        if fault == "crc":
            for way in ("in", "out"):
                if direction in (way, "both"):
                    self.crc_rate[way] = rate
        elif fault == "partial":
            self.partial_rate = rate
        elif fault == "stall":
            self.stalled_until = now + seconds
        else:
            return False
        return True

    def _send(self, encoded: bytes) -> None:
        frame = bytearray(encoded)
        if self.rng.random() < self.crc_rate["out"]:
            frame[-1 - self.rng.randrange(2)] ^= 1 << self.rng.randrange(8)
            self.corrupted["out"] += 1
        wire = cobs_encode(bytes(frame)) + b"\x00"
        if self.rng.random() < self.partial_rate:
            # The frame is cut off mid-way and its delimiter never sent: the receiver glues it to
            # the next frame, fails both, and the senders' timers recover.
            wire = wire[: self.rng.randrange(1, len(wire) - 1)]
            self.truncated += 1
        self._wire += wire

    def _corrupt_incoming(self, data: bytes) -> bytes:
        rate = self.crc_rate["in"]
        if not rate:
            return data
        out = bytearray(data)
        for end in [i for i, byte in enumerate(out) if byte == 0]:
            if end and self.rng.random() < rate:
                index = self.rng.randrange(max(0, end - 3), end)
                out[index] = (out[index] ^ (1 << self.rng.randrange(8))) or 1
                self.corrupted["in"] += 1
        return bytes(out)
