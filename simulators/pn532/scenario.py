"""Scripted tag placement and faults for ``tablectl sim pn532 --scenario FILE`` (TOML).

.. code-block:: toml

    seed = 7                         # RNG seed for the faults (optional)
    tags = ["04a1b2c3d4e580"]        # on the antenna from the start (optional)

    [[step]]
    at = 2.0                         # seconds after the simulator starts
    place = ["04c0ffee000001"]       # then one command, exactly as on the control channel

    [[step]]
    at = 5.0
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
from simulators.pn532.commands import Command, TagsCommand, parse_command, uid_bytes
from simulators.schedule import parse_seed, parse_steps, read_document


@dataclass(frozen=True, slots=True)
class Pn532Scenario:
    """A parsed scenario file."""

    seed: int | None = None
    tags: tuple[bytes, ...] = ()
    steps: tuple[tuple[float, Command], ...] = ()


def parse_scenario(data: dict[str, Any], source: str = "scenario") -> Pn532Scenario:
    """Validate a decoded scenario document."""
    seed = parse_seed(data, source, ("seed", "tags", "step"))
    try:
        tags = parse_command({"tags": data.get("tags", [])})
    except CommandError as exc:
        raise ScenarioError(f"{source}: {exc}") from None
    assert isinstance(tags, TagsCommand)
    steps = parse_steps(data.get("step", []), parse_command, source)
    return Pn532Scenario(seed, tuple(uid_bytes(tags.tags)), tuple(steps))


def load_scenario(path: Path) -> Pn532Scenario:
    """Read and validate a scenario file."""
    return parse_scenario(read_document(path), str(path))
