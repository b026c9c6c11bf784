"""The reader simulator on a pty: the reader model in a wire device, served from asyncio.

Unplugging pulls the serial cable: the pty closes and its symlink disappears, while the reader
keeps sweeping and queueing events (edges beyond its queue are dropped and made up for by a
snapshot). A power cut is a separate fault: the reader reboots with a new boot id and an empty
queue, and waits for the host to map its antennas again.
"""

from __future__ import annotations

from typing import Any

from simulators.rfid import control
from simulators.rfid.commands import COMMANDS, Command
from simulators.rfid.model import ReaderModel
from simulators.tsp_pty import TspPtyServer


class ReaderPtyServer(TspPtyServer[ReaderModel]):
    """Serves one simulated reader on a pty until stopped."""

    COMMANDS = COMMANDS

    def describe(self) -> dict[str, Any]:
        """Where the device is."""
        return {"path": self.path, "device": self.port.device, "plugged": not self.unplugged}

    def apply(self, command: Command) -> dict[str, Any]:
        """Carry out a validated command; return the reply's fields."""
        return control.apply(self, command)
