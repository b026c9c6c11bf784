"""Scenario files for ``tablectl sim rfid --scenario FILE`` (TOML): tags and timed commands.

.. code-block:: toml

    seed = 7                                   # RNG seed of the faults (optional)
    tags = { 0 = ["04a1b2c3d4e580"] }          # antenna → tags lying on it at start (optional)

    [[step]]
    at = 1.0                                   # seconds after the simulator started
    place = ["04c0ffee000001"]                 # then one command, as on the control channel
    antenna = 3

    [[step]]
    at = 2.0
    fault = "flap"
    rate = 0.2

Steps run in the order of ``at``; a file with an unknown key or a bad command is refused before
anything starts, with the step number in the message.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulators.command_vocabulary import CommandError
from simulators.errors import ScenarioError
from simulators.rfid.commands import Command, TagsCommand, parse_command
from simulators.schedule import parse_seed, parse_steps, read_document


@dataclass(frozen=True, slots=True)
class ReaderScenario:
    """A parsed scenario file."""

    seed: int | None = None
    tags: TagsCommand | None = None
    steps: tuple[tuple[float, Command], ...] = ()


def parse_scenario(data: dict[str, Any], source: str = "scenario") -> ReaderScenario:
    """Validate a decoded scenario document."""
    seed = parse_seed(data, source, ("seed", "tags", "step"))
    tags = None
    if "tags" in data:
        try:
            command = parse_command({"tags": data["tags"]})
        except CommandError as exc:
            raise ScenarioError(f"{source}: {exc}") from None
        assert isinstance(command, TagsCommand)
        tags = command
    steps = parse_steps(data.get("step", []), parse_command, source)
    return ReaderScenario(seed, tags, tuple(steps))


def load_scenario(path: Path) -> ReaderScenario:
    """Read and validate a scenario file."""
    return parse_scenario(read_document(path), str(path))
