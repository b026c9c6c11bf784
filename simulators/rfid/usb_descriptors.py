"""What the simulated USB reader looks like to pyusb: its descriptors, handles and errors.

One configuration, interface 0 of vendor class 0xFF with bulk OUT 0x01 and bulk IN 0x81 (64-byte
packets, full speed), strings 1 manufacturer, 2 product, 3 serial number. The descriptor objects
carry the field names pyusb reads off a backend's descriptors.
"""

from __future__ import annotations

import errno
import struct
from dataclasses import dataclass, field

from simulators.rfid.usb_device import SimulatedUsbDevice

EP_OUT = 0x01
EP_IN = 0x81
MAX_PACKET = 64
BUSY = (-6, errno.EBUSY, "Resource busy")
STALL = (-9, errno.EPIPE, "Pipe error")
INVALID = (-2, errno.EINVAL, "Invalid parameter")
NOT_FOUND = (-5, errno.ENOENT, "Entity not found")
LANGID_EN_US = 0x0409


@dataclass(frozen=True, slots=True)
class DeviceId:
    """What ``enumerate_devices`` yields: a device as it was when enumerated."""

    reader: SimulatedUsbDevice
    generation: int
    address: int


@dataclass(slots=True)
class Handle:
    """What ``open_device`` returns."""

    dev: DeviceId
    closed: bool = False
    claimed: set[int] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class DeviceDescriptor:
    """The standard device descriptor, plus the bus position pyusb reads from a backend."""

    idVendor: int  # noqa: N815 - USB descriptor field names
    idProduct: int  # noqa: N815
    bus: int
    address: int
    bLength: int = 18  # noqa: N815
    bDescriptorType: int = 1  # noqa: N815
    bcdUSB: int = 0x0200  # noqa: N815
    bDeviceClass: int = 0  # noqa: N815
    bDeviceSubClass: int = 0  # noqa: N815
    bDeviceProtocol: int = 0  # noqa: N815
    bMaxPacketSize0: int = 64  # noqa: N815
    bcdDevice: int = 0x0100  # noqa: N815
    iManufacturer: int = 1  # noqa: N815
    iProduct: int = 2  # noqa: N815
    iSerialNumber: int = 3  # noqa: N815
    bNumConfigurations: int = 1  # noqa: N815
    port_number: int = 1
    port_numbers: tuple[int, ...] = (1,)
    speed: int = 2  # full speed

    def to_bytes(self) -> bytes:
        """The 18 bytes a GET_DESCRIPTOR(DEVICE) returns."""
        return struct.pack(
            "<BBHBBBBHHHBBBB",
            self.bLength,
            self.bDescriptorType,
            self.bcdUSB,
            self.bDeviceClass,
            self.bDeviceSubClass,
            self.bDeviceProtocol,
            self.bMaxPacketSize0,
            self.idVendor,
            self.idProduct,
            self.bcdDevice,
            self.iManufacturer,
            self.iProduct,
            self.iSerialNumber,
            self.bNumConfigurations,
        )


@dataclass(frozen=True, slots=True)
class ConfigurationDescriptor:
    """The one configuration: one interface, bus-powered, 100 mA."""

    bLength: int = 9  # noqa: N815
    bDescriptorType: int = 2  # noqa: N815
    wTotalLength: int = 32  # noqa: N815
    bNumInterfaces: int = 1  # noqa: N815
    bConfigurationValue: int = 1  # noqa: N815
    iConfiguration: int = 0  # noqa: N815
    bmAttributes: int = 0x80  # noqa: N815
    bMaxPower: int = 50  # noqa: N815
    extra_descriptors: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class InterfaceDescriptor:
    """Interface 0: vendor class, two bulk endpoints."""

    bLength: int = 9  # noqa: N815
    bDescriptorType: int = 4  # noqa: N815
    bInterfaceNumber: int = 0  # noqa: N815
    bAlternateSetting: int = 0  # noqa: N815
    bNumEndpoints: int = 2  # noqa: N815
    bInterfaceClass: int = 0xFF  # noqa: N815
    bInterfaceSubClass: int = 0  # noqa: N815
    bInterfaceProtocol: int = 0  # noqa: N815
    iInterface: int = 0  # noqa: N815
    extra_descriptors: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class EndpointDescriptor:
    """A bulk endpoint."""

    bEndpointAddress: int  # noqa: N815
    bLength: int = 7  # noqa: N815
    bDescriptorType: int = 5  # noqa: N815
    bmAttributes: int = 0x02  # noqa: N815 - bulk
    wMaxPacketSize: int = MAX_PACKET  # noqa: N815
    bInterval: int = 0  # noqa: N815
    bRefresh: int = 0  # noqa: N815
    bSynchAddress: int = 0  # noqa: N815
    extra_descriptors: tuple[int, ...] = ()


ENDPOINTS = (EndpointDescriptor(EP_OUT), EndpointDescriptor(EP_IN))


def string_descriptor(text: str) -> bytes:
    """A USB string descriptor: length, type 3, UTF-16LE."""
    encoded = text.encode("utf-16-le")
    return bytes([2 + len(encoded), 3]) + encoded
