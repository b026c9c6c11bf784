"""The FEIG simulator's command vocabulary, shared by the control channel and scenario files.

A command is one JSON object (one TOML table in a scenario) whose leading key says what it is:
``{"place": ["e0040150a1b2c3d4"], "antenna": 3}``, ``{"remove": […]}``,
``{"tags": {"3": […]}}``, ``{"slide": […], "antenna": 13, "inventories": 3}``,
``{"fault": "crosstalk", "rate": 0.1}``, ``{"fault": "antenna", "antenna": 2, "code": "open"}``,
``{"clear": "crosstalk"}``, ``{"setup": {"reader": 1, "baudrate": 38400}}``, ``{"status": true}``.
Antennas are the line's (1… across its readers, 8 a reader). Unknown keys, and options that do
not belong to the fault named, are errors that name the key.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simulators import command_vocabulary as vocabulary
from simulators.command_vocabulary import (
    AntennaTagsCommand,
    CommandModel,
    RemoveCommand,
    StatusCommand,
    Uids,
    Vocabulary,
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
    "rf": frozenset({"problem", "reader"}),
}
RATE_FAULTS = ("crc", "partial", "flap", "crosstalk", "stacked_miss")
CLEARABLE = (*RATE_FAULTS, "stall", "antenna", "rf", "all")

TagsCommand = AntennaTagsCommand
LINE_ANTENNAS = 255
"""The most antennas a command may name (a line's own count is checked when it is carried out)."""


class PlaceCommand(vocabulary.PlaceCommand):
    """Put tags on an antenna (a tag lying elsewhere moves at once)."""

    antenna: int = Field(ge=1, le=LINE_ANTENNAS)


class SlideCommand(CommandModel):
    """Slide tags to another antenna: heard on both for ``inventories``, then on the new one."""

    slide: Uids
    antenna: int = Field(ge=1, le=LINE_ANTENNAS)
    inventories: int = Field(default=3, ge=1, le=1000)


class FaultCommand(vocabulary.FaultModel):
    """Inject a fault."""

    OPTIONS = FAULT_OPTIONS
    RATE_FAULTS = RATE_FAULTS

    fault: FaultName
    seconds: float = Field(default=1.0, gt=0.0, le=600.0)
    antenna: int | None = Field(default=None, ge=1, le=LINE_ANTENNAS)
    code: AntennaFault = AntennaFault.OPEN
    problem: Literal["hardware", "noise", "overtemperature"] = "hardware"
    reader: int | None = Field(default=None, ge=0, le=254, description="COM-ADR (default: all)")

    def _check_options(self) -> None:
        if self.fault == "antenna" and self.antenna is None:
            raise ValueError("antenna needs the antenna number")


class ClearCommand(CommandModel):
    """Remove a fault (a broken antenna: that one, or all of them), or ``all``."""

    clear: Literal[
        "crc", "partial", "flap", "crosstalk", "stacked_miss", "stall", "antenna", "rf", "all"
    ]
    antenna: int | None = Field(default=None, ge=1, le=LINE_ANTENNAS)


class ReaderSetup(CommandModel):
    """What a reader on the line is set up as (its CFG1 and CFG4, RAM and EEPROM, and what its
    [0x65] answer says it is); the fields left out stay as they are."""

    reader: int = Field(ge=0, le=254, description="its COM-ADR")
    address: int | None = Field(default=None, ge=0, le=254, description="a new COM-ADR")
    baudrate: Literal[4800, 9600, 19200, 38400, 57600, 115200] | None = None
    parity: Literal["none", "even", "odd"] | None = None
    scan_mode: bool | None = None
    time_slots: Literal[1, 16] | None = None
    afi: int | None = Field(default=None, ge=0, le=255, description="0: no AFI filter")
    response_time: float | None = Field(
        default=None, ge=0.0, le=6553.5, description="TR-RESPONSE-TIME, seconds (0.1 steps)"
    )
    sw_type: int | None = Field(default=None, ge=0, le=255)
    diagnostics: list[Literal[1, 3, 4, 5]] | None = Field(
        default=None, description="the [0x6E] modes it has (default 1, 3, 4, 5)"
    )
    firmware: str | None = Field(default=None, pattern=r"^\d{2}\.\d{2}\.\d{2}$")


class SetupCommand(CommandModel):
    """Set a reader up otherwise (to see what a driver makes of it)."""

    setup: ReaderSetup


Command = (
    PlaceCommand
    | RemoveCommand
    | TagsCommand
    | SlideCommand
    | FaultCommand
    | ClearCommand
    | SetupCommand
    | StatusCommand
)

COMMANDS = Vocabulary[Command](Command)
parse_command = COMMANDS.parse
