"""How a tablectl process reaches the broker: one ``[broker]`` section, one MQTT client.

The daemon, the pit service and the command-line tools (``tablectl tail``, ``tablectl dealer``)
all build their client here, from the same :class:`~controller.config.BrokerSection`: address,
login, TLS (server verification, a client certificate), keepalive and timeout. A site's broker is
then reached the same way by every part, and a tool given the table's config connects as the
table does, TLS included.
"""

from __future__ import annotations

import socket
from typing import Any

from controller.config import BrokerSection, TlsSection
from controller.mqtt.client import Client
from controller.mqtt.records import TlsSettings

#: Small messages, and a console waiting for each response: without this, Nagle's algorithm and
#: the broker's delayed ACKs hold a response back 40 ms or more.
NO_DELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)


def tls_settings(tls: TlsSection) -> TlsSettings | None:
    """The client's TLS settings (None: plain TCP). The server is always verified."""
    if not tls.enabled:
        return None
    return TlsSettings(
        ca_file=str(tls.ca_file) if tls.ca_file else None,
        cert_file=str(tls.cert_file) if tls.cert_file else None,
        key_file=str(tls.key_file) if tls.key_file else None,
        insecure=tls.insecure,
    )


def new_client(broker: BrokerSection, **options: Any) -> Client:
    """A client of this broker; ``options`` add to (or override) the section's: identifier,
    will, session settings, manual acknowledgement."""
    settings: dict[str, Any] = {
        "username": broker.username,
        "password": broker.secret(),
        "keepalive": broker.keepalive,
        "timeout": broker.timeout,
        "tls": tls_settings(broker.tls),
        "socket_options": NO_DELAY,
    }
    settings.update(options)
    return Client(broker.host, broker.port, **settings)
