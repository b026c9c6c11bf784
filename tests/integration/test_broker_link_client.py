"""The broker link's client writes each message at once: a write that finds the broker gone."""

from __future__ import annotations

import aiomqtt
import paho.mqtt.client as mqtt
import pytest

from controller.shell.mqtt import _LoopClient
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
    client = _LoopClient("127.0.0.1", broker.port, protocol=aiomqtt.ProtocolVersion.V5, timeout=5)
    async with client:
        await client.publish("t/x", b"before", qos=0)
        broker.stop()
        with pytest.raises(aiomqtt.MqttCodeError) as raised:
            await publish_many(client, 100)
        assert raised.value.rc == mqtt.MQTT_ERR_CONN_LOST
        with pytest.raises(aiomqtt.MqttError):
            await client.publish("t/x", b"after", qos=1)  # and so does every publish after it


async def publish_many(client: _LoopClient, count: int) -> None:
    """``count`` QoS 0 publishes, with no turn of the event loop between them."""
    for _ in range(count):
        await client.publish("t/x", b"x" * 4096, qos=0)
