"""Lock-out at the station: wrong PINs are counted per person, and after a few each try waits.

The count is kept for whom the "Dealer" field named (the person, whether by a badge or by the
typed id; an id or badge nobody has counts under what was given), never for the station: five
wrong PINs for Ann's badge make Ann wait, and Bob logs in at once. After ``attempts`` wrong PINs
in a row (5), each further try waits: 1 s, then 2 s, 4 s, … doubling up to ``lockout_max``
seconds (the pit's policy, :class:`controller.pit.lockout.LockOut`). Meanwhile even the right
PIN is refused (guessing gains nothing), and a try in a wait is not counted. The right PIN
clears the count; a count is forgotten after a day without a wrong PIN, and at most 1,000 are
kept (the longest quiet forgotten first).

Pure: the time comes in as an argument (seconds on any monotonic clock).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from controller.pit.lockout import LockOut

#: Counts kept at most.
KEEP = 1000


@dataclass(frozen=True)
class Tries:
    """The wrong PINs in a row for one person, and when the last one was."""

    failures: int
    last: float


class Lockouts:
    """Everyone's wrong PINs, under a :class:`LockOut` policy."""

    def __init__(self, policy: LockOut) -> None:
        self.policy = policy
        self._tries: OrderedDict[str, Tries] = OrderedDict()

    def wait(self, who: str, now: float) -> float:
        """Seconds before ``who`` may try a PIN (0: now)."""
        tries = self._current(who, now)
        if tries is None:
            return 0.0
        return max(0.0, tries.last + self.policy.delay(tries.failures) - now)

    def failures(self, who: str, now: float) -> int:
        """The wrong PINs in a row ``who`` has now."""
        tries = self._current(who, now)
        return tries.failures if tries is not None else 0

    def failed(self, who: str, now: float) -> float:
        """A wrong PIN for ``who``: counted; the seconds the next try waits."""
        tries = self._current(who, now)
        self._tries[who] = Tries((tries.failures if tries else 0) + 1, now)
        self._tries.move_to_end(who)
        while len(self._tries) > min(self.policy.keep, KEEP):
            self._tries.popitem(last=False)
        return self.wait(who, now)

    def succeeded(self, who: str) -> None:
        """The right PIN: ``who``'s count is cleared."""
        self._tries.pop(who, None)

    def _current(self, who: str, now: float) -> Tries | None:
        tries = self._tries.get(who)
        if tries is not None and now - tries.last > self.policy.forget:
            del self._tries[who]
            return None
        return tries
