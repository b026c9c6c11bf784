"""The chi-square distribution's tails, from the regularised incomplete gamma function.

A chi-square variable with ``df`` degrees of freedom is a gamma variable of shape ``df / 2`` and
scale 2, so ``P(X ≤ x) = P(df/2, x/2)`` and ``P(X ≥ x) = Q(df/2, x/2)``, where ``P`` and
``Q = 1 - P`` are the regularised incomplete gamma functions (NIST DLMF §8.2, eq. 8.2.4).
``P`` is summed from its power series where ``x < a + 1`` (DLMF 8.7.1 / 8.11.4) and ``Q`` from
its continued fraction elsewhere (DLMF 8.9.2), evaluated by the modified Lentz method (Press et
al., *Numerical Recipes*, 3rd ed., §6.2 and §5.2): each side is computed directly where it is
small, so a p-value of 1e-300 is not lost to ``1 - 0.999…``. No SciPy: the pit has no numeric
dependency, and these few lines are tested against closed forms (tests/pit/test_chi_square.py).
"""

from __future__ import annotations

import math

#: Relative precision the series and the continued fraction stop at.
_EPSILON = 1e-15
#: Stands in for zero in the Lentz recurrence (it divides by its terms).
_TINY = 1e-300
#: Terms tried before a result is declared not found (never met for the shapes used here:
#: a shape of 1300 needs about 400).
_MAX_TERMS = 100_000


def _prefactor(a: float, x: float) -> float:
    """``x^a e^-x / Γ(a)``, in logarithms (Γ(1300) overflows a float)."""
    return math.exp(a * math.log(x) - x - math.lgamma(a))


def _p_series(a: float, x: float) -> float:
    """``P(a, x)`` by its series ``x^a e^-x Σ x^n / Γ(a + n + 1)`` (x < a + 1)."""
    term = 1.0 / a
    total = term
    denominator = a
    for _ in range(_MAX_TERMS):
        denominator += 1.0
        term *= x / denominator
        total += term
        if abs(term) < abs(total) * _EPSILON:
            return total * _prefactor(a, x)
    raise ArithmeticError(f"the series of P({a}, {x}) did not converge")


def _q_continued_fraction(a: float, x: float) -> float:
    """``Q(a, x)`` by its continued fraction (x ≥ a + 1), modified Lentz."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < _TINY:
            d = _TINY
        c = b + an / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPSILON:
            return h * _prefactor(a, x)
    raise ArithmeticError(f"the continued fraction of Q({a}, {x}) did not converge")


def gamma_p(a: float, x: float) -> float:
    """The regularised lower incomplete gamma function ``P(a, x)`` (a > 0, x ≥ 0)."""
    _check(a, x)
    if x == 0.0:
        return 0.0
    if x < a + 1.0:
        return min(1.0, _p_series(a, x))
    return max(0.0, 1.0 - _q_continued_fraction(a, x))


def gamma_q(a: float, x: float) -> float:
    """The regularised upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    _check(a, x)
    if x == 0.0:
        return 1.0
    if x < a + 1.0:
        return max(0.0, 1.0 - _p_series(a, x))
    return min(1.0, _q_continued_fraction(a, x))


def chi2_sf(statistic: float, df: int) -> float:
    """``P(X ≥ statistic)`` for X chi-square with ``df`` degrees of freedom: the upper tail."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    return gamma_q(df / 2.0, max(0.0, statistic) / 2.0)


def chi2_cdf(statistic: float, df: int) -> float:
    """``P(X ≤ statistic)``: the lower tail."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    return gamma_p(df / 2.0, max(0.0, statistic) / 2.0)


def chi2_two_sided(statistic: float, df: int) -> float:
    """Twice the smaller tail (at most 1): a fit too good to be true is as suspect as a bad one
    (Knuth, TAOCP vol. 2, 3rd ed., §3.3.1 B: reject below the 1 % point as above the 99 %)."""
    return min(1.0, 2.0 * min(chi2_sf(statistic, df), chi2_cdf(statistic, df)))


def _check(a: float, x: float) -> None:
    if not (a > 0.0 and math.isfinite(a)):
        raise ValueError(f"the shape must be positive and finite, not {a}")
    if not (x >= 0.0 and math.isfinite(x)):
        raise ValueError(f"x must be non-negative and finite, not {x}")
