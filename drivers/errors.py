"""The exceptions of every device driver, built-in or plugin: the one error tree.

The supervision loop (:mod:`drivers.supervisor`) tells what happened by type alone: a
:class:`DeviceError` ends a connection and the device is restarted after a backoff; a
:class:`SessionRestartError` restarts it at once; a :class:`DeviceRejectedError` marks it
rejected. The daemon tells a refused command from one the device had already carried out the
same way (:class:`AlreadyDoneError`), never by the words of a message.
"""

from __future__ import annotations


class DeviceError(Exception):
    """Something went wrong with a device; the supervisor reconnects after a backoff."""


class DeviceUnavailableError(DeviceError):
    """The port cannot be opened, or the device went away (unplug, hang-up, EIO)."""


class LinkLostError(DeviceUnavailableError):
    """The port failed or went away in the middle of a link's life: the connection is over."""


class LinkTimeoutError(DeviceError):
    """A request got no response after every retransmission."""


class SessionRestartError(DeviceError):
    """The connection ended on purpose (the device rebooted): reconnect at once."""


class DeviceCommandError(DeviceError):
    """The device refused a command (it answered ERROR, or it takes no such command).

    ``code`` and ``name`` are the protocol's (TSP/1 ERROR codes, ``docs/protocols/tsp1.md``
    §3.3) when the device answered ERROR; 0 and ``""`` otherwise.
    """

    def __init__(self, request: str, code: int = 0, name: str = "", detail: str = "") -> None:
        refused = f"{request} refused: {name} ({code})" if name else request
        super().__init__(f"{refused}{': ' + detail if detail else ''}")
        self.request = request
        self.code = code
        self.name = name
        self.detail = detail


class AlreadyDoneError(DeviceCommandError):
    """The device already carried out this command (TSP/1 ERROR ``ALREADY_DONE``): a resend."""


class DeviceRejectedError(DeviceError):
    """The device is not approved (unknown identity, wrong firmware hash, failed challenge)."""


class DeviceNotReadyError(DeviceError):
    """A command was issued while the device is not online (or was rejected)."""
