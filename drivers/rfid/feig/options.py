"""The ``feig-isc`` driver's options, as a table config gives them (validated with pydantic).

One ``feig-isc`` device is one serial line (or one USB reader) and the FEIG readers on it. On an
RS-485 line each reader has its own bus address (COM-ADR, 0…254, set in its CFG1); an antenna
entry names the reader it hangs off (``reader``) and its output on that reader's multiplexer
(``antenna``, ANT_NR 1…8)::

    [devices.rfid]
    driver = "feig-isc"
    port = "/dev/serial/by-id/usb-FTDI_USB-RS485_Cable-if00-port0"
    baudrate = 115200                # the readers' CFG1 BAUD
    parity = "even"                  # the readers' CFG1 TRANS-FORM (FEIG's default: e,8,1)

    [[devices.rfid.antennas]]
    reader = 1                       # COM-ADR
    antenna = 1                      # ANT_NR on that reader
    zone = "seat:1"

A single reader may be addressed with COM-ADR 255, which every reader answers (``address``, the
default of an antenna that names no reader); on a line with several readers each must be named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.table.inputs import Zone
from drivers.rfid.feig.frames import BROADCAST
from drivers.rfid.feig.protocol import MAX_ANTENNA
from drivers.rfid.presence import Debounce
from drivers.shuffler.options import default_approvals
from drivers.usb_options import UsbBackendOptions

FEIG_VID = 0x0AB1
"""FEIG ELECTRONIC's USB vendor ID (the product ID is the reader model's)."""

Parity = Literal["none", "even", "odd"]


class FeigAntenna(BaseModel):
    """One multiplexer output and the zone it lies under."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reader: int | None = Field(
        default=None, ge=0, le=BROADCAST, description="COM-ADR of its reader (default: address)"
    )
    antenna: int = Field(ge=1, le=MAX_ANTENNA, description="ANT_NR on its reader, 1…8")
    zone: str = Field(description="seat:N, board, burn, muck, enroll or shuffler_in")

    @field_validator("zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return str(Zone.parse(value))


class FeigOptions(UsbBackendOptions):
    """Every option of the ``feig-isc`` driver (the USB backend's: :class:`UsbBackendOptions`)."""

    port: str | None = Field(default=None, min_length=1, description="serial device path")
    baudrate: int = Field(default=115200, gt=0, description="the readers' CFG1 BAUD")
    parity: Parity = Field(default="even", description="the readers' CFG1 TRANS-FORM parity")
    vid: int | None = Field(default=None, ge=0, le=0xFFFF, description="USB vendor ID")
    pid: int | None = Field(default=None, ge=0, le=0xFFFF, description="USB product ID")
    serial_number: str | None = Field(default=None, min_length=1, description="USB serial")
    interface: int = Field(default=0, ge=0, le=255)
    address: int = Field(
        default=BROADCAST, ge=0, le=BROADCAST, description="COM-ADR of antennas naming no reader"
    )
    antennas: tuple[FeigAntenna, ...] = Field(min_length=1)
    approved_devices: Path = Field(default_factory=default_approvals)
    scan_period_ms: int = Field(default=0, ge=0, le=60000, description="ms between sweeps")
    response_timeout: float = Field(
        default=0.5, gt=0, description="seconds for an answer beyond the reader's own limit"
    )
    full_sweep_ms: int = Field(
        default=100,
        ge=0,
        le=60000,
        description="read every antenna every sweep, hint or not, while that takes less (ms)",
    )
    background_per_sweep: int = Field(
        default=1,
        ge=1,
        le=112,
        description="how many of the zones the hand cannot change a sweep reads, in turn",
    )
    arrive_n: int = Field(default=2, ge=1, le=255)
    depart_n: int = Field(default=3, ge=1, le=255)
    stale_after: int = Field(default=3, ge=1, le=255)
    reset_after: int = Field(
        default=6, ge=1, description="failed sweeps in a row before the RF is reset (0x69)"
    )
    crosstalk_margin: int = Field(
        default=6, ge=0, le=255, description="RSSI by which another antenna must hear it louder"
    )
    crosstalk_switch_after: int = Field(
        default=3, ge=1, le=255, description="sweeps it must do so before the tag moves there"
    )
    crosstalk_settle: int = Field(
        default=1, ge=0, le=255, description="sweeps a new card's first zone is weighed longer"
    )
    reconnect_min: float = Field(default=0.2, gt=0)
    reconnect_max: float = Field(default=5.0, gt=0)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        places = [f"reader {self.reader_of(a)} antenna {a.antenna}" for a in self.antennas]
        zones = [a.zone for a in self.antennas]
        for what, values in (("antenna", places), ("zone", zones)):
            duplicates = sorted({v for v in values if values.count(v) > 1})
            if duplicates:
                raise ValueError(f"two antennas share the {what} {', '.join(duplicates)}")
        readers = self.readers()
        if len(readers) > 1 and BROADCAST in readers:
            raise ValueError(
                "several readers share the line: every antenna must name its reader's COM-ADR "
                "(255 is answered by all of them at once)"
            )
        usb = self.vid is not None or self.pid is not None
        if (self.port is None) == (not usb):
            raise ValueError("give either port (serial) or vid and pid (USB), not both")
        if usb and (self.vid is None or self.pid is None):
            raise ValueError("a USB reader needs both vid and pid")
        if usb and len(readers) > 1:
            raise ValueError("a USB reader is one reader: its antennas cannot name several")
        if self.backend != "libusb1" and not usb:
            raise ValueError(f"backend = {self.backend!r} is for a USB reader (vid and pid)")
        if self.reconnect_max < self.reconnect_min:
            raise ValueError("reconnect_max must not be below reconnect_min")
        return self

    def reader_of(self, antenna: FeigAntenna) -> int:
        """The COM-ADR an antenna's reader is addressed with."""
        return self.address if antenna.reader is None else antenna.reader

    def readers(self) -> list[int]:
        """The COM-ADRs on the line, in the order of their first antenna."""
        return list(dict.fromkeys(self.reader_of(a) for a in self.antennas))

    @property
    def debounce(self) -> Debounce:
        """The presence tracker's settings."""
        return Debounce(self.arrive_n, self.depart_n, self.stale_after)

    def zone_map(self) -> dict[tuple[int, int], Zone]:
        """(COM-ADR, ANT_NR) → zone."""
        return {(self.reader_of(a), a.antenna): Zone.parse(a.zone) for a in self.antennas}
