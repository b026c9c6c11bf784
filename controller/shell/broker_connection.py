"""How a tablectl process reaches the broker: one ``[broker]`` section, one MQTT client.

The daemon, the pit service and the command-line tools (``tablectl tail``, ``tablectl dealer``)
all build their client here, from the same :class:`~controller.config.BrokerSection`: address,
login, TLS (server verification, a client certificate), keepalive and timeout. A site's broker is
then reached the same way by every part, and a tool given the table's config connects as the
table does, TLS included.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any, TypeVar

import aiomqtt

from controller.config import BrokerSection, TlsSection

ClientType = TypeVar("ClientType", bound=aiomqtt.Client)

#: Small messages, and a console waiting for each response: without this, Nagle's algorithm and
#: the broker's delayed ACKs hold a response back 40 ms or more.
NO_DELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)


def tls_parameters(tls: TlsSection) -> aiomqtt.TLSParameters | None:
    """The client's TLS settings (None: plain TCP). The server is always verified."""
    if not tls.enabled:
        return None
    return aiomqtt.TLSParameters(
        ca_certs=str(tls.ca_file) if tls.ca_file else None,
        certfile=str(tls.cert_file) if tls.cert_file else None,
        keyfile=str(tls.key_file) if tls.key_file else None,
        cert_reqs=ssl.CERT_REQUIRED,
    )


def new_client(broker: BrokerSection, client_type: type[ClientType], **options: Any) -> ClientType:
    """A client of ``client_type`` for this broker; ``options`` add to (or override) the
    section's: identifier, protocol, will, session settings."""
    settings: dict[str, Any] = {
        "username": broker.username,
        "password": broker.secret(),
        "protocol": aiomqtt.ProtocolVersion.V5,
        "keepalive": broker.keepalive,
        "timeout": broker.timeout,
        "tls_params": tls_parameters(broker.tls),
        "tls_insecure": broker.tls.insecure if broker.tls.enabled else None,
        "socket_options": NO_DELAY,
    }
    settings.update(options)
    return client_type(broker.host, broker.port, **settings)
