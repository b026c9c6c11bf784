"""SHF-RAND: when the audit raises a shuffler's alarm (pure: no I/O).

The rule: each time a shuffler has dealt ``every`` more decks, its last ``window`` decks are
tested (all of them while it has fewer); the alarm is raised when a test's Bonferroni-corrected
p-value is below ``alpha`` (or an order repeats in the window), and stays while each check finds
it so; it clears at the first check that does not. The pit applies it to the decks it stores
(controller/pit/reports/shuffler_audit.py); benchmarks/shuffler_audit.py applies it to the
simulated shuffler's decks to measure the false-alarm rate and how soon a bias is caught, the
figures docs/reports.md gives.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from controller.pit.reports.randomness import CHANGE_PAIRS, Verdict, Window, verdict

#: Defaults of ``[reports]``: the level, the decks a check rests on, the decks between checks.
ALPHA = 1e-5
WINDOW = 1000
EVERY = 50


@dataclass(frozen=True, slots=True)
class Rule:
    """The alarm rule's parameters."""

    alpha: float = ALPHA
    window: int = WINDOW
    every: int = EVERY

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha: a level between 0 and 1, not {self.alpha}")
        if self.window < CHANGE_PAIRS + 1:
            raise ValueError(f"window: at least {CHANGE_PAIRS + 1} decks, not {self.window}")
        if self.every < 1:
            raise ValueError(f"every: at least 1 deck, not {self.every}")

    def due(self, decks: int, checked: int) -> bool:
        """Whether a shuffler with ``decks`` stored, checked when it had ``checked``, is due."""
        return decks - checked >= self.every

    def judge(self, window: Window) -> Verdict:
        """The verdict on the decks of ``window``."""
        return verdict(window.tally, self.alpha, window.repeats)


def follow(decks: Iterable[bytes], rule: Rule) -> Iterator[tuple[int, Verdict]]:
    """Each check the rule makes over a shuffler's ``decks``, in order: (decks dealt, verdict)."""
    window = Window(rule.window)
    checked = 0
    for dealt, deck in enumerate(decks, 1):
        window.add(deck)
        if rule.due(dealt, checked):
            checked = dealt
            yield dealt, rule.judge(window)
