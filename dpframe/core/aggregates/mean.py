"""``mean``: a noisy shifted sum over a noisy count.

Privacy: half of the measure's budget for each release (basic composition). The sum uses
values shifted by the bounds' midpoint, so one row moves it by at most ``(hi - lo) / 2``
instead of ``max(|lo|, |hi|)``; the count is a count. The mean and its interval are
post-processing of the two noisy values and the public noise distributions
(:mod:`dpframe.core.intervals`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ValidationError
from ..compute import fixed_point_request
from ..intervals import (
    mean_estimate,
    mean_half_width_bound,
    mean_half_width_numerator,
    ratio_interval,
)
from ..measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..mechanisms import NoiseSpec
from ..rng import RandomSource

if TYPE_CHECKING:
    from ..query import Measure


#: A mean's and a variance's params: the declared clamping bounds ``(lo, hi)`` as floats.
Bounds = tuple[float, float]


class Mean(Aggregate[Bounds]):
    op = "mean"
    names = ("mean",)
    summary = "mean of values clamped to the declared bounds"
    main = "sum"

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
        noise, count_noise = mp.additive("sum"), mp.additive("count")
        req = mp.requests[0]
        noisy_sum = noise.add_noise(rows.values(req), req.unit, rng).astype(np.float64)
        noisy_cnt = count_noise.add_noise(rows.counts(req), Fraction(1), rng).astype(np.float64)
        mean = mean_estimate(noisy_sum, noisy_cnt, mp.params)
        # calibrated interval by post-processing the public noise (the pivot test inverted)
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

    def half_width(self, mp: MeasurePlan[Bounds], level: float, min_rows: int | None) -> float:
        if min_rows is None:
            raise ValidationError(
                "accuracy= for a mean needs min_rows=: the interval of a mean shrinks with its "
                "number of rows, which is private; declare a lower bound you know (e.g. "
                "min_rows=1000) and every group with at least that many rows meets the target")
        return mean_half_width_bound(mp.additive("sum"), mp.additive("count"), mp.params,
                                     min_rows, level)


def describe_ratio(noise: NoiseSpec, count_noise: NoiseSpec, level: float
                   ) -> dict[str, object]:
    """The count's noise beside a sum's: a ratio's interval is in the result's units and
    depends on the private number of rows, so only its bound is public (``ci_half_width`` is
    None); the sum's and the count's own intervals stay."""
    return {"count_noise_scale": count_noise.scale,
            "count_ci_half_width": count_noise.half_width(level),
            "sum_ci_half_width": noise.half_width(level), "ci_half_width": None}


MEAN = Mean()
