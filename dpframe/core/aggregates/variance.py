"""``var`` and ``std``: three noisy releases and post-processing.

Privacy: a third of the measure's budget each (basic composition) for the count, the sum of
values shifted by the bounds' midpoint (each in ``[-h, h]``, ``h`` the half-width of the
bounds) and the sum of shifted squares (each in ``[-h^2/2, h^2/2]``,
:func:`~dpframe.core.compute.square_request`); the variance (``ddof`` as pandas) and the
standard deviation, and their intervals, are post-processing (:mod:`dpframe.core.intervals`).
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ValidationError
from ..compute import fixed_point_request, square_request
from ..intervals import variance_estimate, variance_interval
from ..measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..rng import RandomSource
from .mean import Bounds, describe_ratio

if TYPE_CHECKING:
    from ..query import Measure, Query


class Variance(Aggregate[Bounds]):
    op = "var"
    names = ("var",)
    summary = "variance of values clamped to the declared bounds (ddof as pandas)"
    main = "sum"

    def check(self, m: Measure, query: Query) -> None:
        super().check(m, query)
        if isinstance(m.ddof, bool) or not isinstance(m.ddof, numbers.Integral) or (
                m.ddof not in (0, 1)):
            raise ValidationError("ddof must be 0 (population) or 1 (sample, pandas' default)")

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[Bounds]:
        assert m.column is not None
        lo, hi = ctx.query.bounds_of(m.column)
        req = fixed_point_request(m.column, lo, hi, (lo + hi) / 2, False, with_count=True)
        sq = square_request(m.column, lo, hi)
        s_sum = ctx.sum_sensitivity(req)
        s_sq = ctx.sum_sensitivity(sq)
        s_cnt = ctx.count_sensitivity()
        third = rho / 3 if rho is not None else None
        return MeasurePlan(
            m, eps, delta, [req, sq],
            {"sum": ctx.additive(s_sum, eps / 3, delta, third, False, req.unit),
             "count": ctx.additive(s_cnt, eps / 3, delta, third, True),
             "squares": ctx.additive(s_sq, eps / 3, delta, third, False, sq.unit)},
            (float(lo), float(hi)))

    def release(self, mp: MeasurePlan[Bounds], rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        noise, count_noise, squares = (mp.additive(n) for n in ("sum", "count", "squares"))
        req, sq = mp.requests
        m = mp.measure
        noisy_sum = noise.add_noise(rows.values(req), req.unit, rng).astype(np.float64)
        noisy_cnt = count_noise.add_noise(rows.counts(req), Fraction(1), rng).astype(np.float64)
        noisy_sq = squares.add_noise(rows.values(sq), sq.unit, rng).astype(np.float64)
        est = variance_estimate(noisy_sum, noisy_cnt, noisy_sq, mp.params, m.ddof)
        if want_ci:
            lower, upper = variance_interval(noisy_sum, noisy_cnt, noisy_sq, noise, count_noise,
                                             squares, mp.params, m.ddof, level)
        else:
            lower = upper = np.full(est.shape, np.nan)
        est, lower, upper = self.finish(est), self.finish(lower), self.finish(upper)
        return MeasureRelease(m.name, m.column, est, lower.reshape(est.shape),
                              upper.reshape(est.shape), self.describe(mp, level))

    def clamp_bounds(self, mp: MeasurePlan[Bounds]) -> tuple[float, float] | None:
        """The declared bounds (the plan's params)."""
        return mp.params

    def describe_parts(self, mp: MeasurePlan[Bounds], level: float) -> dict[str, object]:
        """The count's noise (:func:`~dpframe.core.aggregates.mean.describe_ratio`), then the
        squares' scale and sensitivity."""
        squares = mp.additive("squares")
        return {**describe_ratio(mp.additive("sum"), mp.additive("count"), level),
                "square_noise_scale": squares.scale,
                "square_sensitivity": float(squares.sensitivity)}

    def finish(self, variance: np.ndarray) -> np.ndarray:
        """From a variance to this aggregate's unit (post-processing)."""
        return variance


class StandardDeviation(Variance):
    op = "std"
    names = ("std",)
    summary = "standard deviation of values clamped to the declared bounds (ddof as pandas)"

    def finish(self, variance: np.ndarray) -> np.ndarray:
        return np.sqrt(variance)


VAR = Variance()
STD = StandardDeviation()
