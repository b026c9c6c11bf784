"""The chi-square tails of the shuffler audit (controller/pit/reports/chi_square.py) against
closed forms: ``df = 2`` is an exponential, ``df = 1`` a normal's square, and an even ``df`` a
Poisson sum, exact in logarithms however large."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.pit.reports.chi_square import (
    chi2_cdf,
    chi2_sf,
    chi2_two_sided,
    gamma_p,
    gamma_q,
)


def _poisson(x: float, terms: range) -> float:
    half = x / 2
    logs = [j * math.log(half) - half - math.lgamma(j + 1) for j in terms]
    top = max(logs)
    return math.exp(top) * math.fsum(math.exp(v - top) for v in logs)


def poisson_sf(x: float, df: int) -> float:
    """``P(χ²_df ≥ x)`` for an even ``df``: ``P(Poisson(x/2) < df/2)``, summed in logarithms."""
    assert df % 2 == 0
    return _poisson(x, range(df // 2))


def poisson_cdf(x: float, df: int) -> float:
    """``P(χ²_df ≤ x)``: ``P(Poisson(x/2) ≥ df/2)``, its terms summed until they vanish."""
    assert df % 2 == 0
    return _poisson(x, range(df // 2, df // 2 + int(x) + 2000))


@pytest.mark.parametrize("x", [0.01, 0.5, 1.0, 3.0, 10.0, 60.0, 700.0])
def test_two_degrees_of_freedom_is_an_exponential(x: float) -> None:
    assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-12)
    assert chi2_cdf(x, 2) == pytest.approx(-math.expm1(-x / 2), rel=1e-12)


@pytest.mark.parametrize("x", [0.001, 0.3, 1.0, 3.84, 10.83, 50.0])
def test_one_degree_of_freedom_is_a_normal_squared(x: float) -> None:
    assert chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-10)


@pytest.mark.parametrize(
    ("df", "x"),
    [(12, 5.0), (12, 26.217), (26, 13.0), (2602, 2300.0), (2602, 2601.0), (2602, 2900.0)],
)
def test_even_degrees_of_freedom_are_a_poisson_sum(df: int, x: float) -> None:
    assert chi2_sf(x, df) == pytest.approx(poisson_sf(x, df), rel=1e-9)
    assert chi2_cdf(x, df) == pytest.approx(poisson_cdf(x, df), rel=1e-9)


def test_the_far_tail_is_computed_not_lost_to_one_minus_almost_one() -> None:
    # P(χ²_10 ≥ 1000) ≈ 1e-209: 1 - P would be 0.0
    assert chi2_sf(1000.0, 10) == pytest.approx(poisson_sf(1000.0, 10), rel=1e-9)
    assert 0 < chi2_sf(1000.0, 10) < 1e-200
    # the lower tail of a large df far below its mean
    assert 0 < chi2_cdf(1800.0, 2602) < 1e-20


def test_the_published_critical_points() -> None:
    # 95 % and 99 % points of chi-square (standard tables: NIST/SEMATECH e-Handbook 1.3.6.7.4)
    assert chi2_sf(18.307, 10) == pytest.approx(0.05, abs=2e-5)
    assert chi2_sf(124.342, 100) == pytest.approx(0.05, abs=2e-5)
    assert chi2_sf(26.217, 12) == pytest.approx(0.01, abs=2e-5)
    assert chi2_sf(6.635, 1) == pytest.approx(0.01, abs=2e-5)


def test_two_sided_doubles_the_smaller_tail() -> None:
    assert chi2_two_sided(26.217, 12) == pytest.approx(0.02, abs=4e-5)
    low = chi2_cdf(3.571, 12)  # the 1 % lower point
    assert low == pytest.approx(0.01, abs=2e-5)
    assert chi2_two_sided(3.571, 12) == pytest.approx(2 * low)
    assert chi2_two_sided(12.0, 12) <= 1.0


@given(
    a=st.floats(min_value=0.5, max_value=2000.0),
    x=st.floats(min_value=0.0, max_value=5000.0),
)
def test_p_and_q_are_probabilities_that_add_up_to_one(a: float, x: float) -> None:
    p, q = gamma_p(a, x), gamma_q(a, x)
    assert 0.0 <= p <= 1.0
    assert 0.0 <= q <= 1.0
    assert p + q == pytest.approx(1.0, abs=1e-12)


@given(df=st.integers(min_value=1, max_value=3000), x=st.floats(min_value=0, max_value=4000))
def test_the_upper_tail_falls_as_the_statistic_grows(df: int, x: float) -> None:
    assert chi2_sf(x + 1.0, df) <= chi2_sf(x, df)


def test_nonsense_is_refused() -> None:
    with pytest.raises(ValueError, match="degrees of freedom"):
        chi2_sf(1.0, 0)
    with pytest.raises(ValueError, match="shape"):
        gamma_q(0.0, 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        gamma_p(1.0, -1.0)
    with pytest.raises(ValueError, match="non-negative"):
        gamma_p(1.0, math.nan)
