"""The options every USB driver takes for its pyusb backend (``docs/drivers.md``, USB).

``backend = "libusb1"`` finds real devices; ``backend = "simulated"`` the simulators' fake bus
(provided by name, :func:`drivers.usb_transport.backend_named`), where the driver's own process
runs the simulated device: ``simulator_control``, ``simulator_scenario`` and ``simulator_seed``
drive it, and mean nothing to another backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

SIMULATOR_OPTIONS = ("simulator_control", "simulator_scenario", "simulator_seed")


class UsbBackendOptions(BaseModel):
    """A USB driver's options model subclasses it (unknown keys are still an error)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["libusb1", "simulated"] = Field(
        default="libusb1", description="libusb1: real devices; simulated: the fake pyusb bus"
    )
    simulator_control: Path | None = Field(
        default=None, description="simulated backend: Unix socket for control commands"
    )
    simulator_scenario: Path | None = Field(
        default=None, description="simulated backend: scenario file (tags and timed commands)"
    )
    simulator_seed: int | None = Field(default=None, description="simulated backend: RNG seed")

    @model_validator(mode="after")
    def _simulator_options(self) -> Self:
        given = [name for name in SIMULATOR_OPTIONS if getattr(self, name) is not None]
        if given and self.backend != "simulated":
            raise ValueError(f"{', '.join(given)} only apply to backend = 'simulated'")
        return self
