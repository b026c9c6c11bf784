"""The exceptions drivers raise; the supervisor tells transient ones from refusals by type."""

from __future__ import annotations


class DeviceError(Exception):
    """Something went wrong with a device; the supervisor reconnects after a backoff."""


class DeviceUnavailableError(DeviceError):
    """The port cannot be opened, or the device went away (unplug, hang-up, EIO)."""


class LinkTimeoutError(DeviceError):
    """A request got no response after every retransmission."""


class DeviceCommandError(DeviceError):
    """The device answered a request with ERROR."""

    def __init__(self, request: str, code: int, name: str, detail: str) -> None:
        super().__init__(f"{request} refused: {name} ({code}){': ' + detail if detail else ''}")
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
