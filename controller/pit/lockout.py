"""Lock-out: a user whose password was wrong too many times in a row waits before trying again.

Kept in this pit process's memory (several processes behind one address each count their own
attempts): a wrong password counts, a right one clears the count, and while a user is locked
out even the right password is refused, so guessing gains nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

#: Users whose failures are remembered, at most (the oldest are forgotten past it).
MAX_TRACKED = 10_000


@dataclass
class _Failures:
    count: int
    locked_until: float


class LockOut:
    """Counts each user's wrong passwords; locks them out for ``minutes`` after ``attempts``."""

    def __init__(
        self, attempts: int, minutes: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.attempts = attempts
        self.seconds = minutes * 60
        self.clock = clock
        self._failures: dict[str, _Failures] = {}

    def locked(self, name: str) -> float:
        """Seconds until ``name`` may try again (0: now)."""
        found = self._failures.get(name)
        if found is None:
            return 0.0
        return max(0.0, found.locked_until - self.clock())

    def failed(self, name: str) -> None:
        """A wrong password for ``name``."""
        found = self._failures.pop(name, None) or _Failures(0, 0.0)
        if found.locked_until and found.locked_until <= self.clock():
            found = _Failures(0, 0.0)  # the lock-out is over: counting starts again
        found.count += 1
        if found.count >= self.attempts:
            found.locked_until = self.clock() + self.seconds
        self._failures[name] = found
        if len(self._failures) > MAX_TRACKED:
            del self._failures[next(iter(self._failures))]

    def succeeded(self, name: str) -> None:
        """The right password for ``name``: its count starts again."""
        self._failures.pop(name, None)
