"""The options every TSP/1 driver takes, whatever its device: the link and reconnection ones."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TspOptions(BaseModel):
    """Heartbeat, request timer and reconnection backoff (``docs/protocols/tsp1.md`` §2).

    A TSP/1 driver's options model subclasses it and adds its transport and device settings
    (unknown keys are still an error).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    heartbeat_interval: float = Field(default=1.0, gt=0)
    heartbeat_failures: int = Field(default=3, ge=1)
    response_timeout: float = Field(default=0.3, gt=0)
    max_retransmits: int = Field(default=3, ge=0)
    backoff_base: float = Field(default=0.25, gt=0)
    backoff_cap: float = Field(default=5.0, gt=0)
    fail_after: int = Field(default=10, ge=1)
