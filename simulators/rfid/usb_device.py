"""Devices on the simulated USB bus: what every one of them does, and the TSP/1 reader.

A real USB device runs by itself; so do these. :class:`SimulatedUsbDevice` is the USB side every
device model shares: plugged or not, its bus address, the claim on its interface, and the IN
endpoint's buffer, given out by bulk IN transfers in pieces of at most ``chunk`` bytes (a
transfer is not a frame), waiting up to their timeout. Bytes may be queued for a later moment
(the time a reader's radio works before it answers). Everything happens under one lock, so the
control channel, a device thread and the host's transfer threads never see a device half-way.

Devices are bus-powered: unplugging one powers it off (transfers on an open handle fail with
ENODEV, and it vanishes from enumeration); replugging boots it afresh at a new bus address, as a
real re-enumeration gives. What "afresh" means is the device model's (:meth:`power_on`).

:class:`SimulatedUsbReader` is the TSP/1 reader: the reader model on its own thread (it runs the
model's sweeps and the link's timers) behind the two bulk endpoints. The FEIG ID ISC reader is
:class:`simulators.feig.usb_device.SimulatedFeigUsbReader`.
"""

from __future__ import annotations

import errno
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import usb.core

from drivers.tsp.device_link import DeviceTimers
from simulators.command_vocabulary import CommandedDevice
from simulators.rfid import control
from simulators.rfid.commands import COMMANDS, Command
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


class SimulatedUsbDevice(CommandedDevice):
    """A vendor-class device with one bulk OUT and one bulk IN endpoint, on the simulated bus.

    A device model says what it is (:attr:`serial`, :meth:`strings`, :meth:`vendor_request`),
    what it does with the host's bytes (:meth:`bulk_out`, answering through :meth:`send`), what
    a power cycle does to it (:meth:`power_on`), and how it is driven from outside
    (``COMMANDS`` and :meth:`apply`, under the device's lock; :meth:`describe`).
    """

    def __init__(
        self,
        *,
        vid: int,
        pid: int,
        address: int,
        bus: int = 1,
        rng: random.Random | None = None,
        chunk: int = 64,
        next_address: Callable[[], int] | None = None,
    ) -> None:
        self.rng = rng or random.Random()
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
        #: Bytes the device sends later: (device time, bytes), in order.
        self._later: deque[tuple[float, bytes]] = deque()
        self._closed = False
        #: Called when the device is closed (its control socket, its scenario player).
        self.on_close: list[Callable[[], None]] = []
        self._next_address = next_address

    # ------------------------------------------------------------------ what the model says

    @property
    def serial(self) -> str:
        """The USB serial number."""
        raise NotImplementedError

    def strings(self) -> dict[int, str]:
        """String descriptors by index: 1 manufacturer, 2 product, 3 serial number."""
        raise NotImplementedError

    def vendor_request(self, request_type: int, request: int) -> bytes | None:
        """The answer to a vendor control request, or None (the request stalls)."""
        return None

    def bulk_out(self, generation: int, data: bytes) -> int:
        """A bulk OUT transfer: the host's bytes go to the device model."""
        raise NotImplementedError

    def power_on(self) -> None:
        """Power comes back (a replug): the model boots afresh."""

    def power_off(self) -> None:
        """Power goes (an unplug): whatever the model holds for the transport is gone."""

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

    # ------------------------------------------------------------------ the plug

    def now(self) -> float:
        """The device clock."""
        return time.monotonic()

    def unplug(self) -> None:
        """Pull the plug: the device loses power and leaves the bus."""
        with self.lock:
            if not self.plugged:
                return
            self.plugged = False
            self.unplugs += 1
            self.claimed_by = None
            self.configuration = 0
            self._in.clear()
            self._later.clear()
            self.power_off()
            self.lock.notify_all()

    def replug(self, address: int | None = None) -> str:
        """Plug it back: it boots afresh and enumerates (at ``address``, or the bus's next)."""
        with self.lock:
            if self.plugged:
                return self.where()
            self.power_on()
            if address is None and self._next_address is not None:
                address = self._next_address()
            self.address = address or self.address
            self.generation += 1
            self.plugged = True
            self.lock.notify_all()
            return self.where()

    def where(self) -> str:
        """Where the device is on the bus."""
        return f"usb:{self.bus:03d}:{self.address:03d}"

    def close(self) -> None:
        """Stop the device (and whatever serves it)."""
        with self.lock:
            self._closed = True
            self.lock.notify_all()
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

    def send(self, data: bytes, at: float | None = None) -> None:
        """Put ``data`` in the IN endpoint's buffer, now or at device time ``at``."""
        with self.lock:
            if at is None and not self._later:
                self._in += data
            else:
                self._later.append((self.now() if at is None else at, data))
            self.lock.notify_all()

    def bulk_in(self, generation: int, size: int, timeout_ms: int) -> bytes:
        """A bulk IN transfer: up to ``size`` bytes, waiting up to ``timeout_ms`` (0: forever)."""
        deadline = None if timeout_ms <= 0 else time.monotonic() + timeout_ms / 1000
        with self.lock:
            while True:
                self.check(generation)
                now = self.now()
                while self._later and self._later[0][0] <= now:
                    self._in += self._later.popleft()[1]
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
                if self._later:
                    due = max(0.0, self._later[0][0] - now)
                    remaining = due if remaining is None else min(remaining, due)
                self.lock.wait(remaining)

    def reset(self) -> None:
        """A USB port reset: the transport starts afresh; the firmware keeps running."""
        with self.lock:
            self._in.clear()
            self._later.clear()
            self.claimed_by = None


class SimulatedUsbReader(SimulatedUsbDevice):
    """A TSP/1 reader on the simulated bus, running until :meth:`close`."""

    COMMANDS = COMMANDS

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
        super().__init__(
            vid=vid,
            pid=pid,
            address=address,
            bus=bus,
            rng=rng,
            chunk=chunk,
            next_address=next_address,
        )
        self.model = model
        self.device = WireDevice(model, self.rng, timers)
        self._thread = threading.Thread(target=self._run, name=f"usb-reader {self.serial}")
        self._thread.daemon = True
        self._thread.start()

    @property
    def serial(self) -> str:
        """The USB serial number (the reader's own serial)."""
        return self.model.config.serial

    def strings(self) -> dict[int, str]:
        """Manufacturer, product and serial number, as the reader model names them."""
        config = self.model.config
        return {1: config.vendor, 2: config.model, 3: config.serial}

    def vendor_request(self, request_type: int, request: int) -> bytes | None:
        """The identity request (``0xC0``, ``0x01``): the IDENTIFY response layout."""
        if (request_type, request) != (0xC0, 0x01):
            return None
        with self.lock:
            return self.model.identity().encode()

    # ------------------------------------------------------------------ runtime protocol

    def kick(self) -> None:
        """Run the device now (a command changed something)."""
        with self.lock:
            self._step()
            self.lock.notify_all()

    def power_off(self) -> None:
        """The link's half-received frames are gone with the power."""
        self.device.reset_transport()

    def power_on(self) -> None:
        """A new boot id, an empty event queue, no antenna map."""
        control.reboot(self)

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
        super().close()

    # ------------------------------------------------------------------ endpoints

    def bulk_out(self, generation: int, data: bytes) -> int:
        """A bulk OUT transfer: the host's bytes go to the link."""
        with self.lock:
            self.check(generation)
            self.transfers["out"] += 1
            self.device.receive(data, self.now())
            self._collect()
            return len(data)

    def reset(self) -> None:
        """A USB port reset: the transport starts afresh; the firmware keeps running."""
        with self.lock:
            super().reset()
            self.device.reset_transport()

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
            self.send(wire)
