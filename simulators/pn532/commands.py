"""The PN532 simulator's command vocabulary, shared by the control channel and scenario files.

A command is one JSON object (one TOML table in a scenario) whose leading key says what it is:
``{"place": ["04a1…"]}``, ``{"remove": […]}``, ``{"tags": […]}``,
``{"fault": "flap", "rate": 0.2}``, ``{"fault": "antenna", "mode": "silent"}``,
``{"clear": "flap"}``, ``{"status": true}``. Unknown keys, and options that do not belong to the
fault named, are errors that name the key.
"""

from __future__ import annotations

from typing import Literal

from simulators.command_vocabulary import (
    CommandModel,
    FaultModel,
    PlaceCommand,
    RemoveCommand,
    StatusCommand,
    Uids,
    Vocabulary,
)
from simulators.pn532.faults import AntennaMode

FaultName = Literal["flap", "stacked_miss", "corrupt", "antenna", "unplug", "replug"]
#: The options each fault takes (besides ``fault`` itself); a rate fault needs its rate.
FAULT_OPTIONS: dict[str, frozenset[str]] = {
    "flap": frozenset({"rate"}),
    "stacked_miss": frozenset({"rate"}),
    "corrupt": frozenset({"rate"}),
    "antenna": frozenset({"mode"}),
    "unplug": frozenset(),
    "replug": frozenset(),
}
RATE_FAULTS = ("flap", "stacked_miss", "corrupt")


class TagsCommand(CommandModel):
    """Make the antenna hold exactly these tags."""

    tags: Uids


class FaultCommand(FaultModel):
    """Inject a fault: a rate of misses or garbled frames, a broken antenna, a pulled cable."""

    OPTIONS = FAULT_OPTIONS
    RATE_FAULTS = RATE_FAULTS

    fault: FaultName
    mode: AntennaMode = AntennaMode.TIMEOUT


class ClearCommand(CommandModel):
    """Remove a fault, or all of them."""

    clear: Literal["flap", "stacked_miss", "corrupt", "antenna", "all"]


Command = PlaceCommand | RemoveCommand | TagsCommand | FaultCommand | ClearCommand | StatusCommand

COMMANDS = Vocabulary[Command](Command, scenario=("seed", "tags"))
parse_command = COMMANDS.parse


def uid_bytes(uids: list[str]) -> list[bytes]:
    """A command's UIDs (validated hex) as bytes."""
    return [bytes.fromhex(uid) for uid in uids]
