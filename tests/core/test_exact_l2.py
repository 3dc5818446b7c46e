"""Exact L2 sensitivities of unit-level Gaussian releases (issue 47, item 2).

A unit in at most k groups with at most R rows in each moves a grouped count by ``sqrt(k) R``
in L2 (``sqrt(q R**2 + r**2)`` when T = q R + r binds). An integer release kept that norm
rounded up to an integer (``sqrt(10)`` became 4: sigma 16.93 at (1, 1e-6) for T = 10 and
R = 1); the discrete Gaussian's guarantees hold for any real bound on the norm of the integer
shift, so the norm is now kept as it is: sigma 13.40, the analytic Gaussian at ``sqrt(10)``
(13.36, continuous) plus the lattice's proven correction.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld

import dpframe as dpf
from dpframe.core.noise.gaussian import analytic_sigma2
from dpframe.core.noise.mechanisms import noise_spec
from dpframe.core.noise.rng import InsecureSeedWarning
from dpframe.core.sensitivity import (
    _moved,
    change_one_square_sum,
    contribution,
    count_sensitivity,
    sum_sensitivity,
)

EPS, DELTA = 1.0, 1e-6


def _accounting_delta(sigma: float, sens: float, eps: float = EPS) -> float:
    """dp_accounting's delta at ``eps`` of the continuous Gaussian (its PLD, pessimistic)."""
    d = pld.from_gaussian_mechanism(sigma, sensitivity=sens, value_discretization_interval=1e-4)
    return float(d.get_delta_for_epsilon(eps))


@functools.cache
def _accounting_sigma(sens: float) -> float:
    """The least continuous sigma dp_accounting accepts at (EPS, DELTA) (bisection; at (1,
    1e-6) the analytic Gaussian's sigma / sensitivity is 4.22)."""
    lo, hi = 4.0 * sens, 4.5 * sens
    assert _accounting_delta(lo, sens) > DELTA >= _accounting_delta(hi, sens)
    for _ in range(14):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _accounting_delta(mid, sens) <= DELTA else (mid, hi)
    return hi


def _count_plan(n_keys: int = 20, **bounds: int) -> dict[str, object]:
    df = pd.DataFrame({"u": np.arange(100) % 10, "g": np.arange(100) % n_keys})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureSeedWarning)
        s = dpf.Session(10.0, 1e-3, seed=1)
    m: dict[str, object] = df.dp(s, privacy_unit="u", keys={"g": list(range(n_keys))},
                                 **bounds).explain("count", by="g", epsilon=EPS, delta=DELTA,
                                                   mechanism="gaussian")["measures"][0]
    return m


def test_gaussian_count_sigma_is_the_analytic_gaussian_at_sqrt_k_r() -> None:
    """T = 10, R = 1 (k = 10): L2 sqrt(10); sigma within 0.5% of dp_accounting's continuous
    optimum (13.36) and >= it (the lattice only adds), where rounding the norm up to 4 gave
    16.93 (+27%)."""
    m = _count_plan(max_rows_per_unit=10, max_rows_per_group=1)
    assert float(m["sensitivity"]) == pytest.approx(math.sqrt(10), rel=1e-8)  # type: ignore[arg-type]
    sigma = float(m["noise_scale"])  # type: ignore[arg-type]
    best = _accounting_sigma(math.sqrt(10))
    assert best == pytest.approx(13.36, abs=0.01)
    assert best <= sigma <= 1.005 * best
    # dp_accounting agrees that this sigma is (1, 1e-6) at the exact sensitivity, and that the
    # sensitivity matters: at 4 it would not be
    assert _accounting_delta(sigma, math.sqrt(10)) <= DELTA
    assert _accounting_delta(sigma, 4.0) > DELTA
    # the plan's sigma is the proven discrete calibration at exactly that norm (the block
    # planner's rho search lands within 1e-5 of it)
    want = analytic_sigma2(Fraction(1), Fraction(1, 10**6), noise_spec(
        "gaussian", Fraction(m["sensitivity"]), Fraction(1), Fraction(1, 10**6),  # type: ignore[arg-type]
        integer=True).int_sensitivity)
    assert want is not None and sigma == pytest.approx(math.sqrt(float(want)), rel=1e-4)


@pytest.mark.parametrize("bounds,l2", [
    ({"max_rows_per_unit": 12, "max_groups_per_unit": 4, "max_rows_per_group": 3}, 6.0),
    ({"max_rows_per_unit": 7, "max_groups_per_unit": 4, "max_rows_per_group": 3},
     math.sqrt(9 + 9 + 1)),
    ({"max_rows_per_unit": 10}, 10.0),  # T alone: all T rows may sit in one group
])
def test_count_l2_is_exact_and_not_rounded(bounds: dict[str, int], l2: float) -> None:
    m = _count_plan(**bounds)
    assert float(m["sensitivity"]) == pytest.approx(l2, rel=1e-8)  # type: ignore[arg-type]
    spec = noise_spec("gaussian", Fraction(m["sensitivity"]), Fraction(1),  # type: ignore[arg-type]
                      Fraction(1, 10**6), integer=True)
    assert float(spec.int_sensitivity) == pytest.approx(l2, rel=1e-8)
    assert float(m["noise_scale"]) <= 1.005 * _accounting_sigma(l2)  # type: ignore[arg-type]


def test_integer_gaussian_sum_keeps_its_l2() -> None:
    """An integer column's grouped sum, bounds (0, 5), k = 3, R = 1: L2 5 sqrt(3) = 8.66 (9
    before); a Laplace release still rounds its (integer) L1 up."""
    c = contribution(3, None, 1, grouped=True)
    s = sum_sensitivity("add_remove", Fraction(0), Fraction(5), c, True)
    g = noise_spec("gaussian", s.l2, Fraction(1), Fraction(1, 10**6), integer=True)
    assert float(g.int_sensitivity) == pytest.approx(5 * math.sqrt(3), rel=1e-8)
    lap = noise_spec("laplace", Fraction(21, 2), Fraction(1), integer=True)
    assert lap.int_sensitivity == 11


def test_released_noise_has_the_exact_sigma() -> None:
    """2,000 public keys no row holds: the released counts are the noise. Their sample sd
    matches the stated 13.40 within 5 standard errors (1/sqrt(2n) relative: 7.9%), and the
    rounded norm's 16.93 is told apart."""
    n = 2000
    df = pd.DataFrame({"u": [0], "g": [-1]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(1e6, 0.5, seed=47)
        out = df.dp(s, privacy_unit="u", keys={"g": list(range(n))}, max_rows_per_unit=10,
                    max_rows_per_group=1).groupby("g").count(epsilon=EPS, delta=DELTA,
                                                             mechanism="gaussian",
                                                             postprocess=None)  # raw noise
    stated = out.attrs["dp"]["measures"][0]["noise_scale"]
    assert stated < 13.45
    sd = float(np.std(out.to_numpy(dtype=np.float64), ddof=1))
    tol = 5 / math.sqrt(2 * n)
    assert abs(sd / stated - 1) <= tol
    assert abs(sd / 16.93 - 1) > tol


def _brute(c: object, width: Fraction, m: Fraction, groups: int) -> Fraction:
    """The largest sum of squared group moves over every pair of old and new rows per group."""
    vecs = [v for v in itertools.product(range(c.rows_per_group + 1), repeat=groups)  # type: ignore[attr-defined]
            if sum(v) <= c.cap and sum(1 for x in v if x) <= c.groups_per_unit]  # type: ignore[attr-defined]
    return max(sum((_moved(a, b, width, m) ** 2 for a, b in zip(x, y, strict=True)),
                   Fraction(0)) for x in vecs for y in vecs)


@pytest.mark.parametrize("tkr", [(None, 2, 2), (3, 2, 2), (5, 2, 3), (2, 2, 1), (3, 2, 3)])
@pytest.mark.parametrize("lo,hi", [(0, 1), (-1, 3), (100, 101), (-5, -2)])
def test_change_one_sum_l2_is_the_exact_supremum(tkr: tuple[int | None, int, int], lo: int,
                                                 hi: int) -> None:
    """change_one's grouped-sum L2 against brute force over every old and new unit (2k
    groups): equal, so sound and attained."""
    c = contribution(*tkr, grouped=True)
    width, m = Fraction(hi - lo), Fraction(max(abs(lo), abs(hi)))
    exact = change_one_square_sum(c, width, m)
    assert exact == _brute(c, width, m, 2 * c.groups_per_unit)
    s = sum_sensitivity("change_one", Fraction(lo), Fraction(hi), c, True)
    assert float(s.l2) == pytest.approx(math.sqrt(exact), rel=1e-8)
    assert s.l2 * s.l2 >= exact


def test_change_one_count_l2_is_attained() -> None:
    """A unit leaving k groups of R rows and joining k others: sqrt(2 k) R, exactly."""
    c = contribution(None, 4, 3, grouped=True)
    s = count_sensitivity("change_one", c, True)
    assert float(s.l2) == pytest.approx(math.sqrt(2 * 4) * 3, rel=1e-8)
