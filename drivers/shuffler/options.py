"""The shuffler driver's options, as a table config gives them (validated with pydantic)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.table.inputs import Purpose
from drivers.paths import config_dir
from drivers.tsp.options import TspOptions


def default_approvals() -> Path:
    """The approved-device list shipped with tablectl."""
    return config_dir() / "approved-devices.toml"


class PlanGroup(BaseModel):
    """One group of the default dispense plan."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=1, le=52)
    purpose: Purpose


class ShufflerOptions(TspOptions):
    """How to reach and drive one TSP/1 shuffler."""

    port: str
    baudrate: int = Field(default=115200, gt=0)
    approved_devices: Path = Field(default_factory=default_approvals)
    id_policy: Literal["withhold", "live"] = "withhold"
    profile: Literal["hand_forming", "poker_deck"] = "hand_forming"
    dispense_plan: tuple[PlanGroup, ...] = ()
    rejected_retry: float = Field(default=30.0, gt=0)
