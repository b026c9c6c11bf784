"""The simulator's command vocabulary, shared by the control channel and scenario files.

A command is one JSON object (one TOML table in a scenario) whose leading key says what it is:
``{"fault": "crc", "rate": 0.01}``, ``{"deck_check": "duplicate"}``, ``{"deck": {"seed": 7}}``,
``{"press": "shuffle"}``, ``{"clear": "JAM_INPUT"}``, ``{"burst": 100}``, ``{"status": true}``,
``{"dispense": {"purpose": "hole", "seat": 3, "count": 2}}``, ``{"tray": "gated"}``,
``{"deliver": {"count": 4}}``, ``{"reshuffle": {"add": ["As"], "seed": 4}}``, ``{"groups": true}``.
Every model forbids unknown keys, so a typo is an error that names the key. A scenario file is
``[[step]]`` tables of these commands only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from controller.cards import parse_card
from controller.table.inputs import Purpose
from drivers.shuffler.codes import FAULTS
from simulators.command_vocabulary import CommandModel, StatusCommand, Vocabulary

FaultName = Literal[
    "crc",
    "partial",
    "stall",
    "unplug",
    "replug",
    "jam",
    "raise",
    "lid_open",
    "lid_close",
    "count_mismatch",
    "power_loss",
    "unapproved_firmware",
    "lying_firmware",
    "no_challenge",
    "approved_firmware",
    "bad_commitment",
]


class FaultCommand(CommandModel):
    """Inject a fault (link-level ones take ``rate`` or ``seconds``)."""

    fault: FaultName
    rate: float = Field(default=0.0, ge=0.0, le=1.0)
    direction: Literal["in", "out", "both"] = "both"
    seconds: float = Field(default=1.0, gt=0.0, le=600.0)
    code: str | None = None
    severity: Literal["info", "warn", "error", "critical"] = "error"
    detail: str = ""
    count: int | None = Field(default=None, ge=0, le=104)

    @field_validator("code")
    @classmethod
    def _known_code(cls, value: str | None) -> str | None:
        if value is not None:
            FAULTS.code(value)
        return value


class DeckCheckCommand(CommandModel):
    """Make the next shuffle's deck check find this problem."""

    deck_check: Literal[
        "ok", "short", "extra", "duplicate", "foreign", "unreadable", "missing", "wrong_profile"
    ]


class DeckSpec(CommandModel):
    """The next decks: an explicit order (top first) or a seed."""

    seed: int | None = None
    order: list[str] | None = None

    @field_validator("order")
    @classmethod
    def _cards(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [parse_card(text) for text in value]


class DeckCommand(CommandModel):
    """Load a deck order for the next shuffles."""

    deck: DeckSpec


class PressCommand(CommandModel):
    """The dealer presses a button on the shuffler."""

    press: Literal["shuffle", "present", "menu"]


class ClearCommand(CommandModel):
    """The operator clears a fault by name, or ``all``."""

    clear: str

    @field_validator("clear")
    @classmethod
    def _known(cls, value: str) -> str:
        if value != "all":
            FAULTS.code(value)
        return value


class BurstCommand(CommandModel):
    """Raise and clear this many tray warnings back to back (ordered events for link tests)."""

    burst: int = Field(ge=1, le=10000)


class DispenseSpec(CommandModel):
    """One group the dealer delivers from the keypad."""

    purpose: Purpose
    seat: int | None = Field(default=None, ge=1, le=10)
    count: int = Field(default=1, ge=1, le=52)


class DispenseCommand(CommandModel):
    """The dealer delivers the next group (a dealer-paced table: the host asks for nothing)."""

    dispense: DispenseSpec


class TrayCommand(CommandModel):
    """How host groups leave the tray: ``open`` (at once) or ``gated`` (when the dealer takes
    them, with ``deliver``): the tray sensor of a host-paced table."""

    tray: Literal["open", "gated"]


class DeliverSpec(CommandModel):
    """The dealer takes the oldest group the host asked for; ``count`` cards come instead of
    the number asked when given (a misfeed)."""

    count: int | None = Field(default=None, ge=1, le=52)


class DeliverCommand(CommandModel):
    """The dealer takes the next host group from a gated tray."""

    deliver: DeliverSpec


class ReshuffleSpec(CommandModel):
    """Cards put back into the shuffler to be shuffled with the stub."""

    add: list[str] = Field(default_factory=list)
    seed: int

    @field_validator("add")
    @classmethod
    def _cards(cls, value: list[str]) -> list[str]:
        return [parse_card(text) for text in value]


class ReshuffleCommand(CommandModel):
    """The dealer reshuffles the stub with the cards put back (a stub reshuffle)."""

    reshuffle: ReshuffleSpec


class GroupsCommand(CommandModel):
    """Report the groups that left the tray of the deck in it (read-only: the dealer's view
    of what to put on the table)."""

    groups: Literal[True] = True


Command = (
    FaultCommand
    | DeckCheckCommand
    | DeckCommand
    | PressCommand
    | ClearCommand
    | BurstCommand
    | DispenseCommand
    | TrayCommand
    | DeliverCommand
    | ReshuffleCommand
    | StatusCommand
    | GroupsCommand
)

COMMANDS = Vocabulary[Command](Command, scenario=())
parse_command = COMMANDS.parse
