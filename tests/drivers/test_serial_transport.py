"""The serial transport on a real pty: opened again and again with a parity, errors as one line."""

from __future__ import annotations

import os
import tty

import pytest
import serial

from drivers.errors import DeviceUnavailableError
from drivers.serial_transport import SerialTransport, is_pty


async def test_a_pty_opens_again_and_again_whatever_parity_is_asked() -> None:
    # Linux drops a pty's parity bit and then refuses to set it again (EINVAL): a line a driver
    # reopened after a reconnection, with parity even, failed with termios.error.
    master, slave = os.openpty()
    tty.setraw(slave)
    path = os.ttyname(slave)
    assert is_pty(path)
    received: list[bytes] = []
    try:
        for _ in range(3):
            transport = await SerialTransport.open(
                path, received.append, lambda exc: None, 115200, parity=serial.PARITY_EVEN
            )
            transport.write(b"\x05")
            assert os.read(master, 16) == b"\x05"
            transport.close()
    finally:
        os.close(master)
        os.close(slave)


async def test_a_port_that_cannot_be_opened_is_one_device_error() -> None:
    with pytest.raises(DeviceUnavailableError, match="cannot open /nonexistent/tty"):
        await SerialTransport.open("/nonexistent/tty", lambda data: None, lambda exc: None)
    assert not is_pty("/dev/null")
