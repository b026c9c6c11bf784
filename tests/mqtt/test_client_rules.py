"""The client (controller/mqtt/client.py) against a broker scripted byte by byte on a real
loopback socket, for the rules mosquitto never makes it show: the broker's Receive Maximum
(4.9), Keep Alive (3.1.2.10), a DISCONNECT from the broker (3.14), a malformed packet (4.13),
a refused CONNECT (3.2.2.2)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from controller.mqtt import Client, MqttCodeError, MqttError, codec

pytestmark = pytest.mark.timeout(30)


class ScriptedBroker:
    """One accepted connection, read and written by the test."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    async def packet(self) -> tuple[int, bytes]:
        """The next packet the client sent: its first byte and its body."""
        loop = asyncio.get_running_loop()
        while True:
            got = self.cut()
            if got is not None:
                return got
            data = await loop.sock_recv(self.sock, 65536)
            if not data:
                raise EOFError("the client closed the connection")
            self.buffer += data

    def cut(self) -> tuple[int, bytes] | None:
        buf = self.buffer
        if len(buf) < 2:
            return None
        try:
            length, start = codec.read_varint(buf, 1, len(buf))
        except codec.ProtocolError:
            return None  # its length is not all here yet
        if start + length > len(buf):
            return None
        first, body = buf[0], bytes(buf[start : start + length])
        del buf[: start + length]
        return first, body

    def pending(self) -> list[tuple[int, bytes]]:
        """Every packet already in the socket's buffer, without waiting for more."""
        try:
            while data := self.sock.recv(65536):
                self.buffer += data
        except BlockingIOError:
            pass
        found = []
        while (got := self.cut()) is not None:
            found.append(got)
        return found

    async def send(self, data: bytes) -> None:
        await asyncio.get_running_loop().sock_sendall(self.sock, data)

    async def connack(self, properties: bytes = b"", reason: int = 0) -> None:
        first, _ = await self.packet()
        assert first == 0x10  # CONNECT first (3.1)
        body = bytes((0, reason)) + codec.varint(len(properties)) + properties
        await self.send(b"\x20" + codec.varint(len(body)) + body)


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[int, asyncio.Future[ScriptedBroker]]]:
    """A listening port, and the broker side of the first connection made to it."""
    loop = asyncio.get_running_loop()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.setblocking(False)
    accepted: asyncio.Future[ScriptedBroker] = loop.create_future()

    async def accept() -> None:
        sock, _ = await loop.sock_accept(server)
        sock.setblocking(False)
        accepted.set_result(ScriptedBroker(sock))

    task = loop.create_task(accept())
    yield server.getsockname()[1], accepted
    task.cancel()
    server.close()
    if accepted.done():
        accepted.result().sock.close()


async def connected(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]],
    properties: bytes = b"",
    **options: Any,
) -> tuple[Client, ScriptedBroker]:
    """A client connected to the scripted broker, whose CONNACK carries ``properties``."""
    port, accepted = scripted
    client = Client("127.0.0.1", port, timeout=10, **options)
    connecting = asyncio.create_task(client.connect())
    broker = await accepted
    await broker.connack(properties=properties)
    await connecting
    return client, broker


def mid_of(body: bytes) -> int:
    """A QoS 1 PUBLISH's Packet Identifier (after its topic, 3.3.2.2)."""
    at = 2 + int.from_bytes(body[:2])
    return int.from_bytes(body[at : at + 2])


async def test_the_client_keeps_within_the_broker_s_receive_maximum_4_9(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]],
) -> None:
    """The broker takes 2 QoS 1 messages unacknowledged (Receive Maximum 2 in its CONNACK).
    Ten handed over at once: two are sent, the rest wait; each PUBACK lets exactly one more
    go, and a QoS 0 message handed over after them is sent after them, in order."""
    client, broker = await connected(scripted, bytes.fromhex("210002"))
    deliveries = [client.hand_over("t", str(n).encode(), qos=1) for n in range(10)]
    client.hand_over("t", b"last", qos=0)
    # hand_over wrote what it could before returning: over loopback it is all here already
    first = broker.pending()
    assert [mid_of(body) for _, body in first] == [deliveries[0].mid, deliveries[1].mid]
    for n in range(8):
        await broker.send(codec.puback(deliveries[n].mid))
        await client.acknowledged(deliveries[n])
        first_byte, body = await broker.packet()
        assert first_byte == 0x32  # PUBLISH, QoS 1
        assert mid_of(body) == deliveries[n + 2].mid
        if n < 7:
            assert broker.pending() == []  # one freed place, one more sent: no more
    # the QoS 0 message went once the last QoS 1 message before it had been sent
    assert broker.pending() == [(0x30, b"\x00\x01t\x00last")]
    assert not deliveries[9].is_published()
    for n in (8, 9):
        await broker.send(codec.puback(deliveries[n].mid))
        await client.acknowledged(deliveries[n])
    assert all(d.reason == 0 for d in deliveries)


async def test_a_broker_that_stops_answering_pings_ends_the_connection_3_1_2_10(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]],
) -> None:
    """Keep Alive 2 s (the broker's Server Keep Alive, which rules, 3.2.2.3.14): a PINGREQ
    once idle for half of it; the first two answered keep the connection; the third left
    unanswered ends it with an error, which every reader of its messages gets too."""
    client, broker = await connected(scripted, bytes.fromhex("130002"), keepalive=60)
    assert client.keepalive == 2
    for _ in range(2):
        assert await broker.packet() == (0xC0, b"")
        await broker.send(bytes.fromhex("d000"))
    assert await broker.packet() == (0xC0, b"")
    with pytest.raises(MqttError, match="PINGRESP"):
        await client.wait_lost()
    with pytest.raises(MqttError, match="PINGRESP"):
        await anext(aiter(client.messages))
    assert await broker.packet() == (0xE0, bytes((0x8D,)))  # DISCONNECT: Keep Alive timeout


async def test_a_broker_s_disconnect_ends_the_connection_with_its_reason_3_14(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]],
) -> None:
    client, broker = await connected(scripted)
    await broker.send(bytes.fromhex("e009 8b 07 1f000462796521"))  # shutting down, "bye!"
    with pytest.raises(MqttCodeError, match="bye!") as raised:
        await client.wait_lost()
    assert raised.value.rc == 0x8B
    with pytest.raises(MqttError):
        await client.publish("t", b"x", qos=1)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("30ffffffff7f", 0x81),  # a Remaining Length of five bytes
        ("3405000161000100", 0x82),  # QoS 2, above the subscription's
        ("50020001", 0x81),  # PUBREC: nothing was sent at QoS 2
    ],
)
async def test_a_malformed_packet_ends_the_connection_with_a_disconnect_4_13(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]], data: str, reason: int
) -> None:
    """The client says why (DISCONNECT with the reason code) and closes; the error reaches
    whoever waits, and the process goes on."""
    client, broker = await connected(scripted)
    await broker.send(bytes.fromhex(data))
    with pytest.raises(MqttError):
        await client.wait_lost()
    assert await broker.packet() == (0xE0, bytes((reason,)))
    with pytest.raises(EOFError):
        await broker.packet()


async def test_a_refused_connect_raises_the_broker_s_reason_3_2_2_2(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]],
) -> None:
    port, accepted = scripted
    client = Client("127.0.0.1", port, timeout=10, username="u", password="wrong")
    connecting = asyncio.create_task(client.connect())
    broker = await accepted
    await broker.connack(reason=0x86)
    with pytest.raises(MqttCodeError, match="Bad User Name or Password") as raised:
        await connecting
    assert raised.value.rc == 0x86


async def test_a_broker_that_never_answers_the_connect_times_out(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]],
) -> None:
    port, accepted = scripted
    client = Client("127.0.0.1", port, timeout=0.5)
    with pytest.raises(MqttError, match="no answer"):
        await client.connect()
    broker = await accepted
    first, _ = await broker.packet()
    assert first == 0x10


async def test_a_connect_cancelled_while_it_waits_leaves_no_connection_behind(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]],
) -> None:
    """A reconnect loop cancelled while the broker has not answered yet (the daemon stopping):
    the connection is closed, not left open with nobody reading it."""
    port, accepted = scripted
    client = Client("127.0.0.1", port, timeout=30)
    connecting = asyncio.create_task(client.connect())
    broker = await accepted
    first, _ = await broker.packet()
    assert first == 0x10
    connecting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await connecting
    with pytest.raises(EOFError):
        await broker.packet()


async def test_a_packet_identifier_is_never_given_twice_while_messages_wait_2_2_1(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]],
) -> None:
    """Receive Maximum 1: one message in flight, the rest waiting for a place. Past 65,535
    unanswered the next is refused rather than given an identifier a waiting one holds."""
    client, broker = await connected(scripted, bytes.fromhex("210001"))
    deliveries = [client.hand_over("t", b"", qos=1, write=False) for _ in range(65_535)]
    assert len({d.mid for d in deliveries}) == 65_535
    with pytest.raises(MqttError, match="every Packet Identifier is in use"):
        client.hand_over("t", b"", qos=1)
    client.write()
    await broker.send(codec.puback(deliveries[0].mid))
    await client.acknowledged(deliveries[0])
    assert client.hand_over("t", b"", qos=1).mid == deliveries[0].mid  # free again


async def test_a_paced_client_reads_a_backlog_on_at_once(
    scripted: tuple[int, asyncio.Future[ScriptedBroker]],
) -> None:
    """A client that reads at a pace (one read a tick, here a tick of 1 s) reads on at once
    after a read of a backlog's size: 2 MiB of messages that came while it waited for its tick
    (a session's backlog) arrive within a few ticks, not one read (256 KiB at most) a tick."""
    client, broker = await connected(scripted, read_interval=1.0)
    await broker.send(codec.publish("t", b"first", 0, False, 0))
    messages = client.messages
    first = await anext(messages)
    assert first.payload == b"first"  # read: the client waits for its next tick now
    payload = bytes(1000)
    count = 2048
    blob = b"".join(codec.publish("t", payload, 0, False, 0) for _ in range(count))
    sending = asyncio.create_task(broker.send(blob))
    received = 0
    async with asyncio.timeout(5):  # one read a tick would take 8 s at least
        async for message in messages:
            assert message.payload == payload
            received += 1
            if received == count:
                break
        await sending
    assert received == count
    await client.disconnect()
