"""What the simulators' command vocabularies share: one JSON object, one command key.

Each simulator names its commands by a key (``{"fault": …}``, ``{"place": …}``) and describes each
with a pydantic model that forbids unknown keys. Both the control socket and scenario files go
through :func:`parse_keyed`, so a typo reads the same wherever it was made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError


class CommandModel(BaseModel):
    """Base of every simulator command and its nested parts: frozen, unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


CommandT = TypeVar("CommandT", bound=CommandModel)


class CommandError(ValueError):
    """A command that is not valid, with a message naming the offending key."""


def parse_keyed(data: Any, by_key: Mapping[str, type[CommandT]]) -> CommandT:
    """Validate one command object against the model its key names.

    Raises :class:`CommandError` when ``data`` is not an object, has none or several of the
    command keys, or does not fit the model (each problem with its key path).
    """
    if not isinstance(data, dict):
        raise CommandError(f"a command is a JSON object, not {type(data).__name__}")
    kinds = [key for key in by_key if key in data]
    if len(kinds) != 1:
        known = ", ".join(by_key)
        raise CommandError(f"a command has exactly one of the keys {known}; got {sorted(data)}")
    try:
        return by_key[kinds[0]].model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or kinds[0]}: {err['msg']}"
            for err in exc.errors()
        )
        raise CommandError(problems) from None
