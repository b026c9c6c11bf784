"""The MQTT client (controller/mqtt/client.py), writing at once: when the broker has gone, when a
burst fills it."""

from __future__ import annotations

import asyncio
import selectors

import paho.mqtt.client as mqtt
import pytest

from controller.mqtt import Client, MqttCodeError, MqttError
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
        with pytest.raises(MqttCodeError) as raised:
            await publish_many(client, 100)
        assert raised.value.rc == mqtt.MQTT_ERR_CONN_LOST
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
