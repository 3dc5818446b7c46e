"""Accounting: exact arithmetic, composition theorems, conversions, posterior bounds."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

import dpframe as dpf
from dpframe.core.accounting import (
    SIGNIFICANT_DIGITS,
    PrivacyCost,
    advanced_composition,
    basic_composition,
    group_privacy,
    poisson_subsampling,
    posterior_bound,
    posterior_lower_bound,
    round_up,
    session_spend,
    to_fraction,
    validate_delta,
    validate_epsilon,
    zcdp_rho_for_epsilon,
    zcdp_to_approx_dp,
)
from dpframe.errors import ValidationError

eps_st = st.floats(min_value=1e-6, max_value=20, allow_nan=False, allow_infinity=False)
small_eps_st = st.floats(min_value=1e-6, max_value=3, allow_nan=False, allow_infinity=False)
delta_st = st.floats(min_value=1e-15, max_value=0.5, allow_nan=False, allow_infinity=False)
rho_st = st.floats(min_value=1e-8, max_value=50, allow_nan=False, allow_infinity=False)
prior_st = st.floats(min_value=0, max_value=1, allow_nan=False, allow_infinity=False)


# ---- exact conversion ---------------------------------------------------------------------


def test_floats_convert_through_their_decimal_repr() -> None:
    assert to_fraction(0.01, "epsilon") == Fraction(1, 100)
    assert to_fraction(0.1, "epsilon") == Fraction(1, 10)
    assert to_fraction(1e-6, "delta") == Fraction(1, 10**6)
    assert to_fraction(np.float64(0.3), "x") == Fraction(3, 10)
    assert to_fraction(np.float32(0.01), "x") == Fraction(1, 100)
    assert to_fraction(np.int64(3), "x") == 3
    assert to_fraction(Decimal("0.25"), "x") == Fraction(1, 4)
    assert to_fraction(Fraction(1, 3), "x") == Fraction(1, 3)


def test_hundred_charges_of_a_hundredth_fill_one_exactly() -> None:
    total = sum((to_fraction(0.01, "e") for _ in range(100)), Fraction(0))
    assert total == 1
    assert total + to_fraction(0.01, "e") > 1
    assert basic_composition([PrivacyCost(0.01)] * 100).epsilon == 1


@pytest.mark.parametrize(
    "bad", [True, False, np.bool_(True), "1", b"1", None, complex(1, 1), math.nan, math.inf,
            -math.inf, -0.5, Decimal("NaN"), Decimal("Infinity"), [1.0], np.float64("nan")]
)
def test_bad_numbers_are_typed_errors(bad: object) -> None:
    with pytest.raises(ValidationError):
        to_fraction(bad, "epsilon")


def test_epsilon_and_delta_ranges() -> None:
    for bad in (0, 0.0, -1e-9):
        with pytest.raises(ValidationError, match="epsilon"):
            validate_epsilon(bad)
    for bad in (1, 1.0, 1.5, -1e-12):
        with pytest.raises(ValidationError, match="delta"):
            validate_delta(bad)
    assert validate_delta(0) == 0
    assert validate_epsilon(2) == 2


def test_cost_is_frozen_and_exact() -> None:
    c = PrivacyCost(0.1, 1e-7)
    assert c.epsilon == Fraction(1, 10) and c.delta == Fraction(1, 10**7) and c.rho is None
    with pytest.raises(AttributeError):
        c.epsilon = Fraction(1)  # type: ignore[misc]
    with pytest.raises(ValidationError):
        PrivacyCost(float("nan"))
    with pytest.raises(ValidationError):
        PrivacyCost(1, 2)


def test_round_up_rule() -> None:
    x = Fraction(1, 3)
    r = round_up(x)
    assert r >= x and r - x < Fraction(1, 10**SIGNIFICANT_DIGITS)
    assert round_up(Fraction(1, 4)) == Fraction(1, 4)


# ---- composition --------------------------------------------------------------------------


cost_st = st.builds(
    PrivacyCost,
    st.fractions(min_value=0, max_value=5, max_denominator=10**6),
    st.fractions(min_value=0, max_value=Fraction(1, 100), max_denominator=10**9),
)


@given(st.lists(cost_st, max_size=30), cost_st)
def test_basic_composition_is_the_exact_sum_and_monotone(costs: list[PrivacyCost],
                                                         extra: PrivacyCost) -> None:
    c = basic_composition(costs)
    assert c.epsilon == sum((x.epsilon for x in costs), Fraction(0))
    assert c.delta == min(sum((x.delta for x in costs), Fraction(0)), Fraction(1))
    more = basic_composition([*costs, extra])
    assert more.epsilon >= c.epsilon and more.delta >= c.delta
    for x in costs:
        assert c.epsilon >= x.epsilon


def test_basic_composition_keeps_rho_only_when_all_are_zcdp() -> None:
    a = PrivacyCost(1, Fraction(1, 10**6), Fraction(1, 10))
    b = PrivacyCost(1, Fraction(1, 10**6), Fraction(1, 5))
    assert basic_composition([a, b]).rho == Fraction(3, 10)
    assert basic_composition([a, PrivacyCost(1)]).rho is None
    assert basic_composition([]).epsilon == 0


def _cks_float(rho: float, delta: float) -> float:
    """Independent evaluation of the CKS 2020 conversion by scipy minimisation."""

    def f(log_am1: float) -> float:
        a = 1 + math.exp(log_am1)
        return a * rho - math.log(a * delta) / (a - 1) + math.log1p(-1 / a)

    res = optimize.minimize_scalar(f, bounds=(-30, 40), method="bounded",
                                   options={"xatol": 1e-12})
    return max(0.0, float(res.fun))


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.125, 0.5, 2.0, 10.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-6, 1e-3])
def test_zcdp_conversion_matches_independent_minimisation(rho: float, delta: float) -> None:
    ours = zcdp_to_approx_dp(rho, delta)
    ref = _cks_float(rho, delta)
    assert float(ours) == pytest.approx(ref, rel=1e-9)
    # never better than Bun-Steinke's weaker closed form would allow a tight method to be worse
    assert float(ours) <= rho + 2 * math.sqrt(rho * math.log(1 / delta))


def _gaussian_delta(sigma: float, eps: float) -> float:
    """Exact delta of the continuous Gaussian mechanism, sensitivity 1 (Balle & Wang 2018)."""
    a = 1 / (2 * sigma) - eps * sigma
    b = -1 / (2 * sigma) - eps * sigma
    return float(stats.norm.cdf(a) - math.exp(eps) * stats.norm.cdf(b))


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 5.0, 20.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5])
def test_zcdp_conversion_is_sound_and_close_to_optimal_for_the_gaussian(sigma: float,
                                                                        delta: float) -> None:
    rho = 1 / (2 * sigma**2)  # the Gaussian with sensitivity 1 is rho-zCDP (Bun-Steinke)
    eps = float(zcdp_to_approx_dp(rho, delta))
    assert _gaussian_delta(sigma, eps) <= delta * (1 + 1e-9)  # sound
    # the optimal epsilon for the Gaussian is not much smaller (conversion is tight)
    opt = optimize.brentq(lambda e: _gaussian_delta(sigma, e) - delta, 1e-9, 2 * eps + 10)
    assert eps <= opt * 1.35


def test_zcdp_known_value() -> None:
    # rho = 0.5, delta = 1e-6: CKS gives ~5.2215, Bun-Steinke's closed form 5.7565
    assert float(zcdp_to_approx_dp(0.5, 1e-6)) == pytest.approx(5.22153444, abs=1e-7)
    assert zcdp_to_approx_dp(0, 1e-6) == 0
    with pytest.raises(ValidationError):
        zcdp_to_approx_dp(0.5, 0)
    with pytest.raises(ValidationError):
        zcdp_to_approx_dp(-0.1, 1e-6)


@settings(max_examples=30, deadline=None)
@given(rho_st, rho_st, delta_st)
def test_zcdp_conversion_monotone_in_rho(r1: float, r2: float, delta: float) -> None:
    lo, hi = sorted((r1, r2))
    assert zcdp_to_approx_dp(lo, delta) <= zcdp_to_approx_dp(hi, delta)


@settings(max_examples=30, deadline=None)
@given(rho_st, delta_st, delta_st)
def test_zcdp_conversion_decreasing_in_delta(rho: float, d1: float, d2: float) -> None:
    lo, hi = sorted((d1, d2))
    assert zcdp_to_approx_dp(rho, hi) <= zcdp_to_approx_dp(rho, lo)


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-7), (1.0, 1e-6), (4.0, 1e-9)])
def test_rho_calibration_fits_and_is_nearly_maximal(eps: float, delta: float) -> None:
    rho = zcdp_rho_for_epsilon(eps, delta)
    assert zcdp_to_approx_dp(rho, delta) <= Fraction(str(eps))
    assert zcdp_to_approx_dp(rho * Fraction(1001, 1000), delta) > Fraction(str(eps))


@settings(max_examples=60, deadline=None)
@given(small_eps_st, st.integers(1, 10_000), delta_st)
def test_advanced_composition_formula_and_monotone(eps: float, k: int, dprime: float) -> None:
    c = advanced_composition(eps, 1e-9, k, dprime)
    ref = math.sqrt(2 * k * math.log(1 / dprime)) * eps + k * eps * math.expm1(eps)
    assert float(c.epsilon) == pytest.approx(ref, rel=1e-12)
    assert c.epsilon >= Fraction(ref) * (1 - Fraction(1, 10**14))
    assert c.delta == k * Fraction(1, 10**9) + Fraction(repr(dprime))
    assert advanced_composition(eps, 1e-9, k + 1, dprime).epsilon >= c.epsilon
    assert advanced_composition(eps * 1.5, 1e-9, k, dprime).epsilon >= c.epsilon


def test_advanced_composition_published_example() -> None:
    # Dwork & Roth 2014 §3.5.2 style: k = 10 runs at eps = 0.1, delta' = 1e-6
    c = advanced_composition(0.1, 0, 10, 1e-6)
    assert float(c.epsilon) == pytest.approx(1.7674290543, abs=1e-9)
    assert c.delta == Fraction(1, 10**6)
    with pytest.raises(ValidationError):
        advanced_composition(0.1, 0, 0, 1e-6)
    with pytest.raises(ValidationError):
        advanced_composition(0.1, 0, 3, 0)


@settings(max_examples=100, deadline=None)
@given(eps_st, st.floats(0, 1), st.floats(0, 1))
def test_poisson_subsampling(eps: float, q1: float, q2: float) -> None:
    lo, hi = sorted((q1, q2))
    a = poisson_subsampling(eps, 1e-8, lo)
    b = poisson_subsampling(eps, 1e-8, hi)
    assert a.epsilon <= b.epsilon <= Fraction(repr(eps))
    ref = math.log1p(hi * math.expm1(eps))
    assert float(b.epsilon) == pytest.approx(ref, rel=1e-12, abs=1e-55)
    assert b.delta == Fraction(repr(hi)) * Fraction(1, 10**8)


def test_poisson_subsampling_edges() -> None:
    assert poisson_subsampling(1.0, 1e-6, 1).epsilon == 1
    assert poisson_subsampling(1.0, 1e-6, 0).epsilon == 0
    assert float(poisson_subsampling(1.0, 0, 0.01).epsilon) == pytest.approx(
        math.log(1 + 0.01 * (math.e - 1)))
    with pytest.raises(ValidationError):
        poisson_subsampling(1.0, 0, 1.5)


@settings(max_examples=60, deadline=None)
@given(small_eps_st, delta_st, st.integers(1, 20))
def test_group_privacy(eps: float, delta: float, k: int) -> None:
    c = group_privacy(eps, delta, k)
    assert c.epsilon == k * Fraction(repr(eps))
    ref = k * math.exp((k - 1) * eps) * delta
    assert float(c.delta) == pytest.approx(min(ref, 1.0), rel=1e-12)
    assert c.delta >= min(Fraction(ref) * (1 - Fraction(1, 10**13)), Fraction(1))


# ---- posterior ----------------------------------------------------------------------------


def test_posterior_bound_published_example() -> None:
    assert dpf.posterior_bound(1.0, 0.5) == pytest.approx(0.7310585786)  # 50% -> 73% at eps 1
    assert posterior_lower_bound(1.0, 0.5) == pytest.approx(1 - 0.7310585786)
    assert posterior_bound(0.0, 0.3) == pytest.approx(0.3)
    assert posterior_bound(5000, 0.5) == pytest.approx(1.0)
    assert posterior_lower_bound(5000, 0.5) == pytest.approx(0.0)
    for bad in (1.5, -0.1, float("nan"), "0.5"):
        with pytest.raises(ValidationError):
            posterior_bound(1.0, bad)


@given(eps_st, prior_st)
def test_posterior_bound_formula_and_order(eps: float, p: float) -> None:
    hi = posterior_bound(eps, p)
    lo = posterior_lower_bound(eps, p)
    e = math.exp(eps)
    assert hi == pytest.approx(p * e / (1 + p * (e - 1)), rel=1e-9, abs=1e-12)
    assert lo == pytest.approx(p / (p + (1 - p) * e), rel=1e-9, abs=1e-12)
    assert lo <= p + 1e-12 and p <= hi + 1e-12
    assert posterior_bound(eps * 2, p) >= hi - 1e-12


# ---- session spend ------------------------------------------------------------------------


def test_session_spend_rule() -> None:
    d = Fraction(1, 10**7)
    rho = zcdp_rho_for_epsilon(0.2, 1e-7)
    g = PrivacyCost(Fraction(1, 5), d, rho)
    lap = PrivacyCost(Fraction(1, 10))
    one = session_spend([g, lap])
    # one Gaussian: its zCDP conversion (rho was calibrated to fit 0.2) or its own 0.2
    assert one.epsilon == Fraction(1, 10) + min(zcdp_to_approx_dp(rho, d), Fraction(1, 5))
    assert one.epsilon <= Fraction(3, 10) and one.delta == d
    many = session_spend([g] * 10 + [lap])
    assert many.delta == 10 * d
    zc = zcdp_to_approx_dp(10 * rho, 10 * d)
    assert many.epsilon == Fraction(1, 10) + min(zc, Fraction(2))
    assert many.epsilon < Fraction(1, 10) + 2  # zCDP beats basic composition here
    assert session_spend([]).epsilon == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(cost_st, max_size=15))
def test_session_spend_equals_basic_without_gaussians(costs: list[PrivacyCost]) -> None:
    assert session_spend(costs).epsilon == basic_composition(costs).epsilon
