"""What the simulators' command vocabularies share: one JSON object, one command key.

Each simulator names its commands by a key (``{"fault": …}``, ``{"place": …}``) and describes each
with a pydantic model that forbids unknown keys and whose first field is its key. The union of a
simulator's models makes its :class:`Vocabulary`; both the control socket and scenario files go
through it, so a typo reads the same wherever it was made. A device driven by them is a
:class:`CommandedDevice`: it carries out a valid command, the rest is here.

The tag readers' simulators (PN532, FEIG, the TSP/1 reader) speak of the same things the same
way: tags placed and removed (:class:`PlaceCommand`, :class:`RemoveCommand`, extended with an
antenna where the reader has several), the antennas' whole contents (:class:`AntennaTagsCommand`),
faults that each take only their own options (:class:`FaultModel`) and ``{"status": true}``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Generic, Self, TypeVar, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from controller.uids import UidError, normalize_uid
from simulators.errors import RefusedError
from simulators.schedule import Scenario, parse_scenario, read_document


class CommandModel(BaseModel):
    """Base of every simulator command and its nested parts: frozen, unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def key(cls) -> str:
        """The key that names the command: its first field."""
        return next(iter(cls.model_fields))


CommandT = TypeVar("CommandT", bound=CommandModel)


class CommandError(ValueError):
    """A command that is not valid, with a message naming the offending key."""


class Vocabulary(Generic[CommandT]):
    """A simulator's commands by key, made from their union: ``Vocabulary[Command](Command)``.

    ``scenario`` is what a scenario file may hold at its top level besides its ``[[step]]``
    tables: ``seed``, and command keys for the state at start (a tag reader's ``tags``).
    """

    def __init__(self, commands: object, *, scenario: Collection[str] = ("seed",)) -> None:
        kinds: tuple[type[CommandT], ...] = get_args(commands) or (commands,)
        self.by_key = {kind.key(): kind for kind in kinds}
        if len(self.by_key) != len(kinds):
            raise ValueError(f"two commands have the same key: {[k.key() for k in kinds]}")
        self.scenario_keys = tuple(scenario)

    def parse(self, data: Any) -> CommandT:
        """Validate one command object against the model its key names.

        Raises :class:`CommandError` when ``data`` is not an object, has none or several of the
        command keys, or does not fit the model (each problem with its key path).
        """
        if not isinstance(data, dict):
            raise CommandError(f"a command is a JSON object, not {type(data).__name__}")
        kinds = [key for key in self.by_key if key in data]
        if len(kinds) != 1:
            known = ", ".join(self.by_key)
            raise CommandError(f"a command has exactly one of the keys {known}; got {sorted(data)}")
        try:
            return self.by_key[kinds[0]].model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or kinds[0]}: {err['msg']}"
                for err in exc.errors()
            )
            raise CommandError(problems) from None

    def parse_scenario(self, data: dict[str, Any], source: str = "scenario") -> Scenario[CommandT]:
        """Validate a decoded scenario document (a ScenarioError names the place at fault)."""
        return parse_scenario(data, source, self.parse, self.scenario_keys)

    def load_scenario(self, path: Path) -> Scenario[CommandT]:
        """Read and validate a scenario file."""
        return self.parse_scenario(read_document(path), str(path))


class CommandedDevice:
    """A simulated device driven by its commands: from the control channel and scenario steps.

    The device names its vocabulary (``COMMANDS``) and carries out one valid command
    (:meth:`apply`, the reply's fields). A command it cannot carry out raises
    :class:`CommandError` (an antenna it does not have) or
    :class:`~simulators.errors.RefusedError` (the device says no: no shuffled deck).
    """

    COMMANDS: ClassVar[Vocabulary[Any]]

    def apply(self, command: Any) -> dict[str, Any]:
        """Carry out a validated command; return the reply's fields."""
        raise NotImplementedError

    def reply(self, command: Any) -> dict[str, Any]:
        """Carry out a validated command (a scenario's step); the reply, a refusal's included."""
        try:
            return {"ok": True, **self.apply(command)}
        except RefusedError as refusal:
            return {"ok": False, "error": refusal.detail}

    def handle(self, data: Any) -> dict[str, Any]:
        """One decoded command from the control channel; a bad one raises :class:`CommandError`,
        which the channel answers with its message."""
        return self.reply(self.COMMANDS.parse(data))


# --------------------------------------------------------------------------- tag readers


def normalized_uids(values: list[str]) -> list[str]:
    """Tag UIDs in their one written form (a ValueError names a UID that is none)."""
    try:
        return [normalize_uid(value) for value in values]
    except UidError as exc:
        raise ValueError(str(exc)) from None


Uids = Annotated[list[str], AfterValidator(normalized_uids)]


class PlaceCommand(CommandModel):
    """Put tags on the antenna."""

    place: Uids


class RemoveCommand(CommandModel):
    """Lift tags off the table."""

    remove: Uids


class AntennaTagsCommand(CommandModel):
    """Make the antennas hold exactly these tags (antenna number → UIDs; others are emptied)."""

    tags: dict[int, list[str]]

    @field_validator("tags")
    @classmethod
    def _all_uids(cls, value: dict[int, list[str]]) -> dict[int, list[str]]:
        return {antenna: normalized_uids(uids) for antenna, uids in value.items()}


class FaultModel(CommandModel):
    """Inject a fault: each fault takes only its own ``OPTIONS``; one of ``RATE_FAULTS`` needs
    its rate (a rate is a number: ``true`` is not 1)."""

    OPTIONS: ClassVar[Mapping[str, frozenset[str]]]
    RATE_FAULTS: ClassVar[Collection[str]] = ()

    fault: str
    rate: float | None = Field(default=None, ge=0.0, le=1.0, strict=True)

    @model_validator(mode="after")
    def _options_belong(self) -> Self:
        extra = sorted(self.model_fields_set - {"fault"} - self.OPTIONS[self.fault])
        if extra:
            raise ValueError(f"{self.fault} does not take {', '.join(extra)}")
        if self.fault in self.RATE_FAULTS and self.rate is None:
            raise ValueError(f"{self.fault} needs a rate from 0 to 1")
        self._check_options()
        return self

    def _check_options(self) -> None:
        """The simulator's own checks of a fault's options (a ValueError says what is wrong)."""


class StatusCommand(CommandModel):
    """Report the simulator's state."""

    status: bool = True
