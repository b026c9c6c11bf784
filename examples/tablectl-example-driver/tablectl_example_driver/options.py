"""The options of the ``tag-bridge`` driver: the keys of its ``[devices.NAME]`` section.

``tablectl config check`` validates a device section with this model (the driver class names it
as ``options_model``), so a wrong key or value is reported with the others, before the daemon
starts.
"""

from __future__ import annotations

from controller.table.inputs import Zone
from pydantic import BaseModel, ConfigDict, Field, field_validator


class BridgeOptions(BaseModel):
    """Where the bridge listens, and which zone each of its antennas watches."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(min_length=1, description="host name or address of the bridge")
    port: int = Field(ge=1, le=65535, description="TCP port of the bridge")
    antennas: dict[str, str] = Field(
        min_length=1,
        description="the bridge's antenna name -> zone (seat:N, board, burn, muck, enroll)",
    )
    connect_timeout: float = Field(
        default=5.0, gt=0, description="seconds for the connection and the bridge's hello"
    )
    idle_timeout: float = Field(
        default=0.0,
        ge=0,
        description="seconds without a line (not even a ping) before the connection counts as "
        "dead; 0 trusts TCP alone",
    )

    @field_validator("antennas")
    @classmethod
    def _zones(cls, antennas: dict[str, str]) -> dict[str, str]:
        seen: dict[Zone, str] = {}
        for name, text in antennas.items():
            if not name or any(c.isspace() for c in name):
                raise ValueError(f"antenna name {name!r} must be one word")
            zone = Zone.parse(text)  # ValueError names the bad zone
            if zone in seen:
                raise ValueError(f"antennas {seen[zone]!r} and {name!r} both watch {zone}")
            seen[zone] = name
        return antennas

    def zones(self) -> dict[str, Zone]:
        """Antenna name → zone."""
        return {name: Zone.parse(text) for name, text in self.antennas.items()}
