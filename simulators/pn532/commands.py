"""The PN532 simulator's command vocabulary, shared by the control channel and scenario files.

A command is one JSON object (one TOML table in a scenario) whose leading key says what it is:
``{"place": ["04a1…"]}``, ``{"remove": […]}``, ``{"tags": […]}``,
``{"fault": "flap", "rate": 0.2}``, ``{"fault": "antenna", "mode": "silent"}``,
``{"clear": "flap"}``, ``{"status": true}``. Unknown keys, and options that do not belong to the
fault named, are errors that name the key.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from controller.uids import UidError, normalize_uid
from simulators.command_vocabulary import CommandModel, parse_keyed
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


def _uids(values: list[str]) -> list[str]:
    try:
        return [normalize_uid(value) for value in values]
    except UidError as exc:
        raise ValueError(str(exc)) from None


class PlaceCommand(CommandModel):
    """Put tags on the antenna."""

    place: list[str]

    _check = field_validator("place")(_uids)


class RemoveCommand(CommandModel):
    """Lift tags off the antenna."""

    remove: list[str]

    _check = field_validator("remove")(_uids)


class TagsCommand(CommandModel):
    """Make the antenna hold exactly these tags."""

    tags: list[str]

    _check = field_validator("tags")(_uids)


class FaultCommand(CommandModel):
    """Inject a fault: a rate of misses or garbled frames, a broken antenna, a pulled cable."""

    fault: FaultName
    # strict: a rate is a number (true is not 1)
    rate: float | None = Field(default=None, ge=0.0, le=1.0, strict=True)
    mode: AntennaMode = AntennaMode.TIMEOUT

    @model_validator(mode="after")
    def _options_belong(self) -> Self:
        extra = sorted(self.model_fields_set - {"fault"} - FAULT_OPTIONS[self.fault])
        if extra:
            raise ValueError(f"{self.fault} does not take {', '.join(extra)}")
        if self.fault in RATE_FAULTS and self.rate is None:
            raise ValueError(f"{self.fault} needs a rate from 0 to 1")
        return self


class ClearCommand(CommandModel):
    """Remove a fault, or all of them."""

    clear: Literal["flap", "stacked_miss", "corrupt", "antenna", "all"]


class StatusCommand(CommandModel):
    """Report the simulator's state."""

    status: bool = True


Command = PlaceCommand | RemoveCommand | TagsCommand | FaultCommand | ClearCommand | StatusCommand

_BY_KEY: dict[str, type[Command]] = {
    "place": PlaceCommand,
    "remove": RemoveCommand,
    "tags": TagsCommand,
    "fault": FaultCommand,
    "clear": ClearCommand,
    "status": StatusCommand,
}


def parse_command(data: Any) -> Command:
    """Validate one command object (a :class:`CommandError` names the offending key)."""
    return parse_keyed(data, _BY_KEY)


def uid_bytes(uids: list[str]) -> list[bytes]:
    """A command's UIDs (validated hex) as bytes."""
    return [bytes.fromhex(uid) for uid in uids]
