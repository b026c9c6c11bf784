"""The PN532 reader's options, as a table config gives them (validated with pydantic).

.. code-block:: toml

    [devices.rfid]
    driver = "pn532"
    poll_interval = 0.1          # seconds between polls of one module
    arrive_n = 2                 # consecutive sightings before a tag arrives
    depart_n = 3                 # consecutive clean misses before it departs
    stale_after = 3              # consecutive failed polls before the zone is stale

    [[devices.rfid.modules]]
    port = "/dev/serial/by-id/usb-pn532-seat1"
    zone = "seat:1"

    [[devices.rfid.modules]]
    port = "/dev/serial/by-id/usb-pn532-board"
    zone = "board"
    device = "board-reader"      # optional: this module's device id
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.table.inputs import Zone
from drivers.rfid.presence import Debounce


class Pn532ModuleConfig(BaseModel):
    """One PN532 module: the serial port it hangs on and the zone its antenna covers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    port: str = Field(min_length=1, description="serial device path (a stable udev link)")
    zone: str = Field(description="seat:N, board, burn, muck, enroll or shuffler_in")
    device: str | None = Field(
        default=None, min_length=1, description="device id of this module (default: READER-ZONE)"
    )
    max_tags: int | None = Field(
        default=None, ge=1, le=64, description="most tags one poll looks for (default: reader's)"
    )

    @field_validator("zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return str(Zone.parse(value))

    def device_id(self, reader: str) -> str:
        """This module's device id: its own, or the reader's id and the zone (``rfid-seat3``)."""
        return self.device or f"{reader}-{self.zone.replace(':', '')}"


class Pn532Config(BaseModel):
    """Every option of the ``pn532`` driver."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    modules: tuple[Pn532ModuleConfig, ...] = Field(min_length=1)
    baudrate: int = Field(default=115200, gt=0)
    poll_interval: float = Field(default=0.1, gt=0, description="seconds between polls of a module")
    ack_timeout: float = Field(default=0.2, gt=0, description="seconds to wait for an ACK frame")
    response_timeout: float = Field(default=1.0, gt=0, description="seconds to wait for an answer")
    arrive_n: int = Field(default=2, ge=1)
    depart_n: int = Field(default=3, ge=1)
    stale_after: int = Field(default=3, ge=1)
    reinit_after: int = Field(
        default=6, ge=1, description="failed polls in a row before the module is woken up again"
    )
    max_tags: int = Field(
        default=8,
        ge=1,
        le=64,
        description="most tags one poll looks for; 2 saves a second round when two are found",
    )
    passive_retries: int = Field(
        default=2, ge=0, le=0xFE, description="activation retries per InListPassiveTarget"
    )
    reconnect_min: float = Field(default=0.2, gt=0)
    reconnect_max: float = Field(default=5.0, gt=0)

    @model_validator(mode="after")
    def _distinct_modules(self) -> Self:
        for attribute in ("zone", "port", "device"):
            values = [getattr(m, attribute) for m in self.modules if getattr(m, attribute)]
            duplicates = sorted({v for v in values if values.count(v) > 1})
            if duplicates:
                raise ValueError(f"two modules share the {attribute} {', '.join(duplicates)}")
        if self.reconnect_max < self.reconnect_min:
            raise ValueError("reconnect_max must not be below reconnect_min")
        return self

    @property
    def debounce(self) -> Debounce:
        """The presence tracker's settings."""
        return Debounce(self.arrive_n, self.depart_n, self.stale_after)
