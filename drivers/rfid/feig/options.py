"""The ``feig-isc`` driver's options, as a table config gives them (validated with pydantic).

.. code-block:: toml

    [devices.rfid]
    driver = "feig-isc"
    port = "/dev/serial/by-id/usb-FEIG_ELECTRONIC_ID_ISC-if00"
    # or, on USB bulk endpoints: vid = 0x0AB1, pid = …, serial_number = "…" instead of port
    scan_period_ms = 100
    arrive_n = 2
    depart_n = 3

    [[devices.rfid.antennas]]
    antenna = 1                      # ANT_NR on the multiplexer, 1…32
    zone = "seat:1"
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.table.inputs import Zone
from drivers.rfid.feig.protocol import MAX_ANTENNA
from drivers.rfid.presence import Debounce
from drivers.usb_options import UsbBackendOptions

FEIG_VID = 0x0AB1
"""FEIG ELECTRONIC's USB vendor ID (the product ID is the reader model's)."""


class FeigAntenna(BaseModel):
    """One multiplexed antenna and the zone it lies under."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    antenna: int = Field(ge=1, le=MAX_ANTENNA, description="ANT_NR on the reader, 1…32")
    zone: str = Field(description="seat:N, board, burn, muck, enroll or shuffler_in")

    @field_validator("zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return str(Zone.parse(value))


class FeigOptions(UsbBackendOptions):
    """Every option of the ``feig-isc`` driver (the USB backend's: :class:`UsbBackendOptions`)."""

    port: str | None = Field(default=None, min_length=1, description="serial device path")
    baudrate: int = Field(default=115200, gt=0)
    vid: int | None = Field(default=None, ge=0, le=0xFFFF, description="USB vendor ID")
    pid: int | None = Field(default=None, ge=0, le=0xFFFF, description="USB product ID")
    serial_number: str | None = Field(default=None, min_length=1, description="USB serial")
    interface: int = Field(default=0, ge=0, le=255)
    address: int = Field(default=0xFF, ge=0, le=0xFF, description="COM-ADR (255: broadcast)")
    antennas: tuple[FeigAntenna, ...] = Field(min_length=1)
    scan_period_ms: int = Field(default=100, ge=1, le=60000, description="ms between sweeps")
    response_timeout: float = Field(default=0.5, gt=0, description="seconds for one answer")
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
        for attribute in ("antenna", "zone"):
            values = [str(getattr(a, attribute)) for a in self.antennas]
            duplicates = sorted({v for v in values if values.count(v) > 1})
            if duplicates:
                raise ValueError(f"two antennas share the {attribute} {', '.join(duplicates)}")
        usb = self.vid is not None or self.pid is not None
        if (self.port is None) == (not usb):
            raise ValueError("give either port (serial) or vid and pid (USB), not both")
        if usb and (self.vid is None or self.pid is None):
            raise ValueError("a USB reader needs both vid and pid")
        if self.backend != "libusb1" and not usb:
            raise ValueError(f"backend = {self.backend!r} is for a USB reader (vid and pid)")
        if self.reconnect_max < self.reconnect_min:
            raise ValueError("reconnect_max must not be below reconnect_min")
        return self

    @property
    def debounce(self) -> Debounce:
        """The presence tracker's settings."""
        return Debounce(self.arrive_n, self.depart_n, self.stale_after)

    def zone_map(self) -> dict[int, Zone]:
        """Antenna number → zone."""
        return {a.antenna: Zone.parse(a.zone) for a in self.antennas}
