"""A byte stream over USB vendor bulk endpoints with pyusb, off the event loop.

Finding and claiming the device (``usb.core.find`` by VID/PID and serial number,
``set_configuration``, ``claim_interface``) happens in a worker thread. After that a reader
thread loops on bulk IN transfers and hands every non-empty read to the event loop with
``call_soon_threadsafe`` (a transfer is not a frame: the TSP/1 deframer reassembles), and a writer
thread drains a queue of bulk OUT writes in order. Nothing ever blocks the loop.

Read timeouts are idleness, not errors. A stalled IN endpoint (EPIPE) is cleared and read again.
Anything else (ENODEV and EIO when the device is unplugged, a write that times out because the
device no longer takes data) ends the transport: it releases the interface, disposes of pyusb's
resources and reports the loss once; the driver's supervisor then rediscovers the device with
backoff, and finds it again after a replug even at a new bus address.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import importlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import usb.core
import usb.util

from drivers.errors import DeviceUnavailableError
from drivers.transport import DataCallback, LostCallback

#: The vendor control request that returns a device's identity without claiming it
#: (``bmRequestType`` 0xC0, ``bRequest`` 0x01; docs/protocols/tsp1.md §5.5).
IDENTITY_REQUEST = (0xC0, 0x01)

#: Where a USB backend other than libusb is found, by the name the options give. tablectl's own
#: package declares ``simulated`` (the simulators' fake bus): a driver never imports a simulator
#: (docs/architecture.md).
USB_BACKEND_GROUP = "tablectl.usb_backends"


def provided_backend(name: str) -> Callable[[Any], Any]:
    """The factory of the USB backend an installed package provides as ``name``."""
    for entry in entry_points(group=USB_BACKEND_GROUP, name=name):
        factory: Callable[[Any], Any] = entry.load()
        return factory
    raise DeviceUnavailableError(
        f"no USB backend {name!r} is installed (entry-point group {USB_BACKEND_GROUP}): "
        "install tablectl into this environment again"
    )


def backend_named(name: str, options: Any) -> Any:
    """The pyusb backend a driver's options name: ``libusb1``, or one a package provides (made
    from the driver's ``options``). Raises :class:`DeviceUnavailableError`."""
    if name != "libusb1":
        return provided_backend(name)(options)
    libusb1 = importlib.import_module("usb.backend.libusb1")
    backend = libusb1.get_backend()
    if backend is None:
        raise DeviceUnavailableError("libusb 1.0 is not available (Debian: libusb-1.0-0)")
    return backend


@dataclass(frozen=True, slots=True)
class UsbMatch:
    """Which USB device to use: VID, PID and (to tell identical readers apart) serial number."""

    vid: int
    pid: int
    serial_number: str | None = None
    interface: int = 0

    def __str__(self) -> str:
        serial = f" serial {self.serial_number}" if self.serial_number else ""
        return f"USB {self.vid:04x}:{self.pid:04x}{serial}"


def _serial_of(dev: Any) -> str | None:
    try:
        value = usb.util.get_string(dev, dev.iSerialNumber)
    except (usb.core.USBError, ValueError, NotImplementedError):
        return None
    return None if value is None else str(value)


def find_device(match: UsbMatch, backend: Any = None) -> Any:
    """The device ``match`` names (blocking: call it from a worker thread), or None."""

    def wanted(dev: Any) -> bool:
        return match.serial_number is None or _serial_of(dev) == match.serial_number

    return usb.core.find(
        idVendor=match.vid, idProduct=match.pid, backend=backend, custom_match=wanted
    )


def read_identity(dev: Any, timeout_ms: int = 200) -> bytes | None:
    """The device's identity blob (the IDENTIFY response layout), or None if it has none."""
    request_type, request = IDENTITY_REQUEST
    try:
        data = dev.ctrl_transfer(request_type, request, 0, 0, 255, timeout=timeout_ms)
    except (usb.core.USBError, NotImplementedError):
        return None
    return bytes(data)


def _bulk_endpoint(interface: Any, direction: int) -> Any:
    def match(endpoint: Any) -> bool:
        return bool(
            usb.util.endpoint_direction(endpoint.bEndpointAddress) == direction
            and usb.util.endpoint_type(endpoint.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK
        )

    return usb.util.find_descriptor(interface, custom_match=match)


def claim(match: UsbMatch, backend: Any = None) -> tuple[Any, int, int, bytes | None]:
    """Find, configure and claim the device; return it, its IN and OUT endpoint addresses and
    its identity blob. Blocking; raises :class:`DeviceUnavailableError`."""
    try:
        dev = find_device(match, backend)
    except usb.core.USBError as exc:
        raise DeviceUnavailableError(f"cannot enumerate USB devices: {exc}") from exc
    if dev is None:
        raise DeviceUnavailableError(f"no {match} is plugged in")
    try:
        identity = read_identity(dev)
        with contextlib.suppress(NotImplementedError, usb.core.USBError):
            if dev.is_kernel_driver_active(match.interface):
                dev.detach_kernel_driver(match.interface)
        dev.set_configuration()
        usb.util.claim_interface(dev, match.interface)
        interface = dev.get_active_configuration()[(match.interface, 0)]
        ep_in = _bulk_endpoint(interface, usb.util.ENDPOINT_IN)
        ep_out = _bulk_endpoint(interface, usb.util.ENDPOINT_OUT)
        if ep_in is None or ep_out is None:
            raise DeviceUnavailableError(f"{match}: interface {match.interface} has no bulk pair")
    except (usb.core.USBError, ValueError) as exc:
        with contextlib.suppress(usb.core.USBError):
            usb.util.dispose_resources(dev)
        raise DeviceUnavailableError(f"cannot claim {match}: {exc}") from exc
    return dev, int(ep_in.bEndpointAddress), int(ep_out.bEndpointAddress), identity


class UsbBulkTransport:
    """One claimed USB device feeding a data callback on the event loop."""

    def __init__(
        self,
        dev: Any,
        ep_in: int,
        ep_out: int,
        on_data: DataCallback,
        on_lost: LostCallback,
        *,
        interface: int = 0,
        identity: bytes | None = None,
        read_size: int = 512,
        read_timeout_ms: int = 100,
        write_timeout_ms: int = 500,
    ) -> None:
        self._dev = dev
        self._ep_in = ep_in
        self._ep_out = ep_out
        self._interface = interface
        self.identity = identity
        self._on_data = on_data
        self._on_lost = on_lost
        self._read_size = read_size
        self._read_timeout = read_timeout_ms
        self._write_timeout = write_timeout_ms
        self._loop = asyncio.get_running_loop()
        self._writes: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._closed = False
        self.bytes_read = 0
        self.bytes_written = 0
        self.reads = 0
        self._writer = threading.Thread(target=self._write_loop, name="usb-bulk-out", daemon=True)
        self._reader = threading.Thread(target=self._read_loop, name="usb-bulk-in", daemon=True)
        self._writer.start()
        self._reader.start()

    @classmethod
    async def open(
        cls,
        match: UsbMatch,
        on_data: DataCallback,
        on_lost: LostCallback,
        *,
        backend: Any = None,
        read_timeout_ms: int = 100,
        write_timeout_ms: int = 500,
    ) -> UsbBulkTransport:
        """Find and claim the device ``match`` names, then start its transfer threads."""
        dev, ep_in, ep_out, identity = await asyncio.to_thread(claim, match, backend)
        return cls(
            dev,
            ep_in,
            ep_out,
            on_data,
            on_lost,
            interface=match.interface,
            identity=identity,
            read_timeout_ms=read_timeout_ms,
            write_timeout_ms=write_timeout_ms,
        )

    @property
    def is_closing(self) -> bool:
        """True once closed or lost."""
        return self._closed

    def write(self, data: bytes) -> None:
        """Queue ``data`` for the bulk OUT endpoint; the writer thread sends it in order."""
        if not self._closed and data:
            self._writes.put(bytes(data))

    def close(self) -> None:
        """Stop both threads; the interface is released when the reader thread ends."""
        self._closed = True
        self._stop.set()
        self._writes.put(None)

    async def wait_closed(self) -> None:
        """Wait until the threads have ended and the device is released."""
        self.close()
        await asyncio.to_thread(self._reader.join)

    # ------------------------------------------------------------------ threads

    def _read_loop(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    data = self._dev.read(self._ep_in, self._read_size, timeout=self._read_timeout)
                except usb.core.USBTimeoutError:
                    continue  # nothing to read: the device is idle
                except usb.core.USBError as exc:
                    if exc.errno == errno.EPIPE and not self._stop.is_set():
                        with contextlib.suppress(usb.core.USBError):
                            self._dev.clear_halt(self._ep_in)
                        continue
                    self._fail(exc)
                    return
                if data:
                    self.reads += 1
                    self.bytes_read += len(data)
                    self._call(self._deliver, bytes(data))
        finally:
            self._stop.set()
            self._writes.put(None)
            self._writer.join()
            self._release()

    def _write_loop(self) -> None:
        while True:
            data = self._writes.get()
            if data is None or self._stop.is_set():
                return
            try:
                written = self._dev.write(self._ep_out, data, timeout=self._write_timeout)
            except usb.core.USBError as exc:
                # A write that times out means the device no longer takes data: as good as gone.
                self._fail(exc)
                return
            self.bytes_written += int(written)

    def _release(self) -> None:
        with contextlib.suppress(usb.core.USBError, ValueError):
            usb.util.release_interface(self._dev, self._interface)
        with contextlib.suppress(usb.core.USBError, ValueError):
            usb.util.dispose_resources(self._dev)

    def _fail(self, exc: Exception) -> None:
        self._stop.set()
        self._call(self._lost, exc)

    def _call(self, callback: Any, argument: Any) -> None:
        # The loop may be gone already (the process is shutting down): nobody to tell.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(callback, argument)

    def _deliver(self, data: bytes) -> None:
        if not self._closed:
            self._on_data(data)

    def _lost(self, exc: Exception) -> None:
        if self._closed:
            return
        self.close()
        self._on_lost(exc)
