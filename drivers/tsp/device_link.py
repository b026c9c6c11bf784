"""The device end of a TSP/1 link as a sans-IO state machine (used by the simulators).

A device answers each request exactly once: it caches its last responses by ``seq`` and replays
the cached bytes for a retransmitted request instead of executing it again. It sends events
strictly in order, one outstanding at a time, numbered by their own counter (each event's ``seq``
is the successor of the previous event's), retransmitting with backoff until the host
acknowledges; queued events survive a reboot (they sit in non-volatile memory) and are sent again
under the new boot id with new sequence numbers. After power-up it holds its events until the host
has made contact, so the host learns the new boot id (from IDENTIFY or PING) before the first
event of the new session arrives.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

from drivers.tsp.deframer import Deframer
from drivers.tsp.frame import TYPE_NAK, Flags, Frame, Rejected, next_seq
from drivers.tsp.stats import LinkStats


@dataclass(frozen=True, slots=True)
class DeviceTimers:
    """Device timing; the defaults are TSP/1's."""

    ack_timeout: float = 0.3
    ack_timeout_max: float = 2.0
    host_lost_after: float = 5.0


@dataclass(slots=True)
class _OutstandingEvent:
    type: int
    payload: bytes
    seq: int
    deadline: float
    timeout: float
    sends: int


class DeviceLink:
    """Device side of TSP/1: cached responses, ordered events with retransmit."""

    RESPONSE_CACHE = 8

    def __init__(self, timers: DeviceTimers | None = None) -> None:
        self.timers = timers or DeviceTimers()
        self.stats = LinkStats()
        self._deframer = Deframer()
        self._out: list[bytes] = []
        self._requests: deque[Frame] = deque()
        self._cache: OrderedDict[int, tuple[int, bytes, bytes]] = OrderedDict()
        self._queue: deque[tuple[int, bytes]] = deque()
        self._outstanding: _OutstandingEvent | None = None
        self._seq = 0
        self._event_seq = 0
        self.host_contact = False
        self._last_rx: float | None = None

    # ------------------------------------------------------------------ outputs

    def take_frames(self) -> list[bytes]:
        """Encoded frames to send (header + payload + CRC, before COBS), in order."""
        frames, self._out = self._out, []
        return frames

    def take_requests(self) -> list[Frame]:
        """New requests to execute, in order; answer each with :meth:`respond`."""
        requests = list(self._requests)
        self._requests.clear()
        return requests

    @property
    def queued_events(self) -> int:
        """Events not yet acknowledged (including the one in flight)."""
        return len(self._queue) + (self._outstanding is not None)

    def host_lost(self, now: float) -> bool:
        """True when no valid frame came from the host for ``host_lost_after`` seconds."""
        if self._last_rx is None:
            return True
        return now - self._last_rx > self.timers.host_lost_after

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do."""
        if self._outstanding is not None:
            return self._outstanding.deadline
        if self._queue and self.host_contact:
            return 0.0
        return None

    # ------------------------------------------------------------------ inputs

    def receive(self, data: bytes, now: float) -> None:
        """Take bytes from the host."""
        for item in self._deframer.feed(data):
            if isinstance(item, Rejected):
                self.stats.naks_sent += 1
                self._send(Frame(TYPE_NAK, Flags.NAK, 0, item.seq, bytes([item.reason])))
                continue
            self.stats.frames_received += 1
            self._last_rx = now
            if item.kind is Flags.REQ:
                self._on_request(item, now)
            elif item.kind is Flags.ACK:
                self._on_ack(item, now)
            elif item.kind is Flags.NAK:
                self.stats.naks_received += 1
        stats = self._deframer.stats
        self.stats.crc_errors = stats.crc_errors
        self.stats.framing_errors = stats.cobs_errors + stats.short_frames + stats.oversized
        self.stats.dropped_bytes = stats.dropped_bytes

    def respond(self, request: Frame, payload: bytes, msg_type: int | None = None) -> None:
        """Answer ``request`` (``msg_type`` defaults to the request's; ERROR for a refusal)."""
        rsp_type = request.type if msg_type is None else msg_type
        frame = Frame(rsp_type, Flags.RSP, self._next(), request.seq, payload)
        encoded = frame.encode()
        self._cache[request.seq] = (request.type, request.payload, encoded)
        while len(self._cache) > self.RESPONSE_CACHE:
            self._cache.popitem(last=False)
        self._emit(encoded)

    def queue_event(self, msg_type: int, payload: bytes) -> None:
        """Append an event to the (non-volatile) queue."""
        self._queue.append((msg_type, payload))

    def tick(self, now: float) -> None:
        """Send the next event or retransmit the one in flight."""
        event = self._outstanding
        if event is None:
            if self._queue and self.host_contact:
                msg_type, payload = self._queue.popleft()
                timeout = self.timers.ack_timeout
                self._event_seq = next_seq(self._event_seq)
                event = _OutstandingEvent(
                    msg_type, payload, self._event_seq, now + timeout, timeout, 0
                )
                self._outstanding = event
                self._send_event(event)
            return
        if now >= event.deadline:
            event.timeout = min(event.timeout * 2, self.timers.ack_timeout_max)
            event.deadline = now + event.timeout
            self.stats.retransmits += 1
            self._send_event(event)

    def reboot(self) -> None:
        """Power was lost: forget the session, keep the event queue (it is non-volatile)."""
        if self._outstanding is not None:
            self._queue.appendleft((self._outstanding.type, self._outstanding.payload))
            self._outstanding = None
        self._cache.clear()
        self._requests.clear()
        self._deframer.reset()
        self._out.clear()
        self._seq = 0
        self._event_seq = 0
        self.host_contact = False
        self._last_rx = None

    def reset_transport(self) -> None:
        """The cable was replugged: drop a partial frame and anything not yet written."""
        self._deframer.reset()
        self._out.clear()

    # ------------------------------------------------------------------ internals

    def _next(self) -> int:
        self._seq = next_seq(self._seq)
        return self._seq

    def _emit(self, encoded: bytes) -> None:
        self.stats.frames_sent += 1
        self._out.append(encoded)

    def _send(self, frame: Frame) -> None:
        self._emit(frame.encode())

    def _send_event(self, event: _OutstandingEvent) -> None:
        flags = Flags.EVT | (Flags.RETX if event.sends else Flags.NONE)
        event.sends += 1
        self._send(Frame(event.type, flags, event.seq, 0, event.payload))

    def _on_request(self, frame: Frame, now: float) -> None:
        self.host_contact = True
        cached = self._cache.get(frame.seq)
        # Only a copy marked RETX with the same content is a duplicate: a restarted host may
        # reuse a seq for a new request, and that one must be executed.
        if cached is not None and frame.retransmitted and cached[:2] == (frame.type, frame.payload):
            self.stats.duplicate_responses += 1
            self._emit(cached[2])
            return
        self.stats.requests += 1
        self._requests.append(frame)
        event = self._outstanding
        if event is not None and event.sends > 1:
            # The host is talking again after a silence: resend the waiting event now instead
            # of at the end of a long backoff.
            event.deadline = now

    def _on_ack(self, frame: Frame, now: float) -> None:
        event = self._outstanding
        if event is None or frame.corr != event.seq:
            return  # the ACK of a retransmitted copy already acknowledged
        self._outstanding = None
        self.stats.events += 1
        self.tick(now)
