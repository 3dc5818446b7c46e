"""``var`` and ``std``: three noisy values and post-processing.

Privacy: the count, the sum of values shifted by the bounds' midpoint (each in ``[-h, h]``,
``h`` the half-width of the bounds) and the sum of shifted squares (each in
``[-h^2/2, h^2/2]``, :func:`~dpframe.core.exact.compute.square_request`). With pure-DP noise the
three are released at once by the K-norm mechanism with K the box of those half-widths
(scaled by a unit's rows; :mod:`dpframe.core.knorm`, Theorem K: epsilon-DP for the measure's
whole epsilon), possibly shared with the query's other counts, sums and means
(:mod:`dpframe.core.joint`); with Gaussian noise a third of the measure's rho each (zCDP
composition). The variance (``ddof`` as pandas) and the standard deviation, and their
intervals, are post-processing (:mod:`dpframe.core.intervals`).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ValidationError
from ..exact.compute import fixed_point_request, square_request
from ..intervals import Law, WLaw, variance_estimate, variance_interval
from ..knorm import JointRole, gamma_quantile
from ..measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..noise.rng import RandomSource
from .mean import Bounds, describe_ratio, joint_pivot

if TYPE_CHECKING:
    from ..query import Measure


@dataclass(frozen=True)
class Moment:
    """A variance or standard deviation measure's own argument (public, checked when built):
    ``ddof``, the delta degrees of freedom, as pandas takes it."""

    ddof: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.ddof, bool) or not isinstance(self.ddof, numbers.Integral) or (
                self.ddof not in (0, 1)):
            raise ValidationError("ddof must be 0 (population) or 1 (sample, pandas' default)")


class Variance(Aggregate[Bounds]):
    op = "var"
    names = ("var",)
    summary = "variance of values clamped to the declared bounds (ddof as pandas)"
    main = "sum"
    params_type = Moment

    def plan(self, ctx: PlanContext, m: Measure[Moment], eps: Fraction, delta: Fraction,
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
        m = mp.measure
        role = mp.joint()
        if role is not None:  # (centred sum, count, shifted squares) from one K-norm release
            assert role.count is not None
            drawn = rows.joint(role.release, rng)
            noisy_sum, noisy_cnt, noisy_sq = (drawn[n].astype(np.float64) for n in (
                f"sum:{m.column}", role.count, role.value))
            laws: Callable[[float], tuple[Law, WLaw]] | None = joint_laws(role, mp.params)
            noise = count_noise = squares = None
        else:
            noise, count_noise, squares = (mp.additive(n) for n in ("sum", "count", "squares"))
            req, sq = mp.requests
            noisy_sum = noise.add_noise(rows.values(req), req.unit, rng).astype(np.float64)
            noisy_cnt = count_noise.add_noise(rows.counts(req), Fraction(1), rng).astype(
                np.float64)
            noisy_sq = squares.add_noise(rows.values(sq), sq.unit, rng).astype(np.float64)
            laws = None
        est = variance_estimate(noisy_sum, noisy_cnt, noisy_sq, mp.params, m.params.ddof)
        if want_ci:
            lower, upper = variance_interval(noisy_sum, noisy_cnt, noisy_sq, noise, count_noise,
                                             squares, mp.params, m.params.ddof, level, laws)
        else:
            lower = upper = np.full(est.shape, np.nan)
        est, lower, upper = self.finish(est), self.finish(lower), self.finish(upper)
        return MeasureRelease(m.name, m.column, est, lower.reshape(est.shape),
                              upper.reshape(est.shape), self.describe(mp, level))

    def clamp_bounds(self, mp: MeasurePlan[Bounds]) -> tuple[float, float] | None:
        """The declared bounds (the plan's params)."""
        return mp.params

    def joint_parts(self, mp: MeasurePlan[Bounds], level: float) -> dict[str, object]:
        """As :meth:`describe_parts`, for the coordinates of a joint release."""
        role = mp.joint()
        assert role is not None and role.count is not None
        spec = role.release.spec
        col = mp.measure.column
        sq = spec.coordinates[spec.index(role.value)]
        return {"noise_scale": spec.radius_scale(f"sum:{col}"),
                "sensitivity": float(spec.coordinates[spec.index(f"sum:{col}")].sensitivity),
                "count_noise_scale": spec.radius_scale(role.count),
                "count_ci_half_width": spec.half_width(role.count, level),
                "sum_ci_half_width": spec.half_width(f"sum:{col}", level),
                "ci_half_width": None, "square_noise_scale": spec.radius_scale(role.value),
                "square_sensitivity": float(sq.sensitivity)}

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


def joint_laws(role: JointRole, bounds: Bounds) -> Callable[[float], tuple[Law, WLaw]]:
    """A variance interval's two laws at a level, for a joint release: the mean's pivot
    (:func:`~dpframe.core.aggregates.mean.joint_pivot` on the centred sum and the count) and a
    bound on ``|W| = |z_q - 2 m1 z_s + k z_c|``: the K-norm's noise is ``r u`` with ``|u_i| <=
    1``, so ``|W| <= r (b_q + 2 |m1| b_s + |k| b_c)`` (``b_i`` the radius scales) and the
    ``level`` quantile of ``r ~ Gamma(d + 1)`` bounds it at that level (conservative), plus one
    lattice step of each coordinate for the discrete noise."""
    spec = role.release.spec
    assert role.count is not None
    col = role.value.split(":", 1)[1]
    mean_role = JointRole(role.release, f"sum:{col}", role.count, role.shift)
    names = (role.value, f"sum:{col}", role.count)
    bq, bs, bc = (spec.radius_scale(n) for n in names)
    gq, gs, gc = (float(spec.coordinates[spec.index(n)].granularity) for n in names)
    h = (bounds[1] - bounds[0]) / 2

    def laws(level: float) -> tuple[Law, WLaw]:
        g = gamma_quantile(spec.dimension, level)

        def half(m1: np.ndarray, k: np.ndarray) -> np.ndarray:
            return np.asarray(g * (bq + 2 * np.abs(m1) * bs + np.abs(k) * bc)
                              + gq + 2 * np.abs(m1) * gs + np.abs(k) * gc)
        return joint_pivot(mean_role, level, h), half
    return laws
