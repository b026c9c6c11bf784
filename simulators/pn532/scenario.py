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
    raw_steps = data.get("step", [])
    if not isinstance(raw_steps, list):
        raise ScenarioError(f"{source}: step must be an array of tables ([[step]])")
    steps = []
    for number, raw in enumerate(raw_steps, start=1):
        if not isinstance(raw, dict):
            raise ScenarioError(f"{source}: step {number} is not a table")
        action = dict(raw)
        at = action.pop("at", None)
        if isinstance(at, bool) or not isinstance(at, int | float) or at < 0:
            raise ScenarioError(f"{source}: step {number}: 'at' must be seconds >= 0")
        try:
            steps.append(Step(float(at), parse_request(action)))
        except ControlError as exc:
            raise ScenarioError(f"{source}: step {number}: {exc}") from None
    steps.sort(key=lambda step: step.at)
    return Pn532Scenario(seed, tags, tuple(steps))


def load_scenario(path: Path) -> Pn532Scenario:
    """Read and validate a scenario file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    return parse_scenario(data, str(path))
