"""Timed steps of a simulator scenario file: ``[[step]]`` tables, each ``at`` plus one command.

Every simulator's scenario file lists its steps the same way; only the command vocabulary
differs, so the simulator passes its own ``parse`` (which raises ValueError with a readable
message for a bad command).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class ScheduleError(ValueError):
    """A step that cannot be used; the message names the step."""


def parse_steps(steps: object, parse: Callable[[dict[str, Any]], T]) -> list[tuple[float, T]]:
    """The steps (``[[step]]`` tables) as ``(at, command)`` pairs, sorted by time."""
    if not isinstance(steps, list):
        raise ScheduleError("step must be an array of tables ([[step]])")
    out: list[tuple[float, T]] = []
    for index, step in enumerate(steps, start=1):
        if not isinstance(step, dict):
            raise ScheduleError(f"step {index} is not a table")
        fields = dict(step)
        at = fields.pop("at", None)
        if not isinstance(at, int | float) or isinstance(at, bool) or at < 0:
            raise ScheduleError(f"step {index}: 'at' must be seconds >= 0, got {at!r}")
        try:
            out.append((float(at), parse(fields)))
        except ValueError as exc:
            raise ScheduleError(f"step {index}: {exc}") from None
    return sorted(out, key=lambda item: item[0])
