"""A simulated USB reader inside the process that drives it: its control socket and scenario.

When a daemon's ``tsp-reader-usb`` (or ``feig-isc``) driver says ``backend = "simulated"``, the
reader lives in the daemon's own process (there is no kernel device to share). It is still
driven from outside like the pty simulator: a Unix control socket speaking the same JSON lines
(served by a thread, so it answers whatever the daemon's event loop is doing), and a scenario
file played by another thread. Every simulated USB reader starts the same way:
:func:`device_scenario`, then :func:`drive`.
"""

from __future__ import annotations

import contextlib
import socketserver
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from drivers.errors import DeviceUnavailableError
from drivers.rfid.tsp_reader.options import TspUsbReaderOptions
from drivers.usb_options import UsbBackendOptions
from simulators.command_vocabulary import CommandModel, Vocabulary
from simulators.control_server import handle_line
from simulators.errors import ScenarioError
from simulators.rfid.commands import COMMANDS
from simulators.rfid.usb_device import SimulatedUsbDevice, SimulatedUsbReader
from simulators.schedule import Scenario


class _ControlHandler(socketserver.StreamRequestHandler):
    server: _ControlServer

    def handle(self) -> None:
        with contextlib.suppress(OSError):
            while line := self.rfile.readline(64 * 1024):
                self.wfile.write(handle_line(self.server.reader.handle, line))


class _ControlServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, reader: SimulatedUsbDevice) -> None:
        self.reader = reader
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        super().__init__(str(path), _ControlHandler)


def serve_control(reader: SimulatedUsbDevice, path: Path) -> socketserver.BaseServer:
    """Serve the reader's control channel on a Unix socket, from a background thread, until the
    reader is closed."""
    server = _ControlServer(path, reader)

    def serve() -> None:
        server.serve_forever(poll_interval=0.05)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    threading.Thread(target=serve, name="usb-sim-control", daemon=True).start()
    reader.on_close.append(stop)
    return server


def play(reader: SimulatedUsbDevice, steps: Sequence[tuple[float, Any]]) -> threading.Thread:
    """Play a scenario's timed steps on a background thread."""
    started = time.monotonic()
    stopped = threading.Event()
    reader.on_close.append(stopped.set)

    def run() -> None:
        for at, command in steps:
            if stopped.wait(max(0.0, started + at - time.monotonic())):
                return
            reader.reply(command)

    thread = threading.Thread(target=run, name="usb-sim-scenario", daemon=True)
    thread.start()
    return thread


CommandT = TypeVar("CommandT", bound=CommandModel)
DeviceT = TypeVar("DeviceT", bound=SimulatedUsbDevice)


def device_scenario(
    options: UsbBackendOptions, commands: Vocabulary[CommandT]
) -> tuple[Scenario[CommandT], int | None]:
    """The scenario the options name (or none) and the seed (the options' over the
    scenario's); a scenario that cannot be read makes the device unavailable."""
    try:
        path = options.simulator_scenario
        scenario: Scenario[CommandT] = commands.load_scenario(path) if path else Scenario()
    except ScenarioError as exc:
        raise DeviceUnavailableError(f"simulated reader: {exc}") from None
    seed = options.simulator_seed if options.simulator_seed is not None else scenario.seed
    return scenario, seed


def drive(device: DeviceT, options: UsbBackendOptions, scenario: Scenario[Any]) -> DeviceT:
    """Carry out the scenario's commands at start, serve the device's control socket (if the
    options ask for one) and play the scenario's steps."""
    for command in scenario.initial:
        device.apply(command)
    if options.simulator_control:
        try:
            serve_control(device, Path(options.simulator_control))
        except OSError as exc:
            raise DeviceUnavailableError(f"simulated reader: control socket: {exc}") from None
    if scenario.steps:
        play(device, scenario.steps)
    return device


class ReaderBus(Protocol):
    """What a reader's start needs of the simulated USB bus
    (:class:`~simulators.rfid.usb_backend.SimulatedUsbBus`, which starts its readers from here)."""

    def add_reader(
        self, serial: str, *, vid: int, pid: int, seed: int | None
    ) -> SimulatedUsbReader: ...


def start_reader(bus: ReaderBus, options: TspUsbReaderOptions) -> SimulatedUsbReader:
    """Plug a reader as the driver options describe; serve its control socket and scenario."""
    scenario, seed = device_scenario(options, COMMANDS)
    serial = options.serial_number or "RDR-0001"
    reader = bus.add_reader(serial, vid=options.vid, pid=options.pid, seed=seed)
    return drive(reader, options, scenario)
