"""The reader simulator's command vocabulary, shared by the control channel and scenario files.

A command is one JSON object (one TOML table in a scenario) whose leading key says what it is:
``{"place": ["04a1…"], "antenna": 3}``, ``{"remove": ["04a1…"]}``, ``{"tags": {"3": […]}}``,
``{"fault": "flap", "rate": 0.2}``, ``{"clear": "flap"}``, ``{"status": true}``. Unknown keys, and
options that do not belong to the fault named, are errors that name the key.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from drivers.rfid.tsp_reader.codes import FAULTS, AntennaCode
from simulators import command_vocabulary as vocabulary
from simulators.command_vocabulary import (
    AntennaTagsCommand,
    CommandModel,
    StatusCommand,
    Vocabulary,
)

FaultName = Literal[
    "crc",
    "partial",
    "stall",
    "unplug",
    "replug",
    "power_loss",
    "flap",
    "stacked_miss",
    "antenna",
    "lose_edges",
    "garble_edges",
    "raise",
]
#: The options each fault takes (besides ``fault`` itself).
FAULT_OPTIONS: dict[str, frozenset[str]] = {
    "crc": frozenset({"rate", "direction"}),
    "partial": frozenset({"rate"}),
    "stall": frozenset({"seconds"}),
    "unplug": frozenset(),
    "replug": frozenset(),
    "power_loss": frozenset(),
    "flap": frozenset({"rate", "antenna"}),
    "stacked_miss": frozenset({"rate", "antenna"}),
    "antenna": frozenset({"antenna", "code", "value"}),
    "lose_edges": frozenset({"rate"}),
    "garble_edges": frozenset({"rate"}),
    "raise": frozenset({"code", "severity", "detail"}),
}
ANTENNA_FAULTS = {"open": AntennaCode.OPEN, "short": AntennaCode.SHORT}
ANTENNA_FAULTS |= {"detuned": AntennaCode.DETUNED, "noise": AntennaCode.NOISE}
CLEARABLE = ("flap", "stacked_miss", "antenna", "lose_edges", "garble_edges", "crc", "partial")


TagsCommand = AntennaTagsCommand


class PlaceCommand(vocabulary.PlaceCommand):
    """Put tags on an antenna (a tag lying on another antenna moves)."""

    antenna: int = Field(ge=0, le=255)


class RemoveCommand(vocabulary.RemoveCommand):
    """Lift tags off an antenna, or off whichever antenna they lie on."""

    antenna: int | None = Field(default=None, ge=0, le=255)


class FaultCommand(vocabulary.FaultModel):
    """Inject a fault."""

    OPTIONS = FAULT_OPTIONS

    fault: FaultName
    rate: float = Field(default=0.0, ge=0.0, le=1.0)
    direction: Literal["in", "out", "both"] = "both"
    seconds: float = Field(default=1.0, gt=0.0, le=600.0)
    antenna: int | None = Field(default=None, ge=0, le=255)
    code: str | None = None
    value: int = Field(default=0, ge=0, le=0xFFFF)
    severity: Literal["info", "warn", "error", "critical"] = "error"
    detail: str = ""

    def _check_options(self) -> None:
        if self.fault == "antenna":
            if self.antenna is None:
                raise ValueError("antenna needs the antenna number")
            if (self.code or "open") not in ANTENNA_FAULTS:
                raise ValueError(f"antenna code must be one of {', '.join(ANTENNA_FAULTS)}")
        if self.fault == "raise":
            FAULTS.code(self.code or "")


class ClearCommand(CommandModel):
    """Remove a fault: a rate fault, a broken antenna, a device fault by name, or ``all``."""

    clear: str
    antenna: int | None = Field(default=None, ge=0, le=255)

    @field_validator("clear")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in (*CLEARABLE, "all"):
            try:
                FAULTS.code(value)
            except ValueError:
                known = ", ".join((*CLEARABLE, "all"))
                raise ValueError(f"clear takes one of {known} or a device fault name") from None
        return value


Command = PlaceCommand | RemoveCommand | TagsCommand | FaultCommand | ClearCommand | StatusCommand

COMMANDS = Vocabulary[Command](Command, scenario=("seed", "tags"))
parse_command = COMMANDS.parse
