"""MQTT for every tablectl process: the project's own MQTT 5 client.

``codec.py`` is the packets (sans I/O), ``client.py`` the asyncio client over them, ``records.py``
what it takes and gives, ``connection.py`` makes one from a ``[broker]`` section.
"""

from controller.mqtt.client import Client
from controller.mqtt.codec import Message
from controller.mqtt.connection import new_client
from controller.mqtt.records import (
    Delivery,
    MqttCodeError,
    MqttError,
    Properties,
    SubscribeOptions,
    TlsSettings,
    Topic,
    Will,
    connect_properties,
    publish_properties,
)

__all__ = [
    "Client",
    "Delivery",
    "Message",
    "MqttCodeError",
    "MqttError",
    "Properties",
    "SubscribeOptions",
    "TlsSettings",
    "Topic",
    "Will",
    "connect_properties",
    "new_client",
    "publish_properties",
]
