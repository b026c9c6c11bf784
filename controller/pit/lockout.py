"""Lock-out: how long a client address waits before it may try a user's password again.

Wrong passwords are counted per **(user, client address)**, in the store
(:meth:`controller.pit.store.Store.login_attempt`), so every pit process sharing the store sees
the same counts. After ``attempts`` wrong passwords from one address for one user, each further
try from that address waits: 1 s, then 2 s, 4 s … doubling up to ``minutes``. Meanwhile even the
right password is refused from that address (guessing gains nothing), but never from another
one: a stranger who types wrong passwords for a named person slows only themselves. The right
password clears the count of its (user, address); a count is forgotten after :data:`FORGET`
seconds without a wrong password, and at most :data:`MAX_TRACKED` counts are kept (the longest
quiet are forgotten first).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Counts kept at most (the longest quiet are forgotten past it).
MAX_TRACKED = 10_000
#: Seconds without a wrong password after which a count is forgotten (a day).
FORGET = 24 * 3600.0


@dataclass(frozen=True)
class LockOut:
    """The policy: ``attempts`` free, then waits doubling from one second up to ``minutes``."""

    attempts: int = 5
    minutes: float = 15.0
    forget: float = FORGET
    keep: int = MAX_TRACKED

    def delay(self, failures: int) -> float:
        """Seconds the next try waits once ``failures`` attempts in a row were not right."""
        if failures < self.attempts:
            return 0.0
        return min(2.0 ** min(failures - self.attempts, 40), self.minutes * 60)
