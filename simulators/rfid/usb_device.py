"""One simulated USB reader: the reader model on its own thread, behind two bulk endpoints.

A real USB device runs by itself; so does this one. A device thread runs the model's sweeps and
the link's timers and puts what the reader sends in the IN endpoint's buffer; bulk OUT transfers
feed the host's bytes to the link; bulk IN transfers take what is buffered, in pieces of at most
``chunk`` bytes (a transfer is not a frame), waiting up to their timeout. Everything happens
under one lock, so the control channel, the device thread and the host's transfer threads never
see the model half-way.

The reader is bus-powered: unplugging it powers it off (transfers on an open handle fail with
ENODEV, and it vanishes from enumeration); replugging boots it afresh (a new boot id, an empty
event queue, no antenna map) at a new bus address, as a real re-enumeration gives.
"""

from __future__ import annotations

import errno
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import usb.core

from drivers.tsp.device_link import DeviceTimers
from simulators.rfid import control
from simulators.rfid.commands import Command
from simulators.rfid.model import ReaderModel
from simulators.tsp_device import WireDevice

#: libusb's error codes, as pyusb's libusb1 backend raises them: (error_code, errno, text).
NO_DEVICE = (-4, errno.ENODEV, "No such device (it may have been disconnected)")
TIMEOUT = (-7, errno.ETIMEDOUT, "Operation timed out")


def usb_error(kind: tuple[int, int, str]) -> usb.core.USBError:
    """The exception a libusb1 backend raises for ``kind``."""
    code, number, text = kind
    if code == TIMEOUT[0]:
        return usb.core.USBTimeoutError(text, code, number)
    return usb.core.USBError(text, code, number)


class SimulatedUsbReader:
    """A reader on the simulated bus, running until :meth:`close`."""

    def __init__(
        self,
        model: ReaderModel,
        *,
        vid: int,
        pid: int,
        address: int,
        bus: int = 1,
        rng: random.Random | None = None,
        timers: DeviceTimers | None = None,
        chunk: int = 64,
        next_address: Callable[[], int] | None = None,
    ) -> None:
        self.model = model
        self.rng = rng or random.Random()
        self.device = WireDevice(model, self.rng, timers)
        model.queued_events = lambda: self.device.link.queued_events
        model.host_lost = self.device.link.host_lost
        self.vid, self.pid, self.bus, self.address = vid, pid, bus, address
        self.chunk = chunk
        self.lock = threading.Condition(threading.RLock())
        self.plugged = True
        #: Bumped at every replug: handles opened before it are dead.
        self.generation = 0
        self.configuration = 0
        self.claimed_by: object | None = None
        self.unplugs = 0
        self.transfers = {"in": 0, "out": 0, "timeouts": 0}
        self._in = bytearray()
        self._closed = False
        #: Called when the reader is closed (its control socket, its scenario player).
        self.on_close: list[Callable[[], None]] = []
        self._next_address = next_address
        self._thread = threading.Thread(target=self._run, name=f"usb-reader {self.serial}")
        self._thread.daemon = True
        self._thread.start()

    @property
    def serial(self) -> str:
        """The USB serial number (the reader's own serial)."""
        return self.model.config.serial

    # ------------------------------------------------------------------ runtime protocol

    def now(self) -> float:
        """The device clock."""
        return time.monotonic()

    def kick(self) -> None:
        """Run the device now (a command changed something)."""
        with self.lock:
            self._step()
            self.lock.notify_all()

    def unplug(self) -> None:
        """Pull the plug: the reader loses power and leaves the bus."""
        with self.lock:
            if not self.plugged:
                return
            self.plugged = False
            self.unplugs += 1
            self.claimed_by = None
            self.configuration = 0
            self._in.clear()
            self.device.reset_transport()
            self.lock.notify_all()

    def replug(self, address: int | None = None) -> str:
        """Plug it back: it boots afresh and enumerates (at ``address``, or the bus's next)."""
        with self.lock:
            if self.plugged:
                return self.where()
            control.reboot(self)
            if address is None and self._next_address is not None:
                address = self._next_address()
            self.address = address or self.address
            self.generation += 1
            self.plugged = True
            self.lock.notify_all()
            return self.where()

    def where(self) -> str:
        """Where the reader is on the bus."""
        return f"usb:{self.bus:03d}:{self.address:03d}"

    def describe(self) -> dict[str, Any]:
        """Where the device is (for the status command)."""
        return {
            "plugged": self.plugged,
            "path": self.where() if self.plugged else None,
            "bus": self.bus,
            "address": self.address,
            "serial_number": self.serial,
            "vid": self.vid,
            "pid": self.pid,
            "unplugs": self.unplugs,
            "transfers": dict(self.transfers),
        }

    def handle(self, data: Any) -> dict[str, Any]:
        """One decoded control command."""
        with self.lock:
            return control.handle(self, data)

    def apply(self, command: Command) -> dict[str, Any]:
        """One validated command (scenario steps)."""
        with self.lock:
            return control.apply(self, command)

    def close(self) -> None:
        """Stop the device thread (and whatever serves it)."""
        with self.lock:
            self._closed = True
            self.lock.notify_all()
        self._thread.join()
        for stop in self.on_close:
            stop()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    # ------------------------------------------------------------------ endpoints

    def check(self, generation: int) -> None:
        """Raise ENODEV unless a handle of this ``generation`` still reaches the device."""
        if not self.plugged or generation != self.generation:
            raise usb_error(NO_DEVICE)

    def bulk_out(self, generation: int, data: bytes) -> int:
        """A bulk OUT transfer: the host's bytes go to the link."""
        with self.lock:
            self.check(generation)
            self.transfers["out"] += 1
            self.device.receive(data, self.now())
            self._collect()
            return len(data)

    def bulk_in(self, generation: int, size: int, timeout_ms: int) -> bytes:
        """A bulk IN transfer: up to ``size`` bytes, waiting up to ``timeout_ms`` (0: forever)."""
        deadline = None if timeout_ms <= 0 else time.monotonic() + timeout_ms / 1000
        with self.lock:
            while True:
                self.check(generation)
                if self._in:
                    take = min(size, len(self._in), self.rng.randint(1, max(1, self.chunk)))
                    data = bytes(self._in[:take])
                    del self._in[:take]
                    self.transfers["in"] += 1
                    return data
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    self.transfers["timeouts"] += 1
                    raise usb_error(TIMEOUT)
                self.lock.wait(remaining)

    def reset(self) -> None:
        """A USB port reset: the transport starts afresh; the firmware keeps running."""
        with self.lock:
            self._in.clear()
            self.device.reset_transport()
            self.claimed_by = None

    # ------------------------------------------------------------------ device thread

    def _run(self) -> None:
        with self.lock:
            while not self._closed:
                deadline = None
                if self.plugged:
                    self._step()
                    deadline = self.device.next_deadline()
                timeout = None if deadline is None else max(0.0, deadline - self.now())
                self.lock.wait(timeout)

    def _step(self) -> None:
        if self.plugged:
            self.device.step(self.now())
            self._collect()

    def _collect(self) -> None:
        wire = self.device.take_wire()
        if wire:
            self._in += wire
            self.lock.notify_all()
