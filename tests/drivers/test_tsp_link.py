"""The TSP/1 link state machines, host against device, over an in-memory channel.

The lossy channel drops and corrupts whole frames at a given rate in both directions; time is
virtual, so every run is deterministic and fast.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.tsp.device_link import DeviceLink, DeviceTimers
from drivers.tsp.frame import TYPE_ERROR, TYPE_PING, Flags, Frame, NakReason
from drivers.tsp.link import (
    EventReceived,
    HostLink,
    LinkTimers,
    RequestFailed,
    ResponseReceived,
    SessionChanged,
)

ECHO = 0x30
EVENT = 0x40


def boot_probe(frame: Frame) -> int | None:
    """Test message set: a PING response is the 4-byte boot id."""
    return int.from_bytes(frame.payload[:4], "little") if frame.type == TYPE_PING else None


@dataclass
class Channel:
    """Carries frames one way, dropping or corrupting each with probability ``loss``."""

    rng: random.Random
    loss: float = 0.0
    dropped: int = 0

    def carry(self, wire: bytes) -> bytes:
        out = bytearray()
        for piece in wire.split(b"\x00")[:-1]:
            roll = self.rng.random()
            if roll < self.loss / 2:
                self.dropped += 1
                continue
            data = bytearray(piece)
            if roll < self.loss and data:
                index = self.rng.randrange(len(data))
                data[index] = data[index] ^ self.rng.randint(1, 255) or 1
            out += data + b"\x00"
        return bytes(out)


@dataclass
class Rig:
    """A host link, a device link and a tiny device application."""

    loss: float = 0.0
    seed: int = 0
    boot_id: int = 0x5EED1234
    host: HostLink = field(init=False)
    device: DeviceLink = field(init=False)
    executed: dict[int, int] = field(default_factory=dict)
    events: list[int] = field(default_factory=list)
    responses: dict[int, bytes] = field(default_factory=dict)
    failures: list[RequestFailed] = field(default_factory=list)
    sessions: list[SessionChanged] = field(default_factory=list)
    now: float = 0.0

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        self.up = Channel(random.Random(rng.random()), self.loss)
        self.down = Channel(random.Random(rng.random()), self.loss)
        self.host = HostLink(LinkTimers(0.3, 50), boot_probe, random.Random(self.seed))
        self.device = DeviceLink(DeviceTimers())

    def device_app(self) -> None:
        for request in self.device.take_requests():
            if request.type == TYPE_PING:
                self.device.respond(request, self.boot_id.to_bytes(4, "little"))
            elif request.type == ECHO:
                key = int.from_bytes(request.payload, "little")
                self.executed[key] = self.executed.get(key, 0) + 1
                self.device.respond(request, request.payload)
            else:
                self.device.respond(request, b"\x01", TYPE_ERROR)

    def host_app(self) -> None:
        for item in self.host.take_events():
            if isinstance(item, EventReceived):
                self.events.append(int.from_bytes(item.frame.payload, "little"))
                self.host.event_done(item.boot_id, item.frame.seq)
            elif isinstance(item, ResponseReceived):
                self.responses[item.request_seq] = item.frame.payload
            elif isinstance(item, RequestFailed):
                self.failures.append(item)
            else:
                self.sessions.append(item)

    def step(self, dt: float = 0.01) -> None:
        self.now += dt
        self.host.tick(self.now)
        self.device.tick(self.now)
        wire = b"".join(frame_bytes_to_wire(f) for f in self.device.take_frames())
        self.host.receive(self.down.carry(wire), self.now)
        self.host_app()
        self.device.receive(self.up.carry(self.host.take_output()), self.now)
        self.device_app()

    def run_until(self, done: object, limit: float = 600.0) -> None:
        deadline = self.now + limit
        while not done() and self.now < deadline:  # type: ignore[operator]
            self.step()

    def ping(self) -> int:
        return self.host.request(TYPE_PING, b"", self.now)


def frame_bytes_to_wire(encoded: bytes) -> bytes:
    from drivers.tsp.cobs import cobs_encode

    return cobs_encode(encoded) + b"\x00"


def test_events_wait_for_the_session() -> None:
    rig = Rig()
    rig.device.queue_event(EVENT, b"\x01")
    for _ in range(50):
        rig.step()
    assert rig.events == []  # the device holds events until the host has made contact
    rig.ping()
    rig.run_until(lambda: rig.events)
    assert rig.events == [1]
    assert rig.sessions == [SessionChanged(None, rig.boot_id)]


def test_retransmitted_request_is_executed_once() -> None:
    rig = Rig()
    rig.ping()
    rig.run_until(lambda: rig.sessions)
    seq = rig.host.request(ECHO, b"\x07", rig.now)
    # Lose the response: the device executed the request, the host times out and resends.
    rig.device.receive(rig.host.take_output(), rig.now)
    rig.device_app()
    rig.device.take_frames()
    rig.run_until(lambda: seq in rig.responses)
    assert rig.executed == {7: 1}
    assert rig.responses[seq] == b"\x07"
    assert rig.host.stats.retransmits == 1
    assert rig.device.stats.duplicate_responses == 1


def test_new_request_reusing_a_seq_is_executed() -> None:
    rig = Rig()
    rig.ping()
    rig.run_until(lambda: rig.sessions)
    rig.host.request(ECHO, b"\x01", rig.now)
    rig.run_until(lambda: rig.executed)
    # A restarted host process may start at the same seq; without RETX it is a new request.
    seq = rig.host._seq
    rig.host = HostLink(LinkTimers(), boot_probe)
    rig.host._seq = seq - 1
    rig.host.request(ECHO, b"\x01", rig.now)
    rig.run_until(lambda: rig.executed[1] == 2, limit=5)
    assert rig.executed == {1: 2}


def test_lost_ack_gives_a_duplicate_event_that_is_dropped() -> None:
    rig = Rig()
    rig.ping()
    rig.run_until(lambda: rig.sessions)
    rig.device.queue_event(EVENT, b"\x05")
    rig.device.tick(rig.now)
    rig.host.receive(b"".join(frame_bytes_to_wire(f) for f in rig.device.take_frames()), rig.now)
    rig.host_app()
    rig.host.take_output()  # the ACK is lost
    rig.device.queue_event(EVENT, b"\x06")
    rig.run_until(lambda: len(rig.events) == 2)
    assert rig.events == [5, 6]
    assert rig.host.stats.duplicate_events == 1


def test_event_is_acknowledged_only_when_handled() -> None:
    rig = Rig()
    rig.ping()
    rig.run_until(lambda: rig.sessions)
    rig.device.queue_event(EVENT, b"\x09")
    received: list[EventReceived] = []
    for _ in range(300):  # three seconds of retransmissions while the host is busy with it
        rig.now += 0.01
        rig.device.tick(rig.now)
        rig.host.receive(
            b"".join(frame_bytes_to_wire(f) for f in rig.device.take_frames()), rig.now
        )
        received += [e for e in rig.host.take_events() if isinstance(e, EventReceived)]
        rig.device.receive(rig.host.take_output(), rig.now)
    assert len(received) == 1
    assert rig.device.queued_events == 1
    rig.host.event_done(received[0].boot_id, received[0].frame.seq)
    rig.device.receive(rig.host.take_output(), rig.now)
    assert rig.device.queued_events == 0


def test_reboot_keeps_queued_events_and_changes_the_session() -> None:
    rig = Rig()
    rig.ping()
    rig.run_until(lambda: rig.sessions)
    rig.device.queue_event(EVENT, b"\x01")
    rig.run_until(lambda: rig.events == [1])
    rig.device.queue_event(EVENT, b"\x02")
    rig.device.reboot()
    rig.boot_id = 0xB007
    rig.device.queue_event(EVENT, b"\x03")
    for _ in range(100):
        rig.step()
    assert rig.events == [1]  # held until the host talks to the rebooted device
    rig.ping()
    rig.run_until(lambda: len(rig.events) == 3)
    assert rig.events == [1, 2, 3]
    assert rig.sessions[-1] == SessionChanged(0x5EED1234, 0xB007)


def test_request_fails_after_every_retransmission() -> None:
    host = HostLink(LinkTimers(0.3, 3), boot_probe)
    seq = host.request(ECHO, b"", 0.0)
    first = host.take_output()
    now = 0.0
    failed: list[RequestFailed] = []
    while not failed:
        now += 0.05
        host.tick(now)
        failed = [e for e in host.take_events() if isinstance(e, RequestFailed)]
    assert failed == [RequestFailed(seq, ECHO, 4)]
    assert host.stats.retransmits == 3
    assert abs(now - 1.2) < 0.06
    assert first.startswith(Frame(ECHO, Flags.REQ, seq).to_wire()[:2])
    assert not host.busy


def test_nak_triggers_an_immediate_retransmission() -> None:
    host = HostLink(LinkTimers(0.3, 3), boot_probe)
    seq = host.request(ECHO, b"", 0.0)
    host.take_output()
    host.receive(Frame(0x01, Flags.NAK, 0, seq, bytes([NakReason.BUSY])).to_wire(), 0.01)
    resent = host.take_output()
    assert resent == Frame(ECHO, Flags.REQ | Flags.RETX, seq).to_wire()
    assert host.stats.naks_received == 1


def test_bad_header_is_answered_with_a_nak() -> None:
    device = DeviceLink()
    bad = bytearray(Frame(ECHO, Flags.REQ, 9).encode())
    bad[0] = 2  # version 2
    from drivers.tsp.crc import crc16_ccitt_false

    bad[-2:] = crc16_ccitt_false(bytes(bad[:-2])).to_bytes(2, "little")
    device.receive(frame_bytes_to_wire(bytes(bad)), 0.0)
    assert device.take_frames() == [Frame(0x01, Flags.NAK, 0, 9, b"\x01").encode()]
    assert device.take_requests() == []


def test_late_response_is_counted_and_dropped() -> None:
    rig = Rig()
    rig.ping()
    rig.run_until(lambda: rig.sessions)
    stale = Frame(ECHO, Flags.RSP, 99, 42, b"").to_wire()
    rig.host.receive(stale, rig.now)
    assert rig.host.stats.duplicate_responses == 1
    assert rig.host.take_events() == []


@settings(max_examples=60, deadline=None)
@given(
    loss=st.floats(0.0, 0.3),
    seed=st.integers(0, 2**32),
    n_requests=st.integers(0, 25),
    n_events=st.integers(0, 40),
)
def test_lossy_channel_exactly_once_in_order(
    loss: float, seed: int, n_requests: int, n_events: int
) -> None:
    rig = Rig(loss=loss, seed=seed)
    rng = random.Random(seed)
    sent = 0
    expected: dict[int, int] = {}
    while not rig.sessions:
        if not rig.host.busy:
            rig.ping()
        rig.step()
    for index in range(n_events):
        rig.device.queue_event(EVENT, index.to_bytes(2, "little"))
    while sent < n_requests or len(rig.events) < n_events:
        if sent < n_requests and not rig.host.busy and rng.random() < 0.5:
            expected[rig.host.request(ECHO, sent.to_bytes(2, "little"), rig.now)] = sent
            sent += 1
        rig.step()
        assert rig.now < 3600, "the link stopped making progress"
    rig.run_until(lambda: not rig.host.busy)
    # Every event arrived exactly once and in order.
    assert rig.events == list(range(n_events))
    # No request was executed twice; every answered request was executed and echoed.
    assert all(count == 1 for count in rig.executed.values())
    for seq, payload in rig.responses.items():
        if seq in expected:
            assert int.from_bytes(payload, "little") == expected[seq]
            assert rig.executed.get(expected[seq]) == 1


def test_event_in_hand_survives_a_reconnect_and_abandoned_one_is_redelivered() -> None:
    rig = Rig()
    rig.ping()
    rig.run_until(lambda: rig.sessions)
    rig.device.queue_event(EVENT, b"\x01")
    rig.device.tick(rig.now)
    rig.host.receive(b"".join(frame_bytes_to_wire(f) for f in rig.device.take_frames()), rig.now)
    (first,) = [e for e in rig.host.take_events() if isinstance(e, EventReceived)]
    # The cable is replugged while the application still holds the event: it finishes later,
    # and the retransmitted copy that arrives meanwhile is not delivered a second time.
    rig.host.reset_transport()
    rig.now += 1.0
    rig.device.tick(rig.now)
    rig.host.receive(b"".join(frame_bytes_to_wire(f) for f in rig.device.take_frames()), rig.now)
    assert not [e for e in rig.host.take_events() if isinstance(e, EventReceived)]
    rig.host.event_done(first.boot_id, first.frame.seq)
    rig.device.receive(rig.host.take_output(), rig.now)
    assert rig.device.queued_events == 0
    # An event the application gives up on is delivered again.
    rig.device.queue_event(EVENT, b"\x02")
    rig.device.tick(rig.now)
    rig.host.receive(b"".join(frame_bytes_to_wire(f) for f in rig.device.take_frames()), rig.now)
    (second,) = [e for e in rig.host.take_events() if isinstance(e, EventReceived)]
    rig.host.abandon_event(second.boot_id, second.frame.seq)
    rig.run_until(lambda: rig.events == [2])
    assert rig.events == [2]


def test_events_numbered_from_a_counter_shared_with_responses_are_taken_at_once() -> None:
    # A device may number its responses and its events from one counter: each event then skips
    # the numbers its responses took. Such events are taken and acknowledged as they come, none
    # held back (a held GROUP_DISPENSED would reach the table after the cards' reads).
    host = HostLink(LinkTimers(0.3, 3), boot_probe)
    boot = (0x5EED1234).to_bytes(4, "little")
    device_seq = 0

    def next_device_seq() -> int:
        nonlocal device_seq
        device_seq = device_seq % 255 + 1
        return device_seq

    taken: list[int] = []
    for round_ in range(300):  # more than one wrap of the counter
        seq = host.request(TYPE_PING, b"", float(round_))
        host.take_output()
        host.receive(Frame(TYPE_PING, Flags.RSP, next_device_seq(), seq, boot).to_wire(), round_)
        event_seq = next_device_seq()
        host.receive(Frame(EVENT, Flags.EVT, event_seq, 0, b"\x01").to_wire(), round_ + 0.1)
        delivered = [e for e in host.take_events() if isinstance(e, EventReceived)]
        assert [e.frame.seq for e in delivered] == [event_seq]
        host.event_done(0x5EED1234, event_seq)
        assert host.take_output() == Frame(0x00, Flags.ACK, 0, event_seq).to_wire()
        taken.append(event_seq)
    assert len(taken) == 300
