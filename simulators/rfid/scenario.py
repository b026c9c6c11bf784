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

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulators.command_vocabulary import CommandError
from simulators.errors import ScenarioError
from simulators.rfid.commands import Command, TagsCommand, parse_command
from simulators.schedule import ScheduleError, parse_steps


@dataclass(frozen=True, slots=True)
class ReaderScenario:
    """A parsed scenario file."""

    seed: int | None = None
    tags: TagsCommand | None = None
    steps: tuple[tuple[float, Command], ...] = ()


def parse_scenario(data: dict[str, Any], source: str = "scenario") -> ReaderScenario:
    """Validate a decoded scenario document."""
    unknown = set(data) - {"seed", "tags", "step"}
    if unknown:
        raise ScenarioError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}")
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ScenarioError(f"{source}: seed must be an integer")
    tags = None
    if "tags" in data:
        try:
            command = parse_command({"tags": data["tags"]})
        except CommandError as exc:
            raise ScenarioError(f"{source}: {exc}") from None
        assert isinstance(command, TagsCommand)
        tags = command
    try:
        steps = parse_steps(data.get("step", []), parse_command)
    except ScheduleError as exc:
        raise ScenarioError(f"{source}: {exc}") from None
    return ReaderScenario(seed, tags, tuple(steps))


def load_scenario(path: Path) -> ReaderScenario:
    """Read and validate a scenario file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    return parse_scenario(data, str(path))
