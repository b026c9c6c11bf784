"""The MQTT client (controller/mqtt/client.py), writing at once: when the broker has gone, when a
burst fills it; reading at a pace: every message of a burst, and an answer awaited at once."""

from __future__ import annotations

import asyncio
import selectors

import pytest

from controller.mqtt import Client, MqttError, connect_properties
from tests.integration.broker import Broker

pytestmark = pytest.mark.broker


async def test_a_write_to_a_broker_that_has_gone_fails_the_publish_not_the_process(
    broker: Broker,
) -> None:
    """The broker's process is gone; the client has not read its end of the connection yet
    (no turn of the loop between the writes), so its writes meet the closed connection
    itself: the first is refused by the peer (RST), a later one fails (EPIPE or ECONNRESET).
    That failure must come out of ``publish`` as an MQTT error the session ends on, and a
    reconnect follows; it once raised an AttributeError from inside the client instead,
    which ended the daemon."""
    client = Client("127.0.0.1", broker.port, timeout=5)
    async with client:
        await client.publish("t/x", b"before", qos=0)
        broker.stop()
        with pytest.raises(MqttError, match=r"lost|broke"):
            await publish_many(client, 100)
        with pytest.raises(MqttError):
            await client.publish("t/x", b"after", qos=1)  # and so does every publish after it


async def publish_many(client: Client, count: int) -> None:
    """``count`` QoS 0 publishes, with no turn of the event loop between them."""
    for _ in range(count):
        await client.publish("t/x", b"x" * 4096, qos=0)


async def test_a_burst_that_fills_the_socket_leaves_nothing_watched_once_it_is_written(
    broker: Broker,
) -> None:
    """A burst larger than the socket's buffer is written in parts, the socket watched in
    between. Once all of it has gone the socket must no longer be watched for writing: a watch
    left behind wakes the event loop on every turn (the socket is always writable) and the
    daemon spins a core while the table is idle."""
    client = Client("127.0.0.1", broker.port, timeout=5)
    async with client:
        fd = client.fileno()
        assert fd >= 0
        for _ in range(5):
            for _ in range(40):  # ~10 MB with no turn of the loop: the socket fills
                client.send_now("t/burst", b"x" * 256_000)
            async with asyncio.timeout(30):
                while client.want_write():
                    await asyncio.sleep(0.01)
            for _ in range(5):  # the loop's next turns: anything deferred has been done
                await asyncio.sleep(0)
            assert not watched_for_writing(fd)


def watched_for_writing(fd: int) -> bool:
    loop = asyncio.get_running_loop()
    try:
        key = loop._selector.get_key(fd)  # type: ignore[attr-defined]
    except KeyError:
        return False
    return bool(key.events & selectors.EVENT_WRITE)


async def test_a_client_reading_at_a_pace_gets_every_message_of_a_burst_in_order(
    broker: Broker,
) -> None:
    """Read at most every ``read_interval``, each read takes every message the socket holds
    : none is left behind until the next message comes, and
    they come in the order they were published. The burst is what its session kept while it
    was away (mosquitto keeps 1000 by default), sent at once when it connects."""
    count = 900
    properties = connect_properties(session_expiry=3600, receive_maximum=count)

    def session(read_interval: float = 0.0) -> Client:
        return Client(
            "127.0.0.1",
            broker.port,
            identifier="paced",
            clean_start=False,
            properties=properties,
            manual_ack=True,
            timeout=30,
            read_interval=read_interval,
        )

    async with session() as away:
        await away.subscribe("t/paced", qos=1)
    async with Client("127.0.0.1", broker.port, timeout=30) as writer:
        for n in range(count):
            info = writer.hand_over("t/paced", str(n).encode(), qos=1)
        await writer.acknowledged(info)  # the broker has them all (sent in order)
    reader = session(read_interval=1.0)  # one packet a read would take 15 minutes
    got: list[int] = []
    async with reader:
        async with asyncio.timeout(60):
            async for message in reader.messages:
                got.append(int(message.payload))
                reader.ack(message)
                if len(got) == count:
                    break
    assert got == list(range(count))


async def test_a_client_reading_at_a_pace_reads_an_awaited_answer_at_once(
    broker: Broker,
) -> None:
    """Paused for an hour between reads, the client still reads the broker's answers it waits
    for (CONNACK, SUBACK, PUBACK) as they come: the calls return, well within their timeout."""
    client = Client("127.0.0.1", broker.port, timeout=10, read_interval=3600.0)
    async with client:
        await client.subscribe("t/answer", qos=1)
        async with asyncio.timeout(30):
            for n in range(3):
                await client.publish("t/answer", str(n).encode(), qos=1)
            message = await anext(aiter(client.messages))  # read with the answers it came with
        assert message.payload == b"0"
