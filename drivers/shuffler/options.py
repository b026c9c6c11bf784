"""The shuffler driver's options, as a table config gives them (validated with pydantic)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.table.inputs import Purpose
from drivers.paths import config_dir


def default_approvals() -> Path:
    """The approved-device list shipped with tablectl."""
    return config_dir() / "approved-devices.toml"


class PlanGroup(BaseModel):
    """One group of the default dispense plan."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=1, le=52)
    purpose: Purpose


class ShufflerOptions(BaseModel):
    """How to reach and drive one TSP/1 shuffler."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    port: str
    baudrate: int = Field(default=115200, gt=0)
    approved_devices: Path = Field(default_factory=default_approvals)
    id_policy: Literal["withhold", "live"] = "withhold"
    profile: Literal["hand_forming", "poker_deck"] = "hand_forming"
    dispense_plan: tuple[PlanGroup, ...] = ()
    heartbeat_interval: float = Field(default=1.0, gt=0)
    heartbeat_failures: int = Field(default=3, ge=1)
    response_timeout: float = Field(default=0.3, gt=0)
    max_retransmits: int = Field(default=3, ge=0)
    backoff_base: float = Field(default=0.25, gt=0)
    backoff_cap: float = Field(default=5.0, gt=0)
    fail_after: int = Field(default=10, ge=1)
    rejected_retry: float = Field(default=30.0, gt=0)
