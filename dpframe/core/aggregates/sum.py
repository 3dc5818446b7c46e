"""``sum``: the sum of clamped values per group, accumulated exactly in fixed point.

Privacy: values are clamped to the declared ``[lo, hi]`` and accumulated as integers whose
per-row bound holds by construction (:func:`~dpframe.core.compute.fixed_point_request`), so one
unit moves a group's sum by at most ``R max(|lo|, |hi|)`` (add/remove) or
``R max(hi - lo, |lo|, |hi|)`` (change-one), in each of ``k`` groups
(:func:`~dpframe.core.sensitivity.sum_sensitivity`). Granular Laplace noise on the fixed-point
grid (or geometric for integer columns) is eps-DP; the discrete Gaussian rho-zCDP.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from ..compute import fixed_point_request
from ..measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..rng import RandomSource

if TYPE_CHECKING:
    from ..query import Measure


class Sum(Aggregate[None]):
    op = "sum"
    names = ("sum",)
    summary = "sum of values clamped to the declared bounds"
    main = "sum"

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[None]:
        assert m.column is not None
        lo, hi = ctx.query.bounds_of(m.column)
        is_int = ctx.column_kinds.get(m.column) in ("int", "bool")
        req = fixed_point_request(m.column, lo, hi, Fraction(0), is_int)
        s = ctx.sum_sensitivity(req)
        return MeasurePlan(m, eps, delta, [req],
                           {"sum": ctx.additive(s, eps, delta, rho, req.integer, req.unit)}, None)

    def release(self, mp: MeasurePlan[None], rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        noise = mp.additive("sum")
        req = mp.requests[0]
        noisy = noise.add_noise(rows.values(req), req.unit, rng)
        hw = noise.half_width(level)
        m = mp.measure
        return MeasureRelease(m.name, m.column, noisy, noisy - hw, noisy + hw,
                              self.describe(mp, level))

    def half_width(self, mp: MeasurePlan[None], level: float, min_rows: int | None) -> float:
        return mp.additive("sum").half_width(level)

    def clamp_bounds(self, mp: MeasurePlan[None]) -> tuple[float, float] | None:
        """The declared bounds, those of the fixed-point request (its ``lo`` / ``hi``)."""
        req = mp.requests[0]
        return (req.lo, req.hi)


SUM = Sum()
