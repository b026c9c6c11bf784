"""Scenario files for the simulator: a fault schedule in TOML.

```toml
[[step]]
at = 0.5              # seconds after the simulator started
fault = "crc"
rate = 0.01

[[step]]
at = 2.0
fault = "jam"
code = "JAM_INPUT"
```

Each step is ``at`` plus one command of :mod:`simulators.shuffler.commands`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from simulators.shuffler.commands import Command, CommandError, parse_command


class ScenarioError(ValueError):
    """A scenario file that cannot be used, with the step and key at fault."""


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: list[dict[str, Any]] = Field(default_factory=list)


def load_scenario(path: Path) -> list[tuple[float, Command]]:
    """The steps of a scenario file, sorted by time."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        document = _File.model_validate(raw)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(f"{path}: {where}: {first['msg']}") from None
    steps: list[tuple[float, Command]] = []
    for index, step in enumerate(document.step, start=1):
        fields = dict(step)
        at = fields.pop("at", None)
        if not isinstance(at, int | float) or isinstance(at, bool) or at < 0:
            raise ScenarioError(f"{path}: step {index}: 'at' must be seconds >= 0, got {at!r}")
        try:
            steps.append((float(at), parse_command(fields)))
        except CommandError as exc:
            raise ScenarioError(f"{path}: step {index}: {exc}") from None
    return sorted(steps, key=lambda item: item[0])
