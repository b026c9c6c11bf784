"""``tsp-reader-usb``: the TSP/1 reader on USB vendor bulk endpoints, through pyusb.

The driver is :class:`~drivers.rfid.tsp_reader.driver.TspReader`; only the transport differs. The
reader is found by VID, PID and serial number (``usb.core.find``), its interface claimed, and the
same TSP/1 byte stream carried by bulk transfers on threads (:mod:`drivers.usb_transport`). An
unplugged reader ends the connection; the supervision loop looks for it again with backoff.

``backend = "simulated"`` runs on the fake pyusb backend of the simulators instead of libusb, so a
daemon can be pointed at a simulated USB reader; the real pyusb calls run either way. A backend
other than libusb is found by name in the entry-point group ``tablectl.usb_backends``, where
tablectl's own package declares ``simulated``: a driver never imports a simulator
(docs/architecture.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

from drivers.contract import DeviceContext
from drivers.rfid.tsp_reader.driver import TspReader
from drivers.rfid.tsp_reader.options import ReaderOptions, TspUsbReaderOptions
from drivers.transport import ByteTransport, DataCallback, LostCallback
from drivers.usb_transport import (
    USB_BACKEND_GROUP,
    UsbBulkTransport,
    UsbMatch,
    backend_named,
    provided_backend,
)


class TspUsbReader(TspReader):
    """The same reader on USB vendor bulk endpoints (pyusb), found by VID/PID/serial number.

    ``usb_backend`` overrides the backend the options name (tests pass a simulated bus).
    """

    options_model: ClassVar[type[ReaderOptions]] = TspUsbReaderOptions

    def __init__(
        self,
        device_id: str,
        options: ReaderOptions,
        context: DeviceContext | None = None,
        *,
        usb_backend: Any = None,
    ) -> None:
        super().__init__(device_id, options, context)
        self.usb_backend = usb_backend
        #: The identity blob the reader gave on its vendor request when last claimed.
        self.usb_identity: bytes | None = None

    def _backend(self) -> Any:
        assert isinstance(self.options, TspUsbReaderOptions)
        if self.usb_backend is None:
            self.usb_backend = backend_named(self.options.backend, self.options)
        return self.usb_backend

    async def _open(self, on_data: DataCallback, on_lost: LostCallback) -> ByteTransport:
        options = self.options
        assert isinstance(options, TspUsbReaderOptions)
        match = UsbMatch(options.vid, options.pid, options.serial_number, options.interface)
        transport = await UsbBulkTransport.open(
            match,
            on_data,
            on_lost,
            backend=self._backend(),
            read_timeout_ms=options.read_timeout_ms,
            write_timeout_ms=options.write_timeout_ms,
        )
        self.usb_identity = transport.identity
        return transport


__all__ = ["USB_BACKEND_GROUP", "TspUsbReader", "provided_backend"]
