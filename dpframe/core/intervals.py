"""Calibrated intervals by post-processing the public noise distribution (no privacy cost).

A released mean is ``m = mid + S / C`` with ``S`` the noisy (shifted) sum and ``C`` the noisy
count, each with independent noise of a known, symmetric distribution (:class:`NoiseSpec`).
0.1 gave the union-bound interval (true sum and count each within their ``1 - alpha/2``
half-widths, all extreme ratios): valid, but a stated 95% interval covered the truth about
99.7% of the time, overstating the error and making accuracy-first queries overspend.

:func:`ratio_interval` uses the first-order error of the ratio instead. With ``s, c`` the true
shifted sum and count and ``r = S / C``, ``S / C - s / c ~ (z_s - r z_c) / C``: the error is the
sum noise minus ``r`` times the count noise, scaled by ``1 / C``. The distribution of
``z_s - r z_c`` is known exactly for both mechanisms: for Laplace noise (scales ``b1``, ``b2 =
|r| b_c``) its tail is ``P(|X| > a) = (b1^2 e^(-a/b1) - b2^2 e^(-a/b2)) / (b1^2 - b2^2)``; for
Gaussian noise it is normal with variance ``s1^2 + r^2 s2^2``. The half-width ``a`` with tail
``1 - level`` is found per group by bisection (vectorized), and the interval is
``m -+ a / max(C, 1)`` clipped to the bounds. Discrete noise is matched to the continuous law of
the same variance.

Where that half-width is large next to the bounds (small groups, where the count's
non-linearity and the clipping matter), the interval is computed by simulation instead: ``K``
draws of the public noise give plausible truths ``mid + (S - z_s) / max(C - z_c, 1)``, clipped
to the bounds, whose ``alpha/2`` and ``1 - alpha/2`` quantiles are the interval (both noises
are symmetric, so ``S - z_s`` is distributed as the true sum plus noise). The draws come from
numpy's generator with a fixed seed: reproducible, and this randomness needs no secrecy.

Only public values enter (the released numbers and the noise parameters), so this is
post-processing of a DP release. Coverage is checked by seeded simulation
(``tests/accessor/test_coverage.py``): about the level, neither much more nor much less.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from .mechanisms import NoiseSpec, normal_quantile

FloatArray = npt.NDArray[np.float64]

#: Groups whose first-order half-width exceeds this share of the bounds' width are simulated.
SIMULATE_ABOVE = 0.125
#: Draws of the public noise per simulated group.
DRAWS = 2000
#: Simulated groups handled at once (memory: about 8 * DRAWS * CHUNK bytes per array).
CHUNK = 1024
_SEED = 20261123


def noise_draws(spec: NoiseSpec, k: int, gen: np.random.Generator) -> FloatArray:
    """``k`` draws of ``spec``'s noise in output units (discrete Laplace exactly, as the
    difference of two geometric variables; Gaussian by its rounded continuous approximation)."""
    g = float(spec.granularity)
    if spec.kind == "laplace":
        t = float(spec.int_scale)
        if t <= 0:
            return np.zeros(k)
        q = -math.expm1(-1.0 / t)  # success probability 1 - e^(-1/t)
        z = gen.geometric(q, k).astype(np.float64) - gen.geometric(q, k).astype(np.float64)
        return g * z
    return g * np.rint(gen.normal(0.0, math.sqrt(float(spec.int_sigma2)), k))


def simulate_interval(estimate: Callable[..., FloatArray], released: Sequence[FloatArray],
                      noises: Sequence[NoiseSpec], level: float
                      ) -> tuple[FloatArray, FloatArray]:
    """A ``level`` interval per group for ``estimate(*releases)``, a post-processing of several
    noisy releases: ``DRAWS`` draws of each release's public noise give plausible truths
    ``released - noise`` (the noises are symmetric), whose ``estimate``'s ``alpha/2`` and
    ``1 - alpha/2`` quantiles are the interval. Chunked over groups to bound memory."""
    gen = np.random.default_rng(_SEED)
    draws = [noise_draws(spec, DRAWS, gen) for spec in noises]
    flat = [np.asarray(r, dtype=np.float64).reshape(-1) for r in released]
    a = (1.0 - level) / 2
    n = flat[0].size
    lower, upper = np.empty(n), np.empty(n)
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        values = estimate(*(r[start:stop, None] - z[None, :]
                            for r, z in zip(flat, draws, strict=True)))
        lower[start:stop], upper[start:stop] = np.quantile(values, [a, 1.0 - a], axis=1)
    return lower, upper


def mean_estimate(sums: FloatArray, counts: FloatArray, bounds: tuple[float, float]
                  ) -> FloatArray:
    """``mid + sum / count`` (counts below 1 read as 1) clipped to the bounds."""
    lo, hi = bounds
    return np.clip((lo + hi) / 2 + sums / np.maximum(counts, 1.0), lo, hi)


def simulated_interval(noisy_sum: FloatArray, noisy_count: FloatArray, sum_noise: NoiseSpec,
                       count_noise: NoiseSpec, bounds: tuple[float, float],
                       level: float) -> tuple[FloatArray, FloatArray]:
    """The simulated interval of the module docstring, per group."""
    return simulate_interval(lambda s, c: mean_estimate(s, c, bounds), [noisy_sum, noisy_count],
                             [sum_noise, count_noise], level)


def laplace_scale(spec: NoiseSpec) -> float:
    """The continuous Laplace scale with the variance of ``spec``'s (discrete) noise."""
    return spec.std / math.sqrt(2.0)


def laplace_difference_half_width(b1: FloatArray, b2: FloatArray, tail: float) -> FloatArray:
    """Per element, the ``a`` with ``P(|X1 - X2| > a) = tail`` for independent Laplace(b1) and
    Laplace(b2) (scales >= 0; the formula's limit where ``b1 == b2``), rounded up.

    With ``B = max(b1, b2)``, ``rho = min / max`` and ``a = B t``, the tail is
    ``f(t) = (e**-t - rho**2 e**(-t / rho)) / (1 - rho**2)`` (``e**-t (1 + t / 2)`` at
    ``rho = 1``, ``e**-t`` at ``rho = 0``): decreasing and convex in ``t``, and at least
    ``e**-t``. So Newton's method started at ``t = log(1 / tail)`` (at or below the root) climbs
    to the root monotonically, never past it; a relative margin of 1e-12 on the last iterate
    puts the result at or above the root.
    """
    b1 = np.asarray(b1, dtype=np.float64)
    b2 = np.asarray(b2, dtype=np.float64)
    big, small = np.maximum(b1, b2), np.minimum(b1, b2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        rho = np.where(big > 0, small / np.where(big > 0, big, 1.0), 0.0)
        near = rho >= 1.0 - 1e-9
        mixed = (rho > 0) & ~near
        inv_rho = np.where(mixed, 1.0 / np.where(mixed, rho, 1.0), 0.0)
        den = np.where(mixed, 1.0 - rho**2, 1.0)
        t = np.full(big.shape, math.log(1.0 / tail))
        for _ in range(100):
            e1 = np.exp(-t)
            e2 = np.where(mixed, np.exp(-t * inv_rho), 0.0)
            f = np.where(near, e1 * (1.0 + t / 2.0), (e1 - rho**2 * e2) / den)
            slope = np.where(near, e1 * (1.0 + t) / 2.0, (e1 - rho * e2) / den)  # -f'(t) > 0
            step = np.maximum(f - tail, 0.0) / slope
            t = t + step
            if not np.any(step > 1e-15 * t):
                break
    return np.where(big > 0, big * t * (1.0 + 1e-12), 0.0)


def ratio_interval(noisy_sum: FloatArray, noisy_count: FloatArray, sum_noise: NoiseSpec,
                   count_noise: NoiseSpec, bounds: tuple[float, float],
                   level: float, simulate: bool = True) -> tuple[FloatArray, FloatArray]:
    """Lower and upper ends of a ``level`` interval for ``mid + sum / count`` per group (see
    the module docstring). ``noisy_sum`` is the released sum of values shifted by the bounds'
    midpoint. ``simulate=False`` keeps the first-order interval everywhere (fast; where the
    noise is large next to the bounds it is wider than needed, often the whole bounds)."""
    lo, hi = bounds
    mid = (lo + hi) / 2
    s = np.asarray(noisy_sum, dtype=np.float64)
    c = np.maximum(np.asarray(noisy_count, dtype=np.float64), 1.0)
    r = np.clip(s / c, lo - mid, hi - mid)
    tail = 1.0 - level
    if sum_noise.kind == "laplace":
        b1 = np.full(s.shape, laplace_scale(sum_noise))
        a = laplace_difference_half_width(b1, np.abs(r) * laplace_scale(count_noise), tail)
    else:
        sd = np.sqrt(sum_noise.std**2 + (r * count_noise.std) ** 2)
        a = normal_quantile(1.0 - tail / 2) * sd
    mean = mid + r
    half = a / c
    lower, upper = np.clip(mean - half, lo, hi), np.clip(mean + half, lo, hi)
    wide = np.flatnonzero(half.reshape(-1) > SIMULATE_ABOVE * (hi - lo))
    if simulate and wide.size:
        sl, su = simulated_interval(s.reshape(-1)[wide], np.asarray(
            noisy_count, dtype=np.float64).reshape(-1)[wide], sum_noise, count_noise, bounds,
            level)
        lower.reshape(-1)[wide], upper.reshape(-1)[wide] = sl, su
    return lower, upper


@functools.lru_cache(maxsize=256)  # public inputs only; planned releases ask again and again
def mean_half_width_numerator(sum_noise: NoiseSpec, count_noise: NoiseSpec,
                              bounds: tuple[float, float], level: float) -> float:
    """``a`` such that a mean over ``n`` rows has a first-order ``level`` half-width of at most
    ``a / n``, whatever the data: the error law of :func:`ratio_interval` at the worst
    ``|r| = h`` (the bounds' half-width). Public: noise parameters and bounds only."""
    lo, hi = bounds
    h = (hi - lo) / 2
    tail = 1.0 - level
    if sum_noise.kind == "laplace":
        return float(laplace_difference_half_width(np.array([laplace_scale(sum_noise)]),
                                                   np.array([h * laplace_scale(count_noise)]),
                                                   tail)[0])
    return normal_quantile(1.0 - tail / 2) * math.hypot(sum_noise.std, h * count_noise.std)


def mean_half_width_bound(sum_noise: NoiseSpec, count_noise: NoiseSpec,
                          bounds: tuple[float, float], rows: int, level: float) -> float:
    """The bound of :func:`mean_half_width_numerator` for groups of at least ``rows`` rows
    (never more than the bounds' width)."""
    a = mean_half_width_numerator(sum_noise, count_noise, bounds, level)
    return min(a / rows, bounds[1] - bounds[0])


def variance_estimate(noisy_sum: FloatArray, noisy_count: FloatArray, noisy_squares: FloatArray,
                      bounds: tuple[float, float], ddof: int) -> FloatArray:
    """The variance from the three noisy releases of a var / std (post-processing).

    With ``h`` the bounds' half-width, ``S`` the noisy sum of ``x - mid`` and ``Z`` the noisy
    sum of ``(x - mid)^2 - h^2/2``: ``m1 = S / C`` in ``[-h, h]``, ``m2 = h^2/2 + Z / C`` in
    ``[0, h^2]``, the population variance ``m2 - m1^2`` clipped to ``[0, h^2 - m1^2]`` (the
    largest variance values in the bounds with mean ``m1`` can have), then scaled by
    ``C / (C - ddof)`` like pandas and clipped to ``[0, (hi - lo)^2 / 2]``.
    """
    lo, hi = bounds
    h = (hi - lo) / 2
    c = np.maximum(np.asarray(noisy_count, dtype=np.float64), 1.0)
    m1 = np.clip(np.asarray(noisy_sum, dtype=np.float64) / c, -h, h)
    m2 = np.clip(h * h / 2 + np.asarray(noisy_squares, dtype=np.float64) / c, 0.0, h * h)
    var = np.clip(m2 - m1 * m1, 0.0, h * h - m1 * m1)
    if ddof:
        var = var * c / np.maximum(c - ddof, 1.0)
    return np.clip(var, 0.0, 2 * h * h)


def variance_interval(noisy_sum: FloatArray, noisy_count: FloatArray, noisy_squares: FloatArray,
                      sum_noise: NoiseSpec, count_noise: NoiseSpec, square_noise: NoiseSpec,
                      bounds: tuple[float, float], ddof: int,
                      level: float) -> tuple[FloatArray, FloatArray]:
    """A ``level`` interval for the variance per group, by simulating the public noise of the
    three releases (as :func:`simulated_interval` does for means)."""
    return simulate_interval(lambda s, c, q: variance_estimate(s, c, q, bounds, ddof),
                             [noisy_sum, noisy_count, noisy_squares],
                             [sum_noise, count_noise, square_noise], level)


__all__ = [
    "laplace_difference_half_width",
    "laplace_scale",
    "mean_estimate",
    "mean_half_width_bound",
    "mean_half_width_numerator",
    "noise_draws",
    "ratio_interval",
    "simulate_interval",
    "simulated_interval",
    "variance_estimate",
    "variance_interval",
]
