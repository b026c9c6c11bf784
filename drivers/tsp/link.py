"""The host end of a TSP/1 link as a sans-IO state machine.

The host sends requests, one outstanding at a time, and retransmits the same frame (same ``seq``,
``RETX`` set) when no response came within the response timeout. Responses are matched on
``corr``; a late or duplicate response is counted and dropped. Events from the device are handed to
the application one at a time and acknowledged only when the application says it is done with
them (:meth:`HostLink.event_done`), so an event the host crashed on is retransmitted, not lost.
Events are de-duplicated on ``(boot_id, seq)``: the device sends one event at a time and only
retransmits the one the host has not acknowledged, so a duplicate is a retransmitted copy (``RETX``)
of the last finished event; it is re-acknowledged and dropped.

The link does not know any message set. It learns the device's boot id through ``session_probe``,
a function the message set supplies that reads the boot id out of the responses carrying one
(IDENTIFY, PING, GET_STATUS). A new boot id resets de-duplication and is reported as
:class:`SessionChanged`. Until the boot id is known, events are neither delivered nor acknowledged:
the device keeps them and retransmits.

Nothing here reads a clock or touches a file descriptor: every call takes ``now`` (seconds on any
monotonic clock), bytes to send accumulate in :meth:`HostLink.take_output` and what happened in
:meth:`HostLink.take_events`.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from drivers.tsp.deframer import Deframer
from drivers.tsp.frame import (
    TYPE_ACK,
    TYPE_ERROR,
    TYPE_NAK,
    Flags,
    Frame,
    Rejected,
    next_seq,
)
from drivers.tsp.stats import LinkStats

#: Reads the device's boot id from a response, or None when the response carries none.
SessionProbe = Callable[[Frame], "int | None"]


@dataclass(frozen=True, slots=True)
class LinkTimers:
    """Host timing; the defaults are TSP/1's for 115200 baud."""

    response_timeout: float = 0.3
    max_retransmits: int = 3


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """The outstanding request was answered (``frame.type`` is ERROR for a refusal)."""

    request_seq: int
    frame: Frame
    rtt: float


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """The outstanding request got no response after every retransmission."""

    request_seq: int
    type: int
    attempts: int


@dataclass(frozen=True, slots=True)
class EventReceived:
    """A new device event; acknowledge it with :meth:`HostLink.event_done` once handled."""

    boot_id: int
    frame: Frame


@dataclass(frozen=True, slots=True)
class SessionChanged:
    """The device reported a boot id different from the one known (None: the first one)."""

    previous: int | None
    boot_id: int


LinkEvent = ResponseReceived | RequestFailed | EventReceived | SessionChanged


class LinkBusyError(RuntimeError):
    """A request was sent while another is outstanding (TSP/1 allows one at a time)."""


@dataclass(slots=True)
class _Outstanding:
    frame: Frame
    first_sent: float
    deadline: float
    attempts: int


def _no_probe(frame: Frame) -> int | None:
    return None


class HostLink:
    """Host side of TSP/1: requests with retransmit, acknowledged and de-duplicated events."""

    def __init__(
        self,
        timers: LinkTimers | None = None,
        session_probe: SessionProbe = _no_probe,
        rng: random.Random | None = None,
    ) -> None:
        self.timers = timers or LinkTimers()
        self.stats = LinkStats()
        self._probe = session_probe
        self._deframer = Deframer()
        # A random first seq keeps a restarted host from matching a response the device cached
        # for the previous host process.
        self._seq = (rng or random.Random()).randint(1, 255)
        self._outstanding: _Outstanding | None = None
        self._out = bytearray()
        self._events: deque[LinkEvent] = deque()
        self.boot_id: int | None = None
        self._pending_event: tuple[int, int] | None = None
        self._last_done: int | None = None

    # ------------------------------------------------------------------ outputs

    def take_output(self) -> bytes:
        """Bytes to write to the transport, in order."""
        data = bytes(self._out)
        self._out.clear()
        return data

    def take_events(self) -> list[LinkEvent]:
        """What happened since the last call, in order."""
        events = list(self._events)
        self._events.clear()
        return events

    @property
    def busy(self) -> bool:
        """True while a request is outstanding."""
        return self._outstanding is not None

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do."""
        return None if self._outstanding is None else self._outstanding.deadline

    # ------------------------------------------------------------------ inputs

    def request(self, msg_type: int, payload: bytes, now: float) -> int:
        """Send a request; return its ``seq``. Raise :class:`LinkBusyError` if one is pending."""
        if self._outstanding is not None:
            raise LinkBusyError("a request is already outstanding")
        self._seq = next_seq(self._seq)
        frame = Frame(msg_type, Flags.REQ, self._seq, 0, payload)
        deadline = now + self.timers.response_timeout
        self._outstanding = _Outstanding(frame, now, deadline, 1)
        self.stats.requests += 1
        self._send(frame)
        return frame.seq

    def cancel_request(self) -> None:
        """Give up on the outstanding request without a :class:`RequestFailed` (shutdown)."""
        self._outstanding = None

    def reset_transport(self) -> None:
        """The transport was reconnected: drop a partial frame and the outstanding request.

        The session (boot id) and the event de-duplication state survive, so an event the device
        retransmits after a replug is recognised. So does an event the application is still
        handling: it is acknowledged when the application is done with it (or abandoned with
        :meth:`abandon_event`), and its retransmitted copies wait until then.
        """
        self._deframer.reset()
        self._out.clear()
        if self._outstanding is not None:
            failed = self._outstanding
            self._outstanding = None
            self._events.append(RequestFailed(failed.frame.seq, failed.frame.type, failed.attempts))

    def tick(self, now: float) -> None:
        """Run the retransmit timer."""
        pending = self._outstanding
        if pending is None or now < pending.deadline:
            return
        if pending.attempts > self.timers.max_retransmits:
            self._outstanding = None
            self.stats.request_failures += 1
            self._events.append(
                RequestFailed(pending.frame.seq, pending.frame.type, pending.attempts)
            )
            return
        self._retransmit(pending, now)

    def receive(self, data: bytes, now: float) -> None:
        """Take bytes from the transport."""
        for item in self._deframer.feed(data):
            if isinstance(item, Rejected):
                self.stats.naks_sent += 1
                self._send(Frame(TYPE_NAK, Flags.NAK, 0, item.seq, bytes([item.reason])))
                continue
            self.stats.frames_received += 1
            kind = item.kind
            if kind is Flags.RSP:
                self._on_response(item, now)
            elif kind is Flags.EVT:
                self._on_event(item)
            elif kind is Flags.NAK:
                self._on_nak(item, now)
            # A device sends no requests and acknowledges nothing; such frames are ignored.
        self._sync_stats()

    def event_done(self, boot_id: int, seq: int) -> None:
        """The application has handled event ``seq`` of ``boot_id``: acknowledge it."""
        if self._pending_event != (boot_id, seq):
            return  # a stale completion from before a session change or reconnect
        self._pending_event = None
        self._last_done = seq
        self._ack(seq)

    def abandon_event(self, boot_id: int, seq: int) -> None:
        """The application will not handle event ``seq``: leave it unacknowledged.

        The device retransmits it, and it is delivered again.
        """
        if self._pending_event == (boot_id, seq):
            self._pending_event = None

    # ------------------------------------------------------------------ internals

    def _send(self, frame: Frame) -> None:
        self.stats.frames_sent += 1
        self._out += frame.to_wire()

    def _ack(self, seq: int) -> None:
        self._send(Frame(TYPE_ACK, Flags.ACK, 0, seq))

    def _retransmit(self, pending: _Outstanding, now: float) -> None:
        frame = pending.frame
        pending.frame = Frame(frame.type, frame.flags | Flags.RETX, frame.seq, 0, frame.payload)
        pending.attempts += 1
        pending.deadline = now + self.timers.response_timeout
        self.stats.retransmits += 1
        self._send(pending.frame)

    def _on_response(self, frame: Frame, now: float) -> None:
        pending = self._outstanding
        if (
            pending is None
            or frame.corr != pending.frame.seq
            or frame.type not in (pending.frame.type, TYPE_ERROR)
        ):
            self.stats.duplicate_responses += 1
            return
        self._outstanding = None
        boot_id = self._probe(frame) if frame.type != TYPE_ERROR else None
        if boot_id is not None and boot_id != self.boot_id:
            self._events.append(SessionChanged(self.boot_id, boot_id))
            self.boot_id = boot_id
            self._pending_event = None
            self._last_done = None
        rtt = now - pending.first_sent
        self.stats.record_rtt(rtt)
        self._events.append(ResponseReceived(frame.corr, frame, rtt))

    def _on_nak(self, frame: Frame, now: float) -> None:
        self.stats.naks_received += 1
        pending = self._outstanding
        if pending is None or frame.corr != pending.frame.seq:
            return
        # The device could not take the frame; resend at once rather than wait for the timer.
        if pending.attempts > self.timers.max_retransmits:
            pending.deadline = now
            self.tick(now)
        else:
            self._retransmit(pending, now)

    def _on_event(self, frame: Frame) -> None:
        if self.boot_id is None:
            return  # no session yet: leave it unacknowledged, the device will send it again
        if self._pending_event is not None:
            return  # the application is still on the previous event (or this one)
        if frame.retransmitted and frame.seq == self._last_done:
            self.stats.duplicate_events += 1
            self._ack(frame.seq)
            return
        self.stats.events += 1
        self._pending_event = (self.boot_id, frame.seq)
        self._events.append(EventReceived(self.boot_id, frame))

    def _sync_stats(self) -> None:
        received = self._deframer.stats
        self.stats.crc_errors = received.crc_errors
        self.stats.framing_errors = (
            received.cobs_errors + received.short_frames + received.oversized
        )
        self.stats.dropped_bytes = received.dropped_bytes
