"""SHF-RAND: the randomness audit of one shuffler over its revealed decks (pure: no I/O).

A deck is its order, top first, as the TSP/1 card codes (``suit * 13 + rank``, 0 … 51,
controller/cards.py) in a ``bytes`` of 52. A :class:`Tally` counts what the tests read from a
sequence of decks of one shuffler, in the order it dealt them; tallies of consecutive stretches
merge (a day's with the next day's), so a month is the sum of its days. The tests, each a
chi-square statistic with its degrees of freedom and a two-sided p-value (a fit too good to be
true is as suspect as a bad one: Knuth, TAOCP vol. 2, §3.3.1 B):

* ``positions`` — the 52 × 52 card × position table against uniform (every card equally likely
  at every position). Each deck is a permutation matrix, so its rows and columns are fixed: the
  Pearson statistic ``Σ (O - E)² / E`` of ``n`` decks is ``k/(k-1)`` times a chi-square with
  ``(k-1)²`` degrees of freedom (the covariance of a uniform permutation matrix,
  controller/pit/reports/shuffle_laws.py), and is scaled by ``(k-1)/k``. Needs ``E = n/52 ≥ 5``:
  260 decks.
* ``changes`` — each card's position change between consecutive decks (folded to ``|d|``, in 13
  bins of near-equal probability) against its exact law under uniform shuffles, by the
  Mahalanobis distance with the bins' exact covariance: chi-square with 12 degrees of freedom.
  A weak riffle shuffle leaves cards near where they were (Bayer and Diaconis 1992).
* ``suits`` — the adjacent pairs of one suit in each deck against their exact law (NIST SP
  800-22's runs test, for a four-letter alphabet), its tails pooled so that every bin expects 5
  from 260 decks.

and ``repeats``: a deck order seen before (52! ≈ 8·10⁶⁷: under a fair shuffle, never). Each
p-value is reported with the number of decks it rests on, or "not enough decks yet" below what
its test needs. The three p-values of one shuffler are Bonferroni-corrected (each times 3) before
they are compared with the audit's level: the chance that a fair shuffler fails any of them is
at most the level.
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from controller.pit.reports.chi_square import chi2_two_sided
from controller.pit.reports.shuffle_laws import (
    change_bins,
    change_law,
    change_precision,
    pooled_bins,
    suit_pairs_law,
)

#: Cards in a deck, of each suit, and suits.
DECK = 52
SUIT = 13
SUITS = DECK // SUIT
#: Knuth's rule for the chi-square approximation: at least 5 expected in each cell.
MIN_EXPECTED = 5
#: Decks the card × position test needs: 5 expected in each of its cells.
POSITION_DECKS = MIN_EXPECTED * DECK
#: Bins of ``|d|`` the position-change test counts in.
CHANGE_BINS = 13
#: Consecutive pairs the position-change test needs: its statistic's law is a limit, and below
#: this many pairs a fair shuffler's p-values are not yet close enough to uniform
#: (benchmarks/shuffler_audit.py measures them).
CHANGE_PAIRS = 40
#: Decks the suit-run test needs: each pooled bin then expects at least 5.
SUIT_DECKS = POSITION_DECKS
#: The p-value tests of one shuffler: the Bonferroni factor.
TESTS = ("positions", "changes", "suits")
#: The numbers a tally keeps, in the order it packs them: decks, counts, changes, suits.
_SIZES = (1, DECK * DECK, 2 * DECK - 1, SUITS * (SUIT - 1) + 1)
_ENDS = tuple(itertools.accumulate(_SIZES))
_PACKED = f"<{_ENDS[-1]}I"
#: A packed number is a little-endian 32-bit lane: :func:`joined` adds every lane of two
#: tallies at once while no sum reaches this.
LANE = 1 << 32

Test = Literal["positions", "changes", "suits"]


class DeckError(ValueError):
    """A deck that is not a whole 52-card deck in TSP/1 codes."""


def check_deck(deck: bytes) -> bytes:
    """``deck`` if it holds each of the 52 codes once (DeckError: what is wrong)."""
    if len(deck) != DECK:
        raise DeckError(f"a deck of {len(deck)} cards: the audit takes whole decks of {DECK}")
    if len(set(deck)) != DECK or max(deck) >= DECK:
        raise DeckError("a deck whose cards are not each of the 52 once")
    return bytes(deck)


def suit_pairs(deck: bytes) -> int:
    """Adjacent cards of one suit in ``deck``."""
    return sum(1 for a, b in itertools.pairwise(deck) if a // SUIT == b // SUIT)


def _positions(deck: bytes) -> list[int]:
    """The position of each card (by code) in ``deck``."""
    where = [0] * DECK
    for position, card in enumerate(deck):
        where[card] = position
    return where


@dataclass
class Tally:
    """What the tests read from a run of consecutive decks of one shuffler."""

    decks: int = 0
    #: ``counts[card * 52 + position]``: decks with ``card`` at ``position``.
    counts: list[int] = field(default_factory=lambda: [0] * (DECK * DECK))
    #: ``changes[d + 51]``: cards whose position changed by ``d`` from one deck to the next.
    changes: list[int] = field(default_factory=lambda: [0] * (2 * DECK - 1))
    #: ``suits[x]``: decks with ``x`` adjacent pairs of one suit.
    suits: list[int] = field(default_factory=lambda: [0] * (SUITS * (SUIT - 1) + 1))
    first: bytes | None = None
    last: bytes | None = None

    @property
    def pairs(self) -> int:
        """Consecutive pairs of decks counted in ``changes``."""
        return max(0, self.decks - 1)

    def add(self, deck: bytes) -> None:
        """Count the next deck (checked: DeckError)."""
        deck = check_deck(deck)
        self._count(deck, 1)
        if self.last is not None:
            self._change(self.last, deck, 1)
        if self.first is None:
            self.first = deck
        self.last = deck
        self.decks += 1

    def _count(self, deck: bytes, sign: int) -> None:
        counts = self.counts
        for position, card in enumerate(deck):
            counts[card * DECK + position] += sign
        self.suits[suit_pairs(deck)] += sign

    def _change(self, before: bytes, after: bytes, sign: int) -> None:
        old = _positions(before)
        changes = self.changes
        for position, card in enumerate(after):
            changes[position - old[card] + DECK - 1] += sign

    def merged(self, later: Tally) -> Tally:
        """This run followed by ``later``: the change between its last deck and ``later``'s
        first is counted too."""
        if later.decks == 0:
            return self.copy()
        if self.decks == 0:
            return later.copy()
        out = Tally(
            self.decks + later.decks,
            [a + b for a, b in zip(self.counts, later.counts, strict=True)],
            [a + b for a, b in zip(self.changes, later.changes, strict=True)],
            [a + b for a, b in zip(self.suits, later.suits, strict=True)],
            self.first,
            later.last,
        )
        assert self.last is not None
        assert later.first is not None
        out._change(self.last, later.first, 1)
        return out

    def copy(self) -> Tally:
        """An independent copy."""
        return Tally(
            self.decks, list(self.counts), list(self.changes), list(self.suits), self.first,
            self.last,
        )  # fmt: skip

    # ------------------------------------------------------------------ storage

    def _numbers(self) -> list[int]:
        return [self.decks, *self.counts, *self.changes, *self.suits]

    @classmethod
    def _of(cls, numbers: Sequence[int], first: bytes, last: bytes) -> Tally:
        """The tally of its numbers in :meth:`_numbers`' order, and its first and last deck."""
        return cls(
            numbers[0],
            list(numbers[_ENDS[0] : _ENDS[1]]),
            list(numbers[_ENDS[1] : _ENDS[2]]),
            list(numbers[_ENDS[2] : _ENDS[3]]),
            first,
            last,
        )

    def to_bytes(self) -> bytes:
        """The tally as the store keeps it (zlib over little-endian 32-bit counts)."""
        if self.decks == 0:
            return b""
        assert self.first is not None
        assert self.last is not None
        packed = struct.pack(_PACKED, *self._numbers()) + self.first + self.last
        return zlib.compress(packed, 6)

    @classmethod
    def from_bytes(cls, data: bytes) -> Tally:
        """A tally :meth:`to_bytes` wrote (DeckError: it is not one)."""
        found = _unpacked(data)
        if found is None:
            return cls()
        packed, first, last = found
        return cls._of(struct.unpack(_PACKED, packed), first, last)


def _unpacked(data: bytes) -> tuple[bytes, bytes, bytes] | None:
    """A stored tally's packed numbers, first and last deck (None: the empty tally; DeckError:
    not a stored tally)."""
    if not data:
        return None
    try:
        packed = zlib.decompress(data)
    except zlib.error as exc:
        raise DeckError(f"not a stored tally: {exc}") from None
    size = struct.calcsize(_PACKED)
    if len(packed) != size + 2 * DECK:
        raise DeckError("not a stored tally: its length is wrong")
    first = check_deck(packed[size : size + DECK])
    last = check_deck(packed[size + DECK :])
    return packed[:size], first, last


def joined(runs: Iterable[Tally | bytes]) -> Tally:
    """Consecutive runs of one shuffler's decks, in order, each a tally or one
    :meth:`Tally.to_bytes` wrote, as one tally: what merging them one by one
    (:meth:`Tally.merged`) gives, in one pass (DeckError: a stored one that is not a tally).

    A month of a floor's kept days is thousands of runs, and merging each builds three new lists
    of ~2,900 numbers (1.1 s of the month of 200 tables). Here each run's numbers, packed as
    :meth:`Tally.to_bytes` packs them (32-bit little-endian lanes), are read as one integer and
    the integers added: a lane carries nothing into the next while its sum stays below 2³², and
    no number of a tally exceeds 52 times its decks (a card × position cell counts at most every
    deck, a change bin 52 cards of every pair), so that holds while 52 times all the runs' decks
    does (82 million decks); beyond, the lanes are added one by one. The sums are checked (52
    cells and one suit count a deck, 52 changes a pair): a stored tally that is not one is an
    error, not a wrong p-value. Then the change across each seam, from a run's last deck to the
    next one's first, is counted as :meth:`Tally.merged` counts it."""
    packed: list[bytes | list[int]] = []
    seams: list[tuple[bytes, bytes]] = []
    first: bytes | None = None
    last: bytes | None = None
    decks = 0
    for run in runs:
        if isinstance(run, Tally):
            if run.decks == 0:
                continue
            assert run.first is not None
            assert run.last is not None
            numbers: bytes | list[int] = run._numbers()
            head, tail, size = run.first, run.last, run.decks
        else:
            found = _unpacked(run)
            if found is None:
                continue
            numbers, head, tail = found
            size = int.from_bytes(numbers[:4], "little")
        packed.append(numbers)
        decks += size
        if last is None:
            first = head
        else:
            seams.append((last, head))
        last = tail
    if first is None or last is None:
        return Tally()
    if DECK * decks < LANE:
        total = sum(
            int.from_bytes(p if isinstance(p, bytes) else struct.pack(_PACKED, *p), "little")
            for p in packed
        )
        size = struct.calcsize(_PACKED)
        if total >= 1 << (8 * size):  # a number beyond its bound carried out of the last lane
            raise DeckError("not a stored tally: its numbers do not add up to its decks")
        sums: Sequence[int] = struct.unpack(_PACKED, total.to_bytes(size, "little"))
    else:
        sums = [
            sum(column)
            for column in zip(
                *(struct.unpack(_PACKED, p) if isinstance(p, bytes) else p for p in packed),
                strict=True,
            )
        ]
    out = Tally._of(sums, first, last)
    pairs = out.decks - len(packed)
    if (out.decks, sum(out.counts), sum(out.suits), sum(out.changes)) != (
        decks, DECK * decks, decks, DECK * pairs,
    ):  # fmt: skip
        raise DeckError("not a stored tally: its numbers do not add up to its decks")
    for before, after in seams:
        out._change(before, after, 1)
    return out


def tally(decks: Iterable[bytes]) -> Tally:
    """The tally of ``decks``, in the order given."""
    out = Tally()
    for deck in decks:
        out.add(deck)
    return out


class Window:
    """A tally of the last ``size`` decks only: each deck added beyond them takes the oldest
    out (its counts, and its change to the deck after it)."""

    def __init__(self, size: int) -> None:
        if size < 2:
            raise ValueError(f"a window of at least 2 decks, not {size}")
        self.size = size
        self.tally = Tally()
        self.decks: deque[bytes] = deque()
        self._seen: dict[bytes, int] = {}

    def add(self, deck: bytes) -> None:
        """The next deck of the shuffler."""
        self.tally.add(deck)
        deck = bytes(deck)
        self.decks.append(deck)
        self._seen[deck] = self._seen.get(deck, 0) + 1
        if len(self.decks) > self.size:
            oldest = self.decks.popleft()
            t = self.tally
            t._count(oldest, -1)
            t._change(oldest, self.decks[0], -1)
            t.decks -= 1
            t.first = self.decks[0]
            left = self._seen[oldest] - 1
            if left:
                self._seen[oldest] = left
            else:
                del self._seen[oldest]

    @property
    def repeats(self) -> int:
        """Decks in the window whose order an earlier deck in it had."""
        return len(self.decks) - len(self._seen)


# --------------------------------------------------------------------------- the tests


@dataclass(frozen=True, slots=True)
class Check:
    """One test of one shuffler: its statistic, degrees of freedom and p-value, or why not."""

    test: Test
    decks: int  # the decks the test rests on (``changes``: the consecutive pairs)
    needed: int  # the decks (pairs) it needs before it says anything
    statistic: float | None = None
    df: int | None = None
    p_value: float | None = None  # two-sided; None: not enough decks yet

    @property
    def enough(self) -> bool:
        """Whether the test had the decks it needs."""
        return self.p_value is not None

    @property
    def corrected(self) -> float | None:
        """The p-value times the number of tests (Bonferroni), at most 1."""
        return None if self.p_value is None else min(1.0, len(TESTS) * self.p_value)


def positions_check(t: Tally) -> Check:
    """The card × position table against uniform."""
    n = t.decks
    if n < POSITION_DECKS:
        return Check("positions", n, POSITION_DECKS)
    expected = n / DECK
    pearson = math.fsum((o - expected) ** 2 for o in t.counts) / expected
    statistic = pearson * (DECK - 1) / DECK
    df = (DECK - 1) ** 2
    return Check("positions", n, POSITION_DECKS, statistic, df, chi2_two_sided(statistic, df))


def changes_check(t: Tally) -> Check:
    """The position changes between consecutive decks against their exact law."""
    n = t.pairs
    if n < CHANGE_PAIRS:
        return Check("changes", n, CHANGE_PAIRS)
    ranges = change_bins(DECK, CHANGE_BINS)
    observed = [0] * len(ranges)
    for index, (low, high) in enumerate(ranges):
        for d in range(low, high + 1):
            observed[index] += t.changes[DECK - 1 + d]
            if d:
                observed[index] += t.changes[DECK - 1 - d]
    mean, _ = change_law(DECK, CHANGE_BINS)
    precision = change_precision(DECK, CHANGE_BINS)
    x = [observed[i] - n * mean[i] for i in range(len(ranges) - 1)]
    quadratic = math.fsum(
        x[i] * precision[i][j] * x[j] for i in range(len(x)) for j in range(len(x))
    )
    statistic = max(0.0, quadratic / n)
    df = len(x)
    return Check("changes", n, CHANGE_PAIRS, statistic, df, chi2_two_sided(statistic, df))


def _suit_bins() -> tuple[tuple[tuple[int, int], ...], tuple[float, ...]]:
    law = suit_pairs_law(SUITS, SUIT)
    ranges = pooled_bins(law, Fraction(MIN_EXPECTED, SUIT_DECKS))
    probabilities = tuple(float(sum(law[low : high + 1])) for low, high in ranges)
    return ranges, probabilities


def suits_check(t: Tally) -> Check:
    """The adjacent pairs of one suit in each deck against their exact law."""
    n = t.decks
    if n < SUIT_DECKS:
        return Check("suits", n, SUIT_DECKS)
    ranges, probabilities = _SUIT_BINS
    statistic = 0.0
    for (low, high), p in zip(ranges, probabilities, strict=True):
        observed = sum(t.suits[low : high + 1])
        expected = n * p
        statistic += (observed - expected) ** 2 / expected
    df = len(ranges) - 1
    return Check("suits", n, SUIT_DECKS, statistic, df, chi2_two_sided(statistic, df))


_SUIT_BINS = _suit_bins()


def checks(t: Tally) -> tuple[Check, ...]:
    """Every p-value test of the tally, in :data:`TESTS`' order."""
    return positions_check(t), changes_check(t), suits_check(t)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the audit finds of one shuffler's decks at one level."""

    checks: tuple[Check, ...]
    repeats: int  # decks whose order an earlier deck had
    alpha: float

    @property
    def worst(self) -> Check | None:
        """The test with the smallest corrected p-value (None: no test had enough decks)."""
        done = [c for c in self.checks if c.corrected is not None]
        return min(done, key=lambda c: c.corrected or 0.0) if done else None

    @property
    def failed(self) -> tuple[Check, ...]:
        """The tests whose corrected p-value is below the level."""
        return tuple(c for c in self.checks if c.corrected is not None and c.corrected < self.alpha)

    @property
    def alarm(self) -> bool:
        """Whether the evidence is against the shuffler: a test failed, or an order repeated."""
        return bool(self.failed) or self.repeats > 0


def verdict(t: Tally, alpha: float, repeats: int = 0) -> Verdict:
    """The tests of ``t`` at level ``alpha`` (Bonferroni-corrected over the tests)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"a level between 0 and 1, not {alpha}")
    return Verdict(checks(t), repeats, alpha)


def repeated(decks: Sequence[bytes]) -> int:
    """Decks of ``decks`` whose order an earlier one had."""
    return len(decks) - len(set(map(bytes, decks)))
