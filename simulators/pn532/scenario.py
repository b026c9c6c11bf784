"""Scripted tag placement and faults for ``tablectl sim pn532 --scenario FILE`` (TOML).

.. code-block:: toml

    seed = 7                         # RNG seed for the faults (optional)
    tags = ["04a1b2c3d4e580"]        # on the antenna from the start (optional)

    [[step]]
    at = 2.0                         # seconds after the simulator starts
    place = ["04c0ffee000001"]       # then one control action, exactly as on the control channel

    [[step]]
    at = 5.0
    fault = "flap"
    rate = 0.2

Steps run in the order of ``at``; a file with an unknown key or a bad action is refused before
anything starts, with the step number in the message.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulators.pn532.control import ControlError, Request, parse_request
from simulators.schedule import ScheduleError, parse_steps


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the step."""


@dataclass(frozen=True, slots=True)
class Step:
    """One scripted action and when it happens."""

    at: float
    request: Request


@dataclass(frozen=True, slots=True)
class Pn532Scenario:
    """A parsed scenario file."""

    seed: int | None
    tags: tuple[bytes, ...]
    steps: tuple[Step, ...]


def parse_scenario(data: dict[str, Any], source: str = "scenario") -> Pn532Scenario:
    """Validate a decoded scenario document."""
    unknown = set(data) - {"seed", "tags", "step"}
    if unknown:
        raise ScenarioError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}")
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ScenarioError(f"{source}: seed must be an integer")
    try:
        tags = parse_request({"tags": data.get("tags", [])}).uids
    except ControlError as exc:
        raise ScenarioError(f"{source}: tags: {exc}") from None
    try:
        steps = parse_steps(data.get("step", []), parse_request)
    except ScheduleError as exc:
        raise ScenarioError(f"{source}: {exc}") from None
    return Pn532Scenario(seed, tags, tuple(Step(at, request) for at, request in steps))


def load_scenario(path: Path) -> Pn532Scenario:
    """Read and validate a scenario file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    return parse_scenario(data, str(path))
