"""Calibrated intervals by post-processing the public noise distribution (no privacy cost).

An interval covers the *clamped* value (each value clamped to the declared bounds, after
contribution bounding), never the raw one: clamping's bias is outside it. ``diagnostics=``
releases noisy counts of the rows clamping and bounding changed (docs/concepts.md).

A released mean is ``m = mid + S / C`` with ``S`` the noisy (shifted) sum and ``C`` the noisy
count, each with independent noise of a known, symmetric distribution (:class:`NoiseSpec`).
At the true shifted mean ``r`` (``s = r c`` for the true sum and count), ``S - r C = z_s - r
z_c``: a pivot, whose law depends on ``r`` alone, whatever the true count. The interval is the
set of ``r`` in the bounds that the test ``|S - r C| <= a(r)`` accepts, ``a(r)`` the ``level``
quantile of ``|z_s - r z_c|`` (:func:`inverted_interval`): it holds the truth with probability
``level`` (Fieller's construction for a ratio). For Laplace noise the law of ``z_s - r z_c`` is
known exactly (scales ``b1``, ``b2 = |r| b_c``): ``P(|X| > a) = (b1^2 e^(-a/b1) - b2^2
e^(-a/b2)) / (b1^2 - b2^2)``; for Gaussian noise it is normal with variance ``s1^2 + r^2
s2^2``. Discrete noise is matched to the continuous law of the same variance.

0.1 used the union bound (99.7% at a stated 95%); 0.2 to 0.4 a first-order law and, for small
groups, simulated plausible truths clipped to the bounds: their quantiles coincided at a bound
when most draws clipped, releasing intervals of zero width (``[0, 0]`` in 0.8% of means of 21
rows near the lower bound), and they covered 0.936 for means of 21 rows and 0.934 to 0.938 for
variances. The inverted pivot never has zero width (where no value is accepted, an event of
probability at most ``1 - level``, the interval is the whole bounds) and covers at least the
level; variances (:func:`variance_interval`) invert a pivot of their own, profiled over the
mean's interval (conservative). Coverage is checked by seeded simulation
(``tests/fronts/test_honest_intervals.py``, ``tests/core/test_intervals.py``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .noise.mechanisms import NoiseSpec, normal_quantile

FloatArray = npt.NDArray[np.float64]

#: Groups handled at once (memory: about 8 * GRID * CHUNK bytes per array).
CHUNK = 1024


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


def mean_estimate(sums: FloatArray, counts: FloatArray, bounds: tuple[float, float]
                  ) -> FloatArray:
    """``mid + sum / count`` (counts below 1 read as 1) clipped to the bounds."""
    lo, hi = bounds
    return np.clip((lo + hi) / 2 + sums / np.maximum(counts, 1.0), lo, hi)


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


#: Points of the grid of candidate shifted means on which the pivot test is evaluated, and of
#: the table of its half-widths (interpolated in between: the half-width is convex in ``|r|``,
#: so the chords lie above it and the interval only widens).
GRID = 129
TABLE = 4097
#: The share of a variance interval's error rate spent on its mean's pivot (the rest on the
#: second moment's): the variance moves little with the mean, so a wide mean interval is cheap.
MEAN_SHARE = 0.2
#: Bisection steps that narrow each end of an inverted interval down to its boundary.
REFINE = 36


def pivot_half_width(sum_noise: NoiseSpec, count_noise: NoiseSpec, r: FloatArray,
                     level: float) -> FloatArray:
    """``a(r)``, the ``level`` quantile of ``|z_s - r z_c|``: the sum's noise minus ``r``
    times the count's (the discrete noises matched to the continuous laws of their variance,
    as in the module docstring). Public: noise parameters only."""
    r = np.abs(np.asarray(r, dtype=np.float64))
    tail = 1.0 - level
    if sum_noise.kind == "laplace":
        return laplace_difference_half_width(np.full(r.shape, laplace_scale(sum_noise)),
                                             r * laplace_scale(count_noise), tail)
    return normal_quantile(1.0 - tail / 2) * np.sqrt(sum_noise.std**2
                                                     + (r * count_noise.std) ** 2)


def _table(sum_noise: NoiseSpec, count_noise: NoiseSpec, h: float, level: float
           ) -> Callable[[FloatArray], FloatArray]:
    """``a(r)`` from a table over ``|r|`` in ``[0, h]``, linearly interpolated (see TABLE)."""
    xs = np.linspace(0.0, h, TABLE)
    ys = pivot_half_width(sum_noise, count_noise, xs, level)
    return lambda r: np.interp(np.abs(r), xs, ys)


def _refine(accepts: Callable[[FloatArray], npt.NDArray[np.bool_]], inside: FloatArray,
            outside: FloatArray) -> FloatArray:
    """Per group, bisection between an accepted ``inside`` and a rejected ``outside`` point:
    the last accepted point found (never past the boundary, so the interval keeps it)."""
    for _ in range(REFINE):
        mid = (inside + outside) / 2
        ok = accepts(mid)
        inside, outside = np.where(ok, mid, inside), np.where(ok, outside, mid)
    return inside


#: ``a(r)`` of a pivot given directly (a joint release's, :mod:`dpframe.core.knorm`).
Law = Callable[[FloatArray], FloatArray]


def inverted_interval(noisy_sum: FloatArray, noisy_count: FloatArray,
                      sum_noise: NoiseSpec | None, count_noise: NoiseSpec | None, h: float,
                      level: float, law: Law | None = None) -> tuple[FloatArray, FloatArray]:
    """The shifted means ``r`` in ``[-h, h]`` that the pivot test accepts, ``|S - r C| <=
    a(r)`` (module docstring), as the hull ``[lower, upper]`` per group (1-D arrays).

    ``S - r C = z_s - r z_c`` at the true ``r`` whatever the true count, so the true ``r`` is
    accepted with probability ``level``: the hull covers it at least that often. Where no ``r``
    is accepted (the noise was extreme: an event of probability at most ``1 - level``), or a
    single point only, the interval is the whole ``[-h, h]``: wide, never empty and never of
    zero width. ``law`` gives ``a(r)`` directly (the noises are then not read)."""
    s = np.asarray(noisy_sum, dtype=np.float64).reshape(-1)
    c = np.asarray(noisy_count, dtype=np.float64).reshape(-1)
    if law is None:
        assert sum_noise is not None and count_noise is not None
        law = _table(sum_noise, count_noise, h, level)
    a = law
    grid = np.linspace(-h, h, GRID)
    step = grid[1] - grid[0]
    lower, upper = np.full(s.size, -h), np.full(s.size, h)
    for start in range(0, s.size, CHUNK):
        sl = slice(start, min(start + CHUNK, s.size))
        sg, cg = s[sl, None], c[sl, None]
        ok = np.abs(sg - grid[None, :] * cg) <= a(grid)[None, :]
        r0 = np.clip(s[sl] / np.where(c[sl] > 0, c[sl], 1.0), -h, h)
        ok0 = (c[sl] > 0) & (np.abs(s[sl] - r0 * c[sl]) <= a(r0))
        lo = np.where(ok.any(axis=1), grid[np.argmax(ok, axis=1)], np.inf)
        hi = np.where(ok.any(axis=1), grid[GRID - 1 - np.argmax(ok[:, ::-1], axis=1)], -np.inf)
        lo, hi = np.where(ok0, np.minimum(lo, r0), lo), np.where(ok0, np.maximum(hi, r0), hi)
        found = np.isfinite(lo)
        lo, hi = np.where(found, lo, -h), np.where(found, hi, h)

        def accepts(r: FloatArray, sg: FloatArray = s[sl], cg: FloatArray = c[sl]
                    ) -> npt.NDArray[np.bool_]:
            return np.abs(sg - r * cg) <= a(r)

        below = np.maximum(-h, np.floor((lo + h) / step - 1e-9) * step - h)  # rejected
        above = np.minimum(h, np.ceil((hi + h) / step + 1e-9) * step - h)
        lower[sl] = np.where(found & (lo > -h), _refine(accepts, lo, below), lo)
        upper[sl] = np.where(found & (hi < h), _refine(accepts, hi, above), hi)
    point = upper <= lower  # only a point accepted (it touches the bounds): as none
    return np.where(point, -h, lower), np.where(point, h, upper)


def first_order_interval(noisy_sum: FloatArray, noisy_count: FloatArray,
                         sum_noise: NoiseSpec | None, count_noise: NoiseSpec | None, h: float,
                         level: float, law: Law | None = None
                         ) -> tuple[FloatArray, FloatArray]:
    """The first-order interval of the shifted mean, ``S / C -+ a(S / C) / C`` (counts below 1
    read as 1), clipped to ``[-h, h]``: cheap, indicative only (it under-covers small groups),
    for releases that asked for no interval (``ci=None``). Never of zero width."""
    s = np.asarray(noisy_sum, dtype=np.float64).reshape(-1)
    c = np.maximum(np.asarray(noisy_count, dtype=np.float64).reshape(-1), 1.0)
    r = np.clip(s / c, -h, h)
    if law is not None:
        a = law(r)
    else:
        assert sum_noise is not None and count_noise is not None
        a = pivot_half_width(sum_noise, count_noise, r, level)
    half = np.maximum(a / c, 1e-12 * h)
    return np.clip(r - half, -h, h - 1e-12 * h), np.clip(r + half, -h + 1e-12 * h, h)


def ratio_interval(noisy_sum: FloatArray, noisy_count: FloatArray,
                   sum_noise: NoiseSpec | None, count_noise: NoiseSpec | None,
                   bounds: tuple[float, float], level: float, exact: bool = True,
                   law: Law | None = None) -> tuple[FloatArray, FloatArray]:
    """Lower and upper ends of a ``level`` interval for the mean ``mid + s / c`` per group, by
    inverting the pivot ``S - r C`` (:func:`inverted_interval`), widened to hold the released
    estimate (:func:`mean_estimate`) where that lies outside. ``noisy_sum`` is the released
    sum of values shifted by the bounds' midpoint. Never of zero width (bounds ``lo < hi``).
    ``exact=False``: :func:`first_order_interval` instead (fast; releases without ``ci=``)."""
    lo, hi = bounds
    mid, h = (lo + hi) / 2, (hi - lo) / 2
    s = np.asarray(noisy_sum, dtype=np.float64)
    invert = inverted_interval if exact else first_order_interval
    lower, upper = invert(s, np.asarray(noisy_count, dtype=np.float64), sum_noise,
                          count_noise, h, level, law)
    est = mean_estimate(s, np.asarray(noisy_count, dtype=np.float64), bounds).reshape(-1)
    lower = np.clip(np.minimum(mid + lower, est), lo, hi)
    upper = np.clip(np.maximum(mid + upper, est), lo, hi)
    return lower.reshape(s.shape), upper.reshape(s.shape)


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


#: Candidate shifted means per group over which a variance's pivot is profiled.
MEAN_POINTS = 9
#: Points of the grid of candidate variances (each end is then narrowed by bisection).
VARIANCE_GRID = 65


#: ``a(m1, k)``: the half-width the pivot ``W = z_q - 2 m1 z_s + k z_c`` of a variance is
#: tested against (:func:`variance_interval`).
WLaw = Callable[[FloatArray, FloatArray], FloatArray]


def _variance_accepts(s: FloatArray, c: FloatArray, z: FloatArray, m1: FloatArray,
                      v: FloatArray, half: WLaw, h: float) -> npt.NDArray[np.bool_]:
    """Whether the population variance ``v`` (per group, shape ``[g, 1]``) is accepted with
    some candidate mean of ``m1`` (shape ``[g, k]``): ``|W| <= half(m1, k)`` and ``v``
    possible with that mean (``v <= h^2 - m1^2``). See :func:`variance_interval`."""
    k = h * h / 2 + m1 * m1 - v
    w = z + (h * h / 2) * c - 2 * m1 * s + m1 * m1 * c - v * c
    ok = (np.abs(w) <= half(m1, k)) & (v <= h * h - m1 * m1 + 1e-12)
    return np.asarray(ok.any(axis=1), dtype=bool)


def _independent_w_law(sum_noise: NoiseSpec, count_noise: NoiseSpec, square_noise: NoiseSpec,
                       q: float) -> WLaw:
    """``q sd(W)`` for independent noises (:func:`pivot_quantile`'s factor ``q``)."""
    ss, sc, sq = sum_noise.std, count_noise.std, square_noise.std

    def half(m1: FloatArray, k: FloatArray) -> FloatArray:
        return np.asarray(q * np.sqrt(sq * sq + 4 * m1 * m1 * ss * ss + k * k * sc * sc))
    return half


def pivot_quantile(kind: str, tail: float) -> float:
    """The factor of the standard deviation at a sum of independent noises' two-sided
    ``tail``: a normal's for Gaussian noise; for Laplace noise a single Laplace's of the same
    variance, ``ln(1 / tail) / sqrt(2)``, whose tail is the heaviest of such sums at the
    levels intervals are asked at (a sum of several is closer to normal)."""
    if kind == "laplace":
        return max(math.log(1.0 / tail) / math.sqrt(2.0), normal_quantile(1.0 - tail / 2))
    return normal_quantile(1.0 - tail / 2)


def variance_interval(noisy_sum: FloatArray, noisy_count: FloatArray, noisy_squares: FloatArray,
                      sum_noise: NoiseSpec | None, count_noise: NoiseSpec | None,
                      square_noise: NoiseSpec | None, bounds: tuple[float, float], ddof: int,
                      level: float,
                      joint: Callable[[float], tuple[Law, WLaw]] | None = None
                      ) -> tuple[FloatArray, FloatArray]:
    """A ``level`` interval for the variance per group, by inverting a pivot.

    With ``S, C, Z`` the noisy shifted sum, count and shifted sum of squares (``Z`` of
    ``(x - mid)^2 - h^2/2``), the true shifted mean ``m1`` and population variance ``v``,
    ``W = Z + (h^2/2) C - 2 m1 S + m1^2 C - v C`` equals ``z_q - 2 m1 z_s + (h^2/2 + m1^2 -
    v) z_c`` whatever the true count: its law is known given ``(m1, v)``. The mean is a
    nuisance: its own pivot (:func:`inverted_interval`) at ``1 - MEAN_SHARE (1 - level)``
    bounds it, and ``v`` is accepted when ``|W| <= a`` at ``1 - (1 - MEAN_SHARE)(1 - level)``
    for some candidate mean in that interval (union bound: the truth is accepted with
    probability at least ``level``). ``ddof`` scales the ends by ``C / (C - ddof)`` like the
    estimate. Where no variance is accepted (extreme noise) the interval is every variance
    the bounds allow, and so it is where a single point is accepted (a mean at a bound admits
    the variance 0 only): never of zero width. The estimate is kept inside. Post-processing."""
    lo, hi = bounds
    h = (hi - lo) / 2
    alpha = 1.0 - level
    shape = np.shape(noisy_sum)
    s, c, z = (np.asarray(x, dtype=np.float64).reshape(-1)
               for x in (noisy_sum, noisy_count, noisy_squares))
    if joint is not None:  # a joint release's laws at the two levels
        mean_law, _ = joint(1.0 - alpha * MEAN_SHARE)
        _, w_half = joint(1.0 - alpha * (1.0 - MEAN_SHARE))
        l1, u1 = inverted_interval(s, c, None, None, h, 1.0 - alpha * MEAN_SHARE, mean_law)
    else:
        assert sum_noise is not None and count_noise is not None and square_noise is not None
        l1, u1 = inverted_interval(s, c, sum_noise, count_noise, h, 1.0 - alpha * MEAN_SHARE)
        w_half = _independent_w_law(sum_noise, count_noise, square_noise, pivot_quantile(
            sum_noise.kind, alpha * (1.0 - MEAN_SHARE)))
    grid = np.linspace(0.0, h * h, VARIANCE_GRID)
    step = grid[1] - grid[0]
    lower, upper = np.zeros(s.size), np.full(s.size, h * h)
    for start in range(0, s.size, max(1, CHUNK // MEAN_POINTS)):
        sl = slice(start, min(start + max(1, CHUNK // MEAN_POINTS), s.size))
        m1 = l1[sl, None] + (u1 - l1)[sl, None] * np.linspace(0.0, 1.0, MEAN_POINTS)[None, :]
        sg, cg, zg = s[sl, None], c[sl, None], z[sl, None]

        def accepts(v: FloatArray, sg: FloatArray = sg, cg: FloatArray = cg,
                    zg: FloatArray = zg, m1: FloatArray = m1) -> npt.NDArray[np.bool_]:
            return _variance_accepts(sg, cg, zg, m1, v[:, None], w_half, h)

        ok = np.stack([accepts(np.full(m1.shape[0], g)) for g in grid], axis=1)
        vl = np.where(ok.any(axis=1), grid[np.argmax(ok, axis=1)], np.inf)
        vu = np.where(ok.any(axis=1), grid[VARIANCE_GRID - 1 - np.argmax(ok[:, ::-1], axis=1)],
                      -np.inf)
        v0 = variance_estimate(s[sl], c[sl], z[sl], bounds, 0)  # narrower than a step
        ok0 = accepts(v0)
        vl, vu = np.where(ok0, np.minimum(vl, v0), vl), np.where(ok0, np.maximum(vu, v0), vu)
        found = np.isfinite(vl)
        vl, vu = np.where(found, vl, 0.0), np.where(found, vu, h * h)
        below = np.maximum(np.floor(vl / step - 1e-9) * step, 0.0)  # a rejected point
        above = np.minimum(np.ceil(vu / step + 1e-9) * step, h * h)
        lower[sl] = np.where(found & (vl > 0), _refine(accepts, vl, below), vl)
        upper[sl] = np.where(found & (vu < h * h), _refine(accepts, vu, above), vu)
    point = upper <= lower  # only a point accepted (a mean at a bound admits variance 0 only)
    lower, upper = np.where(point, 0.0, lower), np.where(point, h * h, upper)
    if ddof:
        scale = np.maximum(c, 1.0) / np.maximum(c - ddof, 1.0)
        lower, upper = lower * scale, upper * scale
    est = variance_estimate(s, c, z, bounds, ddof)
    lower = np.clip(np.minimum(lower, est), 0.0, 2 * h * h)
    upper = np.clip(np.maximum(upper, est), 0.0, 2 * h * h)
    return lower.reshape(shape), upper.reshape(shape)


__all__ = [
    "Law",
    "WLaw",
    "first_order_interval",
    "inverted_interval",
    "laplace_difference_half_width",
    "laplace_scale",
    "mean_estimate",
    "mean_half_width_bound",
    "mean_half_width_numerator",
    "noise_draws",
    "pivot_half_width",
    "pivot_quantile",
    "ratio_interval",
    "variance_estimate",
    "variance_interval",
]
