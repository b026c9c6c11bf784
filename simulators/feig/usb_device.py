"""A simulated FEIG ID ISC reader on the simulated USB bus (:mod:`simulators.rfid.usb_backend`).

The reader's USB face: vendor ID 0x0AB1 (FEIG ELECTRONIC's) and product ID 0x0002 ("OBID
RFID-Reader"), both as the USB ID repository (usb.ids) lists them (the driver's ``pid`` is an
option all the same: a reader of another model may have another), the manufacturer and product
strings FEIG's own udev rule matches ("FEIG ELECTRONIC GmbH", "OBID RFID-Reader":
``41-feig.rules`` of FEIG's Linux SDK), vendor class, one bulk OUT and one bulk IN endpoint
carrying the same ID ISC frames as the serial line.
Behind them is one reader of the byte-level :class:`~simulators.feig.bus.FeigLine` the pty
simulator uses: every bulk OUT transfer is fed to it, and each answer is put in the IN
endpoint's buffer once the reader has done its work (its reaction and the inventory's RF time;
USB adds no wire time worth counting).

It is driven like the pty simulator, with the same commands (:mod:`simulators.feig.control`):
``{"fault": "unplug"}`` takes it off the bus (ENODEV on open handles), ``{"fault": "replug"}``
powers it up afresh at a new bus address.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol

from drivers.rfid.feig.options import FEIG_VID, FeigOptions
from simulators.feig import control
from simulators.feig.bus import FeigLine
from simulators.feig.commands import COMMANDS, Command
from simulators.rfid.usb_device import SimulatedUsbDevice
from simulators.rfid.usb_runner import device_scenario, drive

SIMULATED_PID = 0x0002
"""The product ID the USB ID repository (usb.ids) gives FEIG's "OBID RFID-Reader"."""
DEFAULT_SERIAL = "FEIG-0001"


class SimulatedFeigUsbReader(SimulatedUsbDevice):
    """One ID ISC reader model behind two bulk endpoints."""

    COMMANDS = COMMANDS

    def __init__(
        self,
        line: FeigLine,
        serial: str,
        *,
        vid: int,
        pid: int,
        address: int,
        rng: random.Random | None = None,
        rf_timing: bool = True,
        chunk: int = 64,
        next_address: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(
            vid=vid, pid=pid, address=address, rng=rng, chunk=chunk, next_address=next_address
        )
        #: Its line of one reader (``line``, as :class:`~simulators.feig.control.FeigHost` says).
        self.line = line
        self.rf_timing = rf_timing
        self.start_rates: dict[str, float] = {}
        self._serial = serial
        self._busy_until = 0.0

    @property
    def serial(self) -> str:
        """The USB serial number."""
        return self._serial

    @property
    def device(self) -> str:
        """Where a driver finds it: VID, PID and serial number."""
        return f"usb {self.vid:04x}:{self.pid:04x} serial {self.serial}"

    @property
    def path(self) -> str | None:
        """Its bus position while plugged in, else None."""
        return self.where() if self.plugged else None

    def strings(self) -> dict[int, str]:
        """Manufacturer, product and serial number."""
        return {1: "FEIG ELECTRONIC GmbH", 2: "OBID RFID-Reader", 3: self.serial}

    def bulk_out(self, generation: int, data: bytes) -> int:
        """The host's bytes go to the reader model; its answers wait out the RF time."""
        with self.lock:
            self.check(generation)
            self.transfers["out"] += 1
            now = self.now()
            for answer in self.line.receive(data, now):
                # One request at a time on the reader: an answer waits for its work.
                work = answer.work if self.rf_timing else 0.0
                self._busy_until = max(now, self._busy_until) + work
                if answer.data:
                    self.send(answer.data, self._busy_until if work else None)
            return len(data)

    def power_on(self) -> None:
        """No half-read request, no inventory pages waiting."""
        self.line.power_on()
        self._busy_until = 0.0

    def apply(self, command: Command) -> dict[str, Any]:
        """One validated command (scenario steps)."""
        with self.lock:
            return control.apply(self, command)

    def describe(self) -> dict[str, Any]:
        """Where the reader is, and what the model shows."""
        with self.lock:
            return {**control.status(self), **super().describe()}


class UsbBus(Protocol):
    """What plugging a reader in needs of the simulated USB bus
    (:class:`~simulators.rfid.usb_backend.SimulatedUsbBus`, which starts its readers from here)."""

    def next_address(self) -> int: ...
    def add(self, device: SimulatedFeigUsbReader) -> SimulatedFeigUsbReader: ...


def add_feig_reader(
    bus: UsbBus,
    serial: str = DEFAULT_SERIAL,
    *,
    vid: int = FEIG_VID,
    pid: int = SIMULATED_PID,
    antennas: int = 8,
    seed: int | None = None,
    rf_timing: bool = True,
) -> SimulatedFeigUsbReader:
    """Plug a new simulated ID ISC reader into ``bus``."""
    line = FeigLine((0,), antennas, seed, rf_timing=rf_timing)
    device = SimulatedFeigUsbReader(
        line,
        serial,
        vid=vid,
        pid=pid,
        address=bus.next_address(),
        rng=random.Random(seed),
        rf_timing=rf_timing,
        next_address=bus.next_address,
    )
    return bus.add(device)


def start_reader(bus: UsbBus, options: FeigOptions) -> SimulatedFeigUsbReader:
    """Plug a reader as ``feig-isc``'s options describe; serve its control socket and scenario."""
    scenario, seed = device_scenario(options, COMMANDS)
    assert options.vid is not None
    assert options.pid is not None
    antennas = 8
    device = add_feig_reader(
        bus,
        options.serial_number or DEFAULT_SERIAL,
        vid=options.vid,
        pid=options.pid,
        antennas=antennas,
        seed=seed,
    )
    return drive(device, options, scenario)


__all__ = [
    "DEFAULT_SERIAL",
    "SIMULATED_PID",
    "SimulatedFeigUsbReader",
    "add_feig_reader",
    "start_reader",
]
