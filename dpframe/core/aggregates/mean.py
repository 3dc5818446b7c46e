"""``mean``: a noisy shifted sum over a noisy count.

The sum uses values shifted by the bounds' midpoint, so one row moves it by at most
``(hi - lo) / 2`` instead of ``max(|lo|, |hi|)``; the count is a count.

Privacy: with pure-DP noise (Laplace family), the (centred sum, count) pair is released at
once by the K-norm mechanism with K the box hull of the sensitivity set ``{+-(c, 1): |c| <= h}``
(Hardt and Talwar 2010; :mod:`dpframe.core.knorm`, Theorem K: epsilon-DP for the measure's
whole epsilon), shared with the query's other counts, sums and means
(:mod:`dpframe.core.joint`): half the variance of Laplace noise at epsilon / 2 each.
Gaussian noise: half of the measure's rho for each (zCDP composition). The mean and its
interval are post-processing of the two noisy values and the public noise distributions
(:mod:`dpframe.core.intervals`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ValidationError
from ..exact.compute import fixed_point_request
from ..intervals import (
    mean_estimate,
    mean_half_width_bound,
    mean_half_width_numerator,
    ratio_interval,
)
from ..knorm import BoxNormSpec, JointRole, box_pivot_half_width
from ..measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..noise.mechanisms import NoiseSpec
from ..noise.rng import RandomSource

if TYPE_CHECKING:
    from ..query import Measure


#: A mean's and a variance's params: the declared clamping bounds ``(lo, hi)`` as floats.
Bounds = tuple[float, float]


class Mean(Aggregate[Bounds]):
    op = "mean"
    names = ("mean",)
    summary = "mean of values clamped to the declared bounds"
    main = "sum"
    mechanism_pages = ("k-norm", "geometric", "granular-laplace", "discrete-gaussian")

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[Bounds]:
        assert m.column is not None
        lo, hi = ctx.query.bounds_of(m.column)
        req = fixed_point_request(m.column, lo, hi, (lo + hi) / 2, False, with_count=True)
        s_sum = ctx.sum_sensitivity(req)
        s_cnt = ctx.count_sensitivity()
        half_rho = rho / 2 if rho is not None else None
        return MeasurePlan(
            m, eps, delta, [req],
            {"sum": ctx.additive(s_sum, eps / 2, delta, half_rho, False, req.unit),
             "count": ctx.additive(s_cnt, eps / 2, delta, half_rho, True)},
            (float(lo), float(hi)))

    def release(self, mp: MeasurePlan[Bounds], rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        role = mp.joint()
        if role is not None:  # the K-norm release of (centred sum, count), shared by the agg
            assert role.count is not None
            drawn = rows.joint(role.release, rng)
            noisy_sum = drawn[role.value].astype(np.float64)
            noisy_cnt = drawn[role.count].astype(np.float64)
            law = joint_pivot(role, level, (mp.params[1] - mp.params[0]) / 2)
            mean = mean_estimate(noisy_sum, noisy_cnt, mp.params)
            lower, upper = ratio_interval(noisy_sum, noisy_cnt, None, None, mp.params, level,
                                          exact=want_ci, law=law)
        else:
            noise, count_noise = mp.additive("sum"), mp.additive("count")
            req = mp.requests[0]
            noisy_sum = noise.add_noise(rows.values(req), req.unit, rng).astype(np.float64)
            noisy_cnt = count_noise.add_noise(rows.counts(req), Fraction(1), rng).astype(
                np.float64)
            mean = mean_estimate(noisy_sum, noisy_cnt, mp.params)
            # calibrated interval by post-processing the public noise (the pivot inverted)
            lower, upper = ratio_interval(noisy_sum, noisy_cnt, noise, count_noise, mp.params,
                                          level, exact=want_ci)
        m = mp.measure
        return MeasureRelease(m.name, m.column, mean, lower.reshape(mean.shape),
                              upper.reshape(mean.shape), self.describe(mp, level))

    def clamp_bounds(self, mp: MeasurePlan[Bounds]) -> tuple[float, float] | None:
        """The declared bounds (the plan's params)."""
        return mp.params

    def describe_parts(self, mp: MeasurePlan[Bounds], level: float) -> dict[str, object]:
        """The count's noise (:func:`describe_ratio`) and ``ci_half_width_times_rows``: the
        interval's public bound over ``n`` rows (a mean's half-width is about this / n; the
        release carries its own interval)."""
        noise, count_noise = mp.additive("sum"), mp.additive("count")
        return {**describe_ratio(noise, count_noise, level),
                "ci_half_width_times_rows": mean_half_width_numerator(noise, count_noise,
                                                                      mp.params, level)}

    def joint_parts(self, mp: MeasurePlan[Bounds], level: float) -> dict[str, object]:
        """A ratio's interval depends on the private count (``ci_half_width`` is None); its
        public bound over ``n`` rows is ``ci_half_width_times_rows / n``."""
        role = mp.joint()
        assert role is not None
        h = (mp.params[1] - mp.params[0]) / 2
        assert role.count is not None
        spec = role.release.spec
        return {"count_noise_scale": spec.radius_scale(role.count),
                "count_ci_half_width": spec.half_width(role.count, level),
                "sum_ci_half_width": spec.half_width(role.value, level), "ci_half_width": None,
                "ci_half_width_times_rows": float(joint_pivot(role, level, h)(np.array([h]))[0])}

    def half_width(self, mp: MeasurePlan[Bounds], level: float, min_rows: int | None) -> float:
        role = mp.joint()
        if role is not None and min_rows is not None:
            h = (mp.params[1] - mp.params[0]) / 2
            a = float(joint_pivot(role, level, h)(np.array([h]))[0])
            return min(a / min_rows, mp.params[1] - mp.params[0])
        if min_rows is None:
            raise ValidationError(
                "accuracy= for a mean needs min_rows=: the interval of a mean shrinks with its "
                "number of rows, which is private; declare a lower bound you know (e.g. "
                "min_rows=1000) and every group with at least that many rows meets the target")
        return mean_half_width_bound(mp.additive("sum"), mp.additive("count"), mp.params,
                                     min_rows, level)


def joint_pivot(role: JointRole, level: float, h: float
                ) -> Callable[[np.ndarray], np.ndarray]:
    """``a(r)``: the ``level`` quantile of ``|z_s - r z_c|`` for the centred sum's and the
    count's noise of a joint release (their continuous K-norm law, :mod:`dpframe.core.knorm`),
    tabulated over ``|r|`` in ``[0, h]`` and interpolated linearly, plus half a count step
    times ``|r|`` (the count's lattice is coarse: its discrete noise is matched to the
    continuous law up to that rounding)."""
    assert role.count is not None
    return _joint_table(role.release.spec, role.value, role.count, level, h)


#: Points of a joint pivot's table over ``|r|`` in ``[0, h]``.
JOINT_TABLE = 513


@functools.lru_cache(maxsize=64)  # public inputs only
def _joint_table(spec: BoxNormSpec, value: str, count: str, level: float, h: float
                 ) -> Callable[[np.ndarray], np.ndarray]:
    xs = np.linspace(0.0, h, JOINT_TABLE)
    ys = box_pivot_half_width(spec.radius_scale(value), xs * spec.radius_scale(count),
                              spec.dimension, level)
    step = float(spec.coordinates[spec.index(count)].granularity) / 2
    return lambda r: np.interp(np.abs(r), xs, ys) + np.abs(r) * step


def describe_ratio(noise: NoiseSpec, count_noise: NoiseSpec, level: float
                   ) -> dict[str, object]:
    """The count's noise beside a sum's: a ratio's interval is in the result's units and
    depends on the private number of rows, so only its bound is public (``ci_half_width`` is
    None); the sum's and the count's own intervals stay."""
    return {"count_noise_scale": count_noise.scale,
            "count_ci_half_width": count_noise.half_width(level),
            "sum_ci_half_width": noise.half_width(level), "ci_half_width": None}


MEAN = Mean()
