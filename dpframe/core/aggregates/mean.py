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
from ..rng import RandomSource

if TYPE_CHECKING:
    from ..query import Measure


class Mean(Aggregate):
    op = "mean"
    names = ("mean",)
    summary = "mean of values clamped to the declared bounds"

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan:
        assert m.column is not None
        lo, hi = ctx.query.bounds_of(m.column)
        req = fixed_point_request(m.column, lo, hi, (lo + hi) / 2, False, with_count=True)
        s_sum = ctx.sum_sensitivity(req)
        s_cnt = ctx.count_sensitivity()
        half_rho = rho / 2 if rho is not None else None
        return MeasurePlan(
            m, eps, delta, [req],
            noise=ctx.additive(s_sum, eps / 2, delta, half_rho, False, req.unit),
            count_noise=ctx.additive(s_cnt, eps / 2, delta, half_rho, True),
            bounds=(float(lo), float(hi)))

    def release(self, mp: MeasurePlan, rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        assert mp.noise is not None and mp.count_noise is not None and mp.bounds is not None
        req = mp.requests[0]
        noisy_sum = mp.noise.add_noise(rows.values(req), req.unit, rng).astype(np.float64)
        noisy_cnt = mp.count_noise.add_noise(rows.counts(req), Fraction(1),
                                             rng).astype(np.float64)
        mean = mean_estimate(noisy_sum, noisy_cnt, mp.bounds)
        # calibrated interval by post-processing the public noise; the simulation of small
        # groups only when an interval was asked for
        lower, upper = ratio_interval(noisy_sum, noisy_cnt, mp.noise, mp.count_noise,
                                      mp.bounds, level, simulate=want_ci)
        m = mp.measure
        return MeasureRelease(m.name, m.column, mean, lower.reshape(mean.shape),
                              upper.reshape(mean.shape), self.describe(mp, level))

    def describe(self, mp: MeasurePlan, level: float) -> dict[str, object]:
        """Adds ``ci_half_width_times_rows``: the interval's public bound over ``n`` rows (a
        mean's half-width is about this / n; the release carries its own interval)."""
        d = super().describe(mp, level)
        assert mp.noise is not None and mp.count_noise is not None and mp.bounds is not None
        rho = d.pop("rho", None)  # keep the documented order of the description's fields
        d["ci_half_width_times_rows"] = mean_half_width_numerator(mp.noise, mp.count_noise,
                                                                  mp.bounds, level)
        if rho is not None:
            d["rho"] = rho
        return d

    def half_width(self, mp: MeasurePlan, level: float, min_rows: int | None) -> float:
        if min_rows is None:
            raise ValidationError(
                "accuracy= for a mean needs min_rows=: the interval of a mean shrinks with its "
                "number of rows, which is private; declare a lower bound you know (e.g. "
                "min_rows=1000) and every group with at least that many rows meets the target")
        assert mp.noise is not None and mp.count_noise is not None and mp.bounds is not None
        return mean_half_width_bound(mp.noise, mp.count_noise, mp.bounds, min_rows, level)


MEAN = Mean()
