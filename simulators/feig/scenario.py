"""Scripted tags and faults for ``tablectl sim feig --scenario FILE`` (TOML).

.. code-block:: toml

    seed = 7                         # RNG seed (optional)

    [[step]]
    at = 0.5                         # seconds after the simulator starts
    place = ["e0040150a1b2c3d4"]     # then one command, exactly as on the control channel
    antenna = 1

    [[step]]
    at = 2.0
    fault = "crosstalk"
    rate = 0.1

Steps run in the order of ``at``; a file with an unknown key or a bad command is refused before
anything starts, with the step number in the message.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulators.feig.commands import Command, parse_command
from simulators.schedule import parse_seed, parse_steps, read_document


@dataclass(frozen=True, slots=True)
class FeigScenario:
    """A parsed scenario file."""

    seed: int | None = None
    steps: tuple[tuple[float, Command], ...] = ()


def parse_scenario(data: dict[str, Any], source: str = "scenario") -> FeigScenario:
    """Validate a decoded scenario document."""
    seed = parse_seed(data, source, ("seed", "step"))
    return FeigScenario(seed, tuple(parse_steps(data.get("step", []), parse_command, source)))


def load_scenario(path: Path) -> FeigScenario:
    """Read and validate a scenario file."""
    return parse_scenario(read_document(path), str(path))
