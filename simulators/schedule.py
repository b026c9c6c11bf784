"""What every simulator's scenario file shares: the document, its ``seed`` and its timed steps.

A file is TOML; its ``[[step]]`` tables are each ``at`` plus one command. Only the command
vocabulary differs, so the simulator passes its own ``parse`` (which raises ValueError with a
readable message for a bad command); :class:`~simulators.command_vocabulary.Vocabulary` does.
Every problem is a :class:`~simulators.errors.ScenarioError` naming the file (and the step).
"""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from simulators.errors import ScenarioError

T = TypeVar("T")


# Not slots: a frozen generic dataclass with slots cannot be made as ``Scenario[C](…)`` (3.11).
@dataclass(frozen=True)
class Scenario(Generic[T]):
    """A parsed scenario file."""

    seed: int | None = None
    #: Commands written at the top of the file (a tag reader's ``tags``): the state at start.
    initial: tuple[T, ...] = ()
    #: The ``[[step]]`` tables, sorted by time.
    steps: tuple[tuple[float, T], ...] = ()


def parse_scenario(
    data: dict[str, Any], source: str, parse: Callable[[dict[str, Any]], T], keys: Collection[str]
) -> Scenario[T]:
    """Validate a decoded scenario document whose top level may hold ``keys`` besides its steps:
    ``seed``, and command keys (each parsed as that command)."""
    seed = parse_seed(data, source, (*keys, "step"))
    initial = []
    for key in keys:
        if key != "seed" and key in data:
            try:
                initial.append(parse({key: data[key]}))
            except ValueError as exc:
                raise ScenarioError(f"{source}: {exc}") from None
    steps = parse_steps(data.get("step", []), parse, source)
    return Scenario(seed, tuple(initial), tuple(steps))


def read_document(path: Path) -> dict[str, Any]:
    """The decoded TOML of a scenario file."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None


def parse_seed(data: dict[str, Any], source: str, keys: Collection[str]) -> int | None:
    """The document's ``seed`` (optional), once it is known to hold only ``keys``."""
    unknown = set(data) - set(keys)
    if unknown:
        raise ScenarioError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}")
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ScenarioError(f"{source}: seed must be an integer")
    return seed


def parse_steps(
    steps: object, parse: Callable[[dict[str, Any]], T], source: str
) -> list[tuple[float, T]]:
    """The steps (``[[step]]`` tables) as ``(at, command)`` pairs, sorted by time."""
    if not isinstance(steps, list):
        raise ScenarioError(f"{source}: step must be an array of tables ([[step]])")
    out: list[tuple[float, T]] = []
    for index, step in enumerate(steps, start=1):
        if not isinstance(step, dict):
            raise ScenarioError(f"{source}: step {index} is not a table")
        fields = dict(step)
        at = fields.pop("at", None)
        if not isinstance(at, int | float) or isinstance(at, bool) or at < 0:
            raise ScenarioError(f"{source}: step {index}: 'at' must be seconds >= 0, got {at!r}")
        try:
            out.append((float(at), parse(fields)))
        except ValueError as exc:
            raise ScenarioError(f"{source}: step {index}: {exc}") from None
    return sorted(out, key=lambda item: item[0])


async def play_steps(
    steps: Iterable[tuple[float, T]], apply: Callable[[T], object], start: float
) -> None:
    """Carry out each step's command at ``start + at`` (the running loop's clock)."""
    loop = asyncio.get_running_loop()
    for at, command in steps:
        await asyncio.sleep(max(0.0, start + at - loop.time()))
        apply(command)
