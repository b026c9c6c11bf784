"""A fake pyusb backend: simulated readers (TSP/1, FEIG ID ISC) on a simulated USB bus.

:class:`SimulatedUsbBus` implements ``usb.backend.IBackend`` (the methods pyusb 1.3 calls, with
libusb1's signatures and return values), so the driver's real ``usb.core.find``,
``Device.set_configuration``, ``usb.util.claim_interface``, ``Device.read`` / ``Device.write``
and string-descriptor code runs unmodified against it::

    bus = SimulatedUsbBus()
    reader = bus.add_reader("RDR-0001")
    dev = usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=bus)

The bus knows USB, not readers: any :class:`~simulators.rfid.usb_device.SimulatedUsbDevice`
plugs in (:meth:`SimulatedUsbBus.add`; :meth:`~SimulatedUsbBus.add_reader` makes a TSP/1 reader,
:func:`simulators.feig.usb_device.add_feig_reader` a FEIG ID ISC reader). Each device is vendor
class (0xFF), one configuration, interface 0 with bulk OUT 0x01 and bulk IN 0x81 (64-byte
packets), strings 1 manufacturer, 2 product, 3 serial number, and whatever vendor requests its
model answers (the TSP/1 reader's identity request, ``0xC0``, ``0x01``). Errors are libusb's:
ENODEV for an unplugged device, ETIMEDOUT for an idle read, EBUSY for an interface claimed
elsewhere, EPIPE (a stall) for a request it does not know.

:func:`backend_for` gives a process its simulated bus from driver options
(``backend = "simulated"`` on ``tsp-reader-usb`` or ``feig-isc``), with an optional control
socket and scenario file.
"""

from __future__ import annotations

import array
import random
import threading
import time
from collections import Counter
from typing import Any, TypeVar

import usb.backend
import usb.core

from drivers.rfid.feig.options import FeigOptions
from drivers.rfid.tsp_reader.options import DEFAULT_PID, DEFAULT_VID
from drivers.tsp.device_link import DeviceTimers
from simulators.feig import usb_device as feig
from simulators.rfid.model import ReaderConfig, ReaderModel
from simulators.rfid.usb_descriptors import (
    BUSY,
    ENDPOINTS,
    EP_IN,
    EP_OUT,
    INVALID,
    LANGID_EN_US,
    NOT_FOUND,
    STALL,
    ConfigurationDescriptor,
    DeviceDescriptor,
    DeviceId,
    EndpointDescriptor,
    Handle,
    InterfaceDescriptor,
    string_descriptor,
)
from simulators.rfid.usb_device import (
    NO_DEVICE,
    SimulatedUsbDevice,
    SimulatedUsbReader,
    usb_error,
)
from simulators.rfid.usb_runner import start_reader

_Device = TypeVar("_Device", bound=SimulatedUsbDevice)


class SimulatedUsbBus(usb.backend.IBackend):  # type: ignore[misc]  # pyusb is untyped
    """A USB bus of simulated devices, as a pyusb backend."""

    def __init__(self) -> None:
        super().__init__()
        #: Every device on the bus, plugged in or not, in the order they were added.
        self.readers: list[SimulatedUsbDevice] = []
        self._lock = threading.Lock()
        self._address = 0
        #: How often pyusb called each backend method (tests check the real paths ran).
        self.calls: Counter[str] = Counter()

    def next_address(self) -> int:
        """The next free bus address (1…127, as a hub hands them out)."""
        with self._lock:
            self._address = self._address % 127 + 1
            return self._address

    def add_reader(
        self,
        serial: str = "RDR-0001",
        *,
        vid: int = DEFAULT_VID,
        pid: int = DEFAULT_PID,
        config: ReaderConfig | None = None,
        seed: int | None = None,
        timers: DeviceTimers | None = None,
        chunk: int = 64,
    ) -> SimulatedUsbReader:
        """Plug a new simulated TSP/1 reader into the bus."""
        rng = random.Random(seed)
        config = config or ReaderConfig()
        config.serial = serial
        model = ReaderModel(config, rng, time.monotonic())
        reader = SimulatedUsbReader(
            model,
            vid=vid,
            pid=pid,
            address=self.next_address(),
            rng=rng,
            timers=timers,
            chunk=chunk,
            next_address=self.next_address,
        )
        return self.add(reader)

    def add(self, device: _Device) -> _Device:
        """Plug a device into the bus (made with :meth:`next_address` as its address)."""
        self.readers.append(device)
        return device

    def remove(self, reader: SimulatedUsbDevice) -> None:
        """Take a device off the bus for good (it is unplugged and stopped)."""
        reader.unplug()
        reader.close()
        self.readers.remove(reader)

    def close(self) -> None:
        """Stop every device."""
        for reader in list(self.readers):
            self.remove(reader)

    # ------------------------------------------------------------------ enumeration

    def enumerate_devices(self) -> list[DeviceId]:
        self.calls["enumerate_devices"] += 1
        return [DeviceId(r, r.generation, r.address) for r in self.readers if r.plugged]

    def get_parent(self, dev: DeviceId) -> None:
        return None

    def get_device_descriptor(self, dev: DeviceId) -> DeviceDescriptor:
        self.calls["get_device_descriptor"] += 1
        reader = dev.reader
        return DeviceDescriptor(reader.vid, reader.pid, reader.bus, dev.address)

    def get_configuration_descriptor(self, dev: DeviceId, config: int) -> ConfigurationDescriptor:
        if config != 0:
            raise IndexError(config)
        return ConfigurationDescriptor()

    def get_interface_descriptor(
        self, dev: DeviceId, intf: int, alt: int, config: int
    ) -> InterfaceDescriptor:
        if (intf, alt, config) != (0, 0, 0):
            raise IndexError((intf, alt, config))
        return InterfaceDescriptor()

    def get_endpoint_descriptor(
        self, dev: DeviceId, ep: int, intf: int, alt: int, config: int
    ) -> EndpointDescriptor:
        if (intf, alt, config) != (0, 0, 0) or not 0 <= ep < len(ENDPOINTS):
            raise IndexError((ep, intf, alt, config))
        return ENDPOINTS[ep]

    # ------------------------------------------------------------------ handles

    def _alive(self, handle: Handle) -> SimulatedUsbDevice:
        reader = handle.dev.reader
        if handle.closed:
            raise usb_error(INVALID)
        reader.check(handle.dev.generation)
        return reader

    def open_device(self, dev: DeviceId) -> Handle:
        self.calls["open_device"] += 1
        dev.reader.check(dev.generation)
        return Handle(dev)

    def close_device(self, dev_handle: Handle) -> None:
        self.calls["close_device"] += 1
        reader = dev_handle.dev.reader
        with reader.lock:
            if reader.claimed_by is dev_handle:
                reader.claimed_by = None
        dev_handle.closed = True

    def set_configuration(self, dev_handle: Handle, config_value: int) -> None:
        self.calls["set_configuration"] += 1
        reader = self._alive(dev_handle)
        if config_value not in (0, 1):
            raise usb_error(INVALID)
        reader.configuration = config_value

    def get_configuration(self, dev_handle: Handle) -> int:
        return self._alive(dev_handle).configuration

    def set_interface_altsetting(self, dev_handle: Handle, intf: int, altsetting: int) -> None:
        self._alive(dev_handle)
        if (intf, altsetting) != (0, 0):
            raise usb_error(INVALID)

    def claim_interface(self, dev_handle: Handle, intf: int) -> None:
        self.calls["claim_interface"] += 1
        reader = self._alive(dev_handle)
        if intf != 0:
            raise usb_error(NOT_FOUND)
        with reader.lock:
            if reader.claimed_by is not None and reader.claimed_by is not dev_handle:
                raise usb_error(BUSY)
            reader.claimed_by = dev_handle
        dev_handle.claimed.add(intf)

    def release_interface(self, dev_handle: Handle, intf: int) -> None:
        self.calls["release_interface"] += 1
        reader = dev_handle.dev.reader
        with reader.lock:
            if reader.claimed_by is dev_handle:
                reader.claimed_by = None
        dev_handle.claimed.discard(intf)

    def is_kernel_driver_active(self, dev_handle: Handle, intf: int) -> bool:
        self._alive(dev_handle)
        return False  # no kernel driver binds to a vendor-class interface

    def detach_kernel_driver(self, dev_handle: Handle, intf: int) -> None:
        raise usb_error(NOT_FOUND)

    def attach_kernel_driver(self, dev_handle: Handle, intf: int) -> None:
        raise usb_error(NOT_FOUND)

    # ------------------------------------------------------------------ transfers

    def _claimed(self, dev_handle: Handle, ep: int, wanted: int) -> SimulatedUsbDevice:
        reader = self._alive(dev_handle)
        if ep != wanted:
            raise usb_error(INVALID)
        if reader.claimed_by is not dev_handle:
            raise usb_error(NOT_FOUND)  # libusb refuses transfers on an unclaimed interface
        return reader

    def bulk_write(
        self, dev_handle: Handle, ep: int, intf: int, data: array.array[int], timeout: int
    ) -> int:
        self.calls["bulk_write"] += 1
        reader = self._claimed(dev_handle, ep, EP_OUT)
        return reader.bulk_out(dev_handle.dev.generation, data.tobytes())

    def bulk_read(
        self, dev_handle: Handle, ep: int, intf: int, buff: array.array[int], timeout: int
    ) -> int:
        self.calls["bulk_read"] += 1
        reader = self._claimed(dev_handle, ep, EP_IN)
        data = reader.bulk_in(dev_handle.dev.generation, len(buff), timeout)
        buff[: len(data)] = array.array("B", data)
        return len(data)

    def ctrl_transfer(
        self,
        dev_handle: Handle,
        bmRequestType: int,  # noqa: N803 - pyusb's parameter names
        bRequest: int,  # noqa: N803
        wValue: int,  # noqa: N803
        wIndex: int,  # noqa: N803
        data: array.array[int],
        timeout: int,
    ) -> int:
        self.calls["ctrl_transfer"] += 1
        reader = self._alive(dev_handle)
        answer = self._control_answer(reader, dev_handle.dev, bmRequestType, bRequest, wValue)
        size = min(len(data), len(answer))
        data[:size] = array.array("B", answer[:size])
        return size

    def _control_answer(
        self, reader: SimulatedUsbDevice, dev: DeviceId, request_type: int, request: int, value: int
    ) -> bytes:
        if request_type & 0x60 == 0x40:  # a vendor request: the device model's own
            answer = reader.vendor_request(request_type, request)
            if answer is None:
                raise usb_error(STALL)
            return answer
        if (request_type, request) != (0x80, 0x06):  # anything but GET_DESCRIPTOR
            raise usb_error(STALL)
        kind, index = value >> 8, value & 0xFF
        if kind == 1:
            return self.get_device_descriptor(dev).to_bytes()
        if kind != 3:
            raise usb_error(STALL)
        strings = reader.strings()
        if index == 0:
            return bytes([4, 3]) + LANGID_EN_US.to_bytes(2, "little")
        if index not in strings:
            raise usb_error(STALL)
        return string_descriptor(strings[index])

    def clear_halt(self, dev_handle: Handle, ep: int) -> None:
        self.calls["clear_halt"] += 1
        self._alive(dev_handle)

    def reset_device(self, dev_handle: Handle) -> None:
        self.calls["reset_device"] += 1
        self._alive(dev_handle).reset()


# --------------------------------------------------------------------------- one per process

_PROCESS_BUS: SimulatedUsbBus | None = None
_PROCESS_LOCK = threading.Lock()


def process_bus() -> SimulatedUsbBus:
    """This process's simulated bus (made on first use)."""
    global _PROCESS_BUS  # noqa: PLW0603 - one simulated bus per process, like the real one
    with _PROCESS_LOCK:
        if _PROCESS_BUS is None:
            _PROCESS_BUS = SimulatedUsbBus()
        return _PROCESS_BUS


def backend_for(options: Any) -> SimulatedUsbBus:
    """The simulated bus for a USB reader driver (``tsp-reader-usb``, ``feig-isc``) with
    ``backend = "simulated"``.

    Plugs in a reader of the driver's kind with the options' VID, PID and serial number unless
    one is there, serves its control socket (``simulator_control``) and plays its scenario
    (``simulator_scenario``).
    """
    bus = process_bus()
    is_feig = isinstance(options, FeigOptions)
    serial = options.serial_number or (feig.DEFAULT_SERIAL if is_feig else "RDR-0001")
    for reader in bus.readers:
        if (reader.vid, reader.pid, reader.serial) == (options.vid, options.pid, serial):
            return bus
    if is_feig:
        feig.start_reader(bus, options)
    else:
        start_reader(bus, options)
    return bus


__all__ = ["NO_DEVICE", "SimulatedUsbBus", "backend_for", "process_bus"]
