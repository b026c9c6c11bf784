"""What a uniform shuffle's statistics are, exactly: the laws the randomness audit compares with.

* **Position change.** For two independent uniform decks of ``k`` cards, a card's position change
  ``d = p₂ - p₁`` is the difference of two independent uniform positions:
  ``P(d) = (k - |d|) / k²`` for ``|d| < k``. The 52 changes of one pair of decks are not
  independent (they are one permutation's: ``σ = π₂ ∘ π₁⁻¹`` is uniform, and the change of the
  card at position ``p`` is ``σ(p) - p``), so their counts are not multinomial. The count of
  changes in a set ``W`` of (from, to) positions is ``⟨W, P⟩`` for the permutation matrix ``P``
  of ``σ``, and for a uniform permutation ``Cov(P_ij, P_lm) = (δ_il - 1/k)(δ_jm - 1/k) / (k - 1)``
  (one line of algebra from ``P(P_ij = 1) = 1/k`` and ``P(P_ij = P_lm = 1) = 1/(k(k-1))``), so
  ``Cov(⟨W_a, P⟩, ⟨W_b, P⟩) = ⟨A W_a A, W_b⟩ / (k - 1)`` with ``A = I - J/k``: the exact
  covariance of the binned counts, computed here. The consecutive pairs of a sequence of
  independent uniform decks are independent (the increments ``σ`` of a random walk on the
  symmetric group are), so the counts over ``n`` pairs have ``n`` times that covariance, and
  their Mahalanobis distance is asymptotically chi-square (the multivariate central limit
  theorem). Its check: the footrule ``Σ|d|`` of one pair has the variance
  ``(k + 1)(2k² + 7) / 45`` Diaconis and Graham (1977) give, and this covariance gives the same.
* **Suit runs.** The number ``X`` of adjacent pairs of the same suit in a deck of ``s`` suits of
  ``m`` cards, exactly: a suit word with ``r_i`` runs of suit ``i`` is a composition of each
  suit's ``m`` cards into ``r_i`` runs (``C(m-1, r_i-1)`` ways) and an arrangement of the runs
  with no two of one suit adjacent (a Smirnov word: ``Σ_k Π_i (-1)^(r_i-k_i) C(r_i-1, k_i-1) ·
  (Σk)! / Π k_i!``), and ``X = s·m - Σ r_i``. Summed with a generating function in integers,
  so the law is exact; ``E[X] = m - 1`` (12 for 52 cards).

References: Knuth, TAOCP vol. 2, 3rd ed., §3.3.1 (the chi-square test) and §3.3.2 (run tests);
NIST SP 800-22 rev. 1a, §2.3 (the runs test: the number of runs of a symbol against its exact
law); Diaconis and Graham, "Spearman's footrule as a measure of disarray", J. R. Stat. Soc. B 39
(1977) 262–268.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction


def change_probability(d: int, k: int) -> Fraction:
    """``P(p₂ - p₁ = d)`` for two independent uniform positions among ``k``."""
    if abs(d) >= k:
        return Fraction(0)
    return Fraction(k - abs(d), k * k)


@functools.cache
def change_bins(k: int, bins: int) -> tuple[tuple[int, int], ...]:
    """``bins`` ranges ``(low, high)`` of ``|d|`` (inclusive), each as near ``1/bins`` of the
    law as whole values allow: narrow near 0, where a weak shuffle's cards stay, wide far off."""
    if not 2 <= bins <= k:
        raise ValueError(f"between 2 and {k} bins of |d|, not {bins}")
    folded = [change_probability(0, k)] + [2 * change_probability(d, k) for d in range(1, k)]
    out: list[tuple[int, int]] = []
    low, total = 0, Fraction(0)
    for d, p in enumerate(folded):
        total += p
        # close a bin at each quantile reached; the last takes what is left
        if total >= Fraction(len(out) + 1, bins) and len(out) < bins - 1:
            out.append((low, d))
            low = d + 1
    out.append((low, k - 1))
    return tuple(out)


def _bin_of(k: int, ranges: Sequence[tuple[int, int]]) -> list[int]:
    """The bin of each ``|d|``, 0 … k-1."""
    out = [0] * k
    for index, (low, high) in enumerate(ranges):
        for d in range(low, high + 1):
            out[d] = index
    return out


@functools.cache
def change_law(k: int, bins: int) -> tuple[tuple[float, ...], tuple[tuple[float, ...], ...]]:
    """The mean count of each bin of ``|d|`` for one pair of uniform decks, and their exact
    covariance matrix (see the module's docstring)."""
    ranges = change_bins(k, bins)
    bin_of = _bin_of(k, ranges)
    g = len(ranges)
    cells = [0] * g  # |W_a|: the (from, to) pairs in each bin
    rows = [[0] * k for _ in range(g)]  # row sums of W_a (= its column sums, by symmetry)
    for p in range(k):
        for q in range(k):
            a = bin_of[abs(q - p)]
            cells[a] += 1
            rows[a][p] += 1
    mean = tuple(c / k for c in cells)
    # ⟨A W_a A, W_b⟩ = ⟨W_a, W_b⟩ - (⟨W_a, J W_b⟩ + ⟨W_a, W_b J⟩)/k + |W_a||W_b|/k², and
    # ⟨W_a, J W_b⟩ = Σ_q colsum_a(q) colsum_b(q), ⟨W_a, W_b J⟩ = Σ_p rowsum_a(p) rowsum_b(p)
    cov = []
    for a in range(g):
        line = []
        for b in range(g):
            inner = cells[a] if a == b else 0
            margins = 2 * sum(x * y for x, y in zip(rows[a], rows[b], strict=True))
            value = inner - margins / k + cells[a] * cells[b] / (k * k)
            line.append(value / (k - 1))
        cov.append(tuple(line))
    return mean, tuple(cov)


@functools.cache
def change_precision(k: int, bins: int) -> tuple[tuple[float, ...], ...]:
    """The inverse of the covariance of the first ``bins - 1`` bins (the last is what the others
    leave: every pair's counts sum to ``k``)."""
    _, cov = change_law(k, bins)
    return invert([list(row[:-1]) for row in cov[:-1]])


def invert(matrix: Sequence[Sequence[float]]) -> tuple[tuple[float, ...], ...]:
    """The inverse of a small symmetric positive definite matrix (Gauss–Jordan, pivoting)."""
    n = len(matrix)
    work = [
        [*map(float, row), *(1.0 if i == j else 0.0 for j in range(n))]
        for i, row in enumerate(matrix)
    ]
    for column in range(n):
        pivot = max(range(column, n), key=lambda r: abs(work[r][column]))
        if abs(work[pivot][column]) < 1e-12:
            raise ValueError("the matrix is singular")
        work[column], work[pivot] = work[pivot], work[column]
        head = work[column][column]
        work[column] = [v / head for v in work[column]]
        for r in range(n):
            if r != column and work[r][column] != 0.0:
                factor = work[r][column]
                work[r] = [v - factor * w for v, w in zip(work[r], work[column], strict=True)]
    return tuple(tuple(row[n:]) for row in work)


@functools.cache
def suit_pairs_law(suits: int, size: int) -> tuple[Fraction, ...]:
    """``P(X = x)`` for ``x = 0 … suits·(size-1)``: ``X`` the adjacent pairs of one suit in a
    uniformly shuffled deck of ``suits`` suits of ``size`` cards (see the module's docstring)."""
    if suits < 1 or size < 1:
        raise ValueError("a deck needs at least one suit of at least one card")
    scale = math.factorial(size)
    # one suit's generating polynomial, times size!: {(runs r, letters k): coefficient}
    one: dict[tuple[int, int], int] = {}
    for r in range(1, size + 1):
        for k in range(1, r + 1):
            sign = -1 if (r - k) % 2 else 1
            value = (
                sign
                * math.comb(size - 1, r - 1)
                * math.comb(r - 1, k - 1)
                * (scale // math.factorial(k))
            )
            one[(r, k)] = value
    power: dict[tuple[int, int], int] = {(0, 0): 1}
    for _ in range(suits):
        nxt: dict[tuple[int, int], int] = {}
        for (r1, k1), v1 in power.items():
            for (r2, k2), v2 in one.items():
                key = (r1 + r2, k1 + k2)
                nxt[key] = nxt.get(key, 0) + v1 * v2
        power = nxt
    n = suits * size
    words_by_runs = [0] * (n + 1)
    for (runs, letters), value in power.items():
        words_by_runs[runs] += math.factorial(letters) * value
    denominator = scale**suits
    total = math.factorial(n) // denominator  # the suit words: n! / (size!)^suits
    law = [Fraction(0)] * (suits * (size - 1) + 1)
    for runs, count in enumerate(words_by_runs):
        if count:
            words, remainder = divmod(count, denominator)
            assert remainder == 0, "the runs' counts are whole numbers"
            law[n - runs] = Fraction(words, total)
    return tuple(law)


def pooled_bins(law: Sequence[Fraction], least: Fraction) -> tuple[tuple[int, int], ...]:
    """Ranges ``(low, high)`` of values pooled from the tails inward so that each bin has at
    least probability ``least`` (Knuth's rule of at least 5 expected in each: ``least = 5/n``
    makes the test usable from ``n`` observations)."""
    values = [x for x, p in enumerate(law) if p > 0]
    if not values:
        raise ValueError("an empty law")
    out: list[tuple[int, int]] = []
    low, mass = values[0], Fraction(0)
    for x in range(values[0], values[-1] + 1):
        mass += law[x]
        if mass >= least:
            out.append((low, x))
            low, mass = x + 1, Fraction(0)
    if mass > 0 or low <= values[-1]:  # a right tail short of ``least`` joins the bin before
        if out:
            out[-1] = (out[-1][0], values[-1])
        else:
            out.append((values[0], values[-1]))
    return tuple(out)
