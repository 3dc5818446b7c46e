"""Calibrated mean intervals (dpframe/core/intervals.py): post-processing of the public noise.

A stated 95% interval must cover the clamped true mean about 95% of the time, neither much more
(0.1's union bound: 99.7%, too wide: overstated error, overspending accuracy-first queries) nor
less. Seeded simulation from the exact noise distributions; tolerance 4 standard errors of a
proportion over the trials.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpframe.core.intervals import (
    laplace_difference_half_width,
    noise_draws,
    ratio_interval,
)
from dpframe.core.noise.mechanisms import noise_spec

LEVEL = 0.95
TRIALS = 4000
BOUNDS = (0.0, 10.0)


def _specs(kind: str, eps: Fraction = Fraction(1, 4)):
    delta = Fraction(1, 10**6) if kind == "gaussian" else Fraction(0)
    return (noise_spec(kind, Fraction(5), eps, delta),
            noise_spec(kind, Fraction(1), eps, delta, integer=True))


def _coverage(kind: str, n: int, true_mean: float, shrink: float = 1.0) -> float:
    sn, cn = _specs(kind)
    gen = np.random.default_rng(n)
    mid = sum(BOUNDS) / 2
    s = n * (true_mean - mid) + noise_draws(sn, TRIALS, gen)
    c = n + noise_draws(cn, TRIALS, gen)
    lo, hi = ratio_interval(s, c, sn, cn, BOUNDS, LEVEL)
    centre = (lo + hi) / 2
    lo, hi = centre - (centre - lo) * shrink, centre + (hi - centre) * shrink
    return float(np.mean((lo <= true_mean) & (true_mean <= hi)))


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("n", [3, 40, 2000, 50_000])
def test_coverage_is_the_level(kind: str, n: int) -> None:
    """At n = 3 the noise dwarfs the bounds: the inverted interval is mostly the whole bounds
    (the truth lies in them), so it may cover more than the level, never less."""
    se = math.sqrt(LEVEL * (1 - LEVEL) / TRIALS)
    cov = _coverage(kind, n, 7.3)
    assert cov >= LEVEL - 4 * se, f"coverage {cov:.4f}"
    if n >= 40:
        assert cov <= LEVEL + 4 * se, f"coverage {cov:.4f}"
    # the same check fails intervals 30% too narrow or too wide (not at n = 3, where the
    # interval is mostly the clipped bounds and its width says little)
    if n >= 40:
        assert _coverage(kind, n, 7.3, shrink=0.7) < LEVEL - 4 * se
    if n >= 2000:
        assert _coverage(kind, n, 7.3, shrink=1.3) > LEVEL + 4 * se


def test_laplace_difference_tail_matches_simulation() -> None:
    gen = np.random.default_rng(5)
    for b1, b2 in ((3.0, 1.0), (2.0, 2.0), (1.0, 0.0), (0.5, 4.0)):
        a = float(laplace_difference_half_width(np.array([b1]), np.array([b2]), 0.05)[0])
        x = gen.laplace(0, b1, 400_000) - (gen.laplace(0, b2, 400_000) if b2 else 0.0)
        assert np.mean(np.abs(x) > a) == pytest.approx(0.05, abs=0.002)


def _difference_tail(a: float, b1: float, b2: float) -> float:
    """P(|X1 - X2| > a) for Laplace(b1) - Laplace(b2), in exact-enough decimal arithmetic."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 50
        big, small, x = Decimal(max(b1, b2)), Decimal(min(b1, b2)), Decimal(a)
        if small == 0:
            return float((-x / big).exp())
        if big == small:
            return float((-x / big).exp() * (1 + x / (2 * big)))
        return float((big**2 * (-x / big).exp() - small**2 * (-x / small).exp())
                     / (big**2 - small**2))


def test_laplace_difference_half_width_is_the_root_rounded_up() -> None:
    """The half-width is at or just above the root of the tail equation (1e-9 relative), for
    scale ratios from 0 to 1 (and within 1e-9 of 1, where the formula changes) and tails from
    1e-12 to 0.9; a half-width 1e-6 smaller leaves more than ``tail`` outside."""
    gen = np.random.default_rng(8)
    ratios = np.concatenate([[0.0, 1e-300, 1e-9, 0.5, 1 - 1e-8, 1 - 1e-10, 1.0],
                             gen.uniform(0, 1, 40)])
    for tail in (1e-12, 1e-6, 0.05, 0.5, 0.9):
        b1 = np.full(ratios.size, 3.0)
        a = laplace_difference_half_width(b1, 3.0 * ratios, tail)
        for ai, r in zip(a, ratios, strict=True):
            got = _difference_tail(float(ai), 3.0, 3.0 * float(r))
            assert got <= tail * (1 + 1e-7), (tail, r)
            assert _difference_tail(float(ai) * (1 - 1e-6), 3.0, 3.0 * float(r)) > tail
    assert laplace_difference_half_width(np.array([0.0]), np.array([0.0]), 0.05)[0] == 0.0


def test_intervals_are_reproducible_and_inside_the_bounds() -> None:
    sn, cn = _specs("laplace")
    s = np.array([-40.0, 0.0, 1e4, 3.0])
    c = np.array([2.0, 0.0, 5000.0, -7.0])
    a = ratio_interval(s, c, sn, cn, BOUNDS, LEVEL)
    b = ratio_interval(s, c, sn, cn, BOUNDS, LEVEL)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert (a[0] >= 0).all() and (a[1] <= 10).all() and (a[0] <= a[1]).all()
