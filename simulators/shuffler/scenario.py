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

from simulators.errors import ScenarioError
from simulators.schedule import parse_steps
from simulators.shuffler.commands import Command, parse_command


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
    return parse_steps(document.step, parse_command, str(path))
