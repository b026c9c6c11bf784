"""The FEIG simulator's command vocabulary, shared by the control channel and scenario files.

A command is one JSON object (one TOML table in a scenario) whose leading key says what it is:
``{"place": ["e0040150a1b2c3d4"], "antenna": 3}``, ``{"remove": […]}``,
``{"tags": {"3": […]}}``, ``{"slide": […], "antenna": 13, "inventories": 3}``,
``{"fault": "crosstalk", "rate": 0.1}``, ``{"fault": "antenna", "antenna": 2, "code": "open"}``,
``{"clear": "crosstalk"}``, ``{"status": true}``. Unknown keys, and options that do not belong to
the fault named, are errors that name the key.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from simulators import command_vocabulary as vocabulary
from simulators.command_vocabulary import (
    AntennaTagsCommand,
    CommandModel,
    RemoveCommand,
    StatusCommand,
    Uids,
    parse_keyed,
)
from simulators.feig.radio import AntennaFault

FaultName = Literal[
    "crc",
    "partial",
    "stall",
    "unplug",
    "replug",
    "antenna",
    "flap",
    "crosstalk",
    "stacked_miss",
    "rf",
]
#: The reader's RF front-end problems (``[0x6E]`` mode 0x01 flags).
RF_PROBLEMS = {"hardware": 0x01, "noise": 0x02, "overtemperature": 0x04}
#: The options each fault takes (besides ``fault`` itself).
FAULT_OPTIONS: dict[str, frozenset[str]] = {
    "crc": frozenset({"rate"}),
    "partial": frozenset({"rate"}),
    "stall": frozenset({"seconds"}),
    "unplug": frozenset(),
    "replug": frozenset(),
    "antenna": frozenset({"antenna", "code"}),
    "flap": frozenset({"rate"}),
    "crosstalk": frozenset({"rate"}),
    "stacked_miss": frozenset({"rate"}),
    "rf": frozenset({"problem"}),
}
RATE_FAULTS = ("crc", "partial", "flap", "crosstalk", "stacked_miss")
CLEARABLE = (*RATE_FAULTS, "stall", "antenna", "rf", "all")

TagsCommand = AntennaTagsCommand


class PlaceCommand(vocabulary.PlaceCommand):
    """Put tags on an antenna (a tag lying elsewhere moves at once)."""

    antenna: int = Field(ge=1, le=32)


class SlideCommand(CommandModel):
    """Slide tags to another antenna: heard on both for ``inventories``, then on the new one."""

    slide: Uids
    antenna: int = Field(ge=1, le=32)
    inventories: int = Field(default=3, ge=1, le=1000)


class FaultCommand(vocabulary.FaultModel):
    """Inject a fault."""

    OPTIONS = FAULT_OPTIONS
    RATE_FAULTS = RATE_FAULTS

    fault: FaultName
    seconds: float = Field(default=1.0, gt=0.0, le=600.0)
    antenna: int | None = Field(default=None, ge=1, le=32)
    code: AntennaFault = AntennaFault.OPEN
    problem: Literal["hardware", "noise", "overtemperature"] = "hardware"

    def _check_options(self) -> None:
        if self.fault == "antenna" and self.antenna is None:
            raise ValueError("antenna needs the antenna number")


class ClearCommand(CommandModel):
    """Remove a fault (a broken antenna: that one, or all of them), or ``all``."""

    clear: Literal[
        "crc", "partial", "flap", "crosstalk", "stacked_miss", "stall", "antenna", "rf", "all"
    ]
    antenna: int | None = Field(default=None, ge=1, le=32)


Command = (
    PlaceCommand
    | RemoveCommand
    | TagsCommand
    | SlideCommand
    | FaultCommand
    | ClearCommand
    | StatusCommand
)

_BY_KEY: dict[str, type[Command]] = {
    "place": PlaceCommand,
    "remove": RemoveCommand,
    "tags": TagsCommand,
    "slide": SlideCommand,
    "fault": FaultCommand,
    "clear": ClearCommand,
    "status": StatusCommand,
}


def parse_command(data: Any) -> Command:
    """Validate one command object (a :class:`CommandError` names the offending key)."""
    return parse_keyed(data, _BY_KEY)
