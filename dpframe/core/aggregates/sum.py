"""``sum``: the sum of clamped values per group, accumulated exactly in fixed point.

Privacy: values are clamped to the declared ``[lo, hi]`` and accumulated as integers whose
per-row bound holds by construction (:func:`~dpframe.core.exact.compute.fixed_point_request`), so
one
unit moves a group's sum by at most ``R max(|lo|, |hi|)`` (add/remove) or
``R max(hi - lo, |lo|, |hi|)`` (change-one), in each of ``k`` groups
(:func:`~dpframe.core.sensitivity.sum_sensitivity`). Granular Laplace noise on the fixed-point
grid (or geometric for integer columns) is eps-DP; the discrete Gaussian rho-zCDP.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..exact.compute import fixed_point_request
from ..measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..noise.rng import RandomSource

if TYPE_CHECKING:
    from ..query import Measure


class Sum(Aggregate[bool]):
    op = "sum"
    names = ("sum",)
    summary = "sum of values clamped to the declared bounds"
    additive = True
    zero_when_empty = True
    rollup = True
    main = "sum"

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[bool]:
        assert m.column is not None
        lo, hi = ctx.query.bounds_of(m.column)
        is_int = ctx.column_kinds.get(m.column) in ("int", "bool")
        req = fixed_point_request(m.column, lo, hi, Fraction(0), is_int)
        s = ctx.sum_sensitivity(req)
        return MeasurePlan(m, eps, delta, [req],
                           {"sum": ctx.additive(s, eps, delta, rho, req.integer, req.unit)},
                           req.integer)

    def release(self, mp: MeasurePlan[bool], rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        role = mp.joint()
        if role is not None:  # centred sum + midpoint x count, from the agg's joint release
            assert role.count is not None
            drawn = rows.joint(role.release, rng)
            noisy = drawn[role.value] + role.shift * drawn[role.count].astype(np.float64)
            if mp.requests and self.integer_column(mp):  # the column's dtype: post-processing
                noisy = np.clip(np.rint(noisy), -2.0**63, 2.0**63 - 1024).astype(np.int64)
            hw = self.half_width(mp, level, None)
        else:
            noise = mp.additive("sum")
            req = mp.requests[0]
            noisy = noise.add_noise(rows.values(req), req.unit, rng)
            hw = noise.half_width(level)
        m = mp.measure
        return MeasureRelease(m.name, m.column, noisy, noisy - hw, noisy + hw,
                              self.describe(mp, level))

    def half_width(self, mp: MeasurePlan[bool], level: float, min_rows: int | None) -> float:
        role = mp.joint()
        if role is not None:
            return role.release.spec.half_width(role.value, level, role.shift, role.count)
        return mp.additive("sum").half_width(level)

    @staticmethod
    def integer_column(mp: MeasurePlan[bool]) -> bool:
        """Whether the sum is released as integers (an integer or boolean column)."""
        return bool(mp.params)

    def clamp_bounds(self, mp: MeasurePlan[bool]) -> tuple[float, float] | None:
        """The declared bounds, those of the fixed-point request (its ``lo`` / ``hi``)."""
        role = mp.joint()
        req = role.release.sources[role.release.spec.index(role.value)].request if role else (
            mp.requests[0])
        return (req.lo, req.hi)


SUM = Sum()
