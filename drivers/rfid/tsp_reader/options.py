"""The TSP/1 reader driver's options, as a table config gives them (validated with pydantic).

.. code-block:: toml

    [devices.rfid]
    driver = "tsp-reader"            # or "tsp-reader-usb" (vid, pid, serial_number instead of port)
    port = "/dev/serial/by-id/usb-tablectl_TSP-RFID-RDR-0001-if00"
    scan_period_ms = 50
    arrive_n = 2
    depart_n = 3
    snapshot_ms = 1000

    [[devices.rfid.antennas]]
    antenna = 0
    zone = "seat:1"

    [[devices.rfid.antennas]]
    antenna = 10
    zone = "board"
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.table.inputs import Zone
from drivers.tsp.options import TspOptions
from drivers.usb_options import UsbBackendOptions

#: pid.codes' open-source vendor ID and a test product ID: fine for prototypes, not for products.
DEFAULT_VID = 0x1209
DEFAULT_PID = 0x0001


class AntennaOption(BaseModel):
    """One antenna of the reader and the zone it lies under."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    antenna: int = Field(ge=0, le=255, description="antenna number on the reader")
    zone: str = Field(description="seat:N, board, burn, muck, enroll or shuffler_in")
    dwell_ms: int = Field(default=10, ge=1, le=255, description="how long the reader listens")

    @field_validator("zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return str(Zone.parse(value))

    @property
    def parsed_zone(self) -> Zone:
        """The zone as the core spells it."""
        return Zone.parse(self.zone)


class ReaderOptions(TspOptions):
    """What every TSP/1 reader driver takes, whatever the transport."""

    antennas: tuple[AntennaOption, ...] = Field(min_length=1)
    scan_period_ms: int = Field(default=50, ge=1, le=0xFFFF, description="ms between sweeps")
    arrive_n: int = Field(default=2, ge=1, le=255, description="reads before a tag arrives")
    depart_n: int = Field(default=3, ge=1, le=255, description="clean misses before it departs")
    snapshot_ms: int = Field(
        default=1000, ge=0, le=0xFFFF, description="ms between snapshots (0: only repairs)"
    )

    @model_validator(mode="after")
    def _distinct(self) -> Self:
        for attribute in ("antenna", "zone"):
            values = [getattr(a, attribute) for a in self.antennas]
            duplicates = sorted({str(v) for v in values if values.count(v) > 1})
            if duplicates:
                raise ValueError(f"two antennas share the {attribute} {', '.join(duplicates)}")
        return self

    def zone_map(self) -> dict[int, Zone]:
        """Antenna number → zone."""
        return {a.antenna: a.parsed_zone for a in self.antennas}


class TspReaderOptions(ReaderOptions):
    """The reader on a serial port (RS-232/485, or USB CDC-ACM: a tty)."""

    port: str = Field(min_length=1, description="serial device path (a stable udev link)")
    baudrate: int = Field(default=115200, gt=0)


class TspUsbReaderOptions(ReaderOptions, UsbBackendOptions):
    """The reader on USB vendor bulk endpoints, found by VID, PID and serial number (the USB
    backend's options: :class:`UsbBackendOptions`)."""

    vid: int = Field(default=DEFAULT_VID, ge=0, le=0xFFFF)
    pid: int = Field(default=DEFAULT_PID, ge=0, le=0xFFFF)
    serial_number: str | None = Field(
        default=None, min_length=1, description="USB serial number (required with two readers)"
    )
    interface: int = Field(default=0, ge=0, le=255)
    read_timeout_ms: int = Field(default=100, ge=1, description="bulk IN poll (idle) timeout")
    write_timeout_ms: int = Field(default=500, ge=1, description="a bulk OUT slower is a loss")
