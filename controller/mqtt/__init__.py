"""MQTT for every tablectl process: the only package that touches paho-mqtt (its public API).

``client.py`` is the asyncio client, ``records.py`` what it takes and gives, ``connection.py``
makes one from a ``[broker]`` section.
"""

# paho's records the client's callers pass or read, named here so that no other module imports paho
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from controller.mqtt.client import Client
from controller.mqtt.connection import new_client
from controller.mqtt.records import (
    Message,
    MqttCodeError,
    MqttError,
    TlsSettings,
    Topic,
    Will,
    connect_properties,
    publish_properties,
)

__all__ = [
    "Client",
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
