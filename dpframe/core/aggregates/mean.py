"""``mean``: a noisy shifted sum over a noisy count.

The sum uses values shifted by the bounds' midpoint, so one row moves it by at most
``(hi - lo) / 2`` instead of ``max(|lo|, |hi|)``; the count is a count.

Privacy: with pure-DP noise (Laplace family), the (centred sum, count) pair is released at
once by the K-norm mechanism with K the box hull of the sensitivity set ``{+-(c, 1): |c| <= h}``
(Hardt and Talwar 2010; :mod:`dpframe.core.knorm`, Theorem K: epsilon-DP for the measure's
whole epsilon), shared with the query's other counts, sums and means
(:mod:`dpframe.core.joint`): half the variance of Laplace noise at epsilon / 2 each.
Gaussian noise: two stages (:mod:`dpframe.core.two_stage`): a pilot at a tenth of the
measure's rho (half for each), then the rest split between sum and count by the pilot's
released values (post-processing: adaptive zCDP composition, total rho unchanged), the stages
combined by inverse variance, with an interval of exact coverage (Theorem T there). The mean and
its interval are post-processing of the noisy values and the public noise distributions
(:mod:`dpframe.core.intervals`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, NamedTuple

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
from ..two_stage import TwoStage, first_order, plan_two_stage, two_stage_interval

if TYPE_CHECKING:
    from ..query import Measure


#: A mean's and a variance's params: the declared clamping bounds ``(lo, hi)`` as floats.
Bounds = tuple[float, float]


class MeanParams(NamedTuple):
    """A mean's params: the declared bounds as floats and, with Gaussian noise, the two-stage
    plan (every noise it may draw, :mod:`dpframe.core.two_stage`)."""

    lo: float
    hi: float
    two_stage: TwoStage | None = None

    @property
    def bounds(self) -> Bounds:
        return (self.lo, self.hi)


class Mean(Aggregate[MeanParams]):
    op = "mean"
    names = ("mean",)
    summary = "mean of values clamped to the declared bounds"
    main = "sum"
    mechanism_pages = ("k-norm", "geometric", "granular-laplace", "discrete-gaussian")

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[MeanParams]:
        assert m.column is not None
        lo, hi = ctx.query.bounds_of(m.column)
        req = fixed_point_request(m.column, lo, hi, (lo + hi) / 2, False, with_count=True)
        s_sum = ctx.sum_sensitivity(req)
        s_cnt = ctx.count_sensitivity()
        if ctx.query.mechanism == "gaussian" and rho is not None:
            ts = plan_two_stage(
                lambda r: ctx.additive(s_sum, eps / 2, delta, r, False, req.unit),
                lambda r: ctx.additive(s_cnt, eps / 2, delta, r, True),
                s_sum.l2, s_cnt.l2, rho, float(hi - lo) / 2)
            stated = ts.candidates[ts.stated]
            return MeasurePlan(
                m, eps, delta, [req],
                {"pilot_sum": ts.pilot_sum, "pilot_count": ts.pilot_count,
                 "sum": stated[0], "count": stated[1]},
                MeanParams(float(lo), float(hi), ts))
        half_rho = rho / 2 if rho is not None else None
        return MeasurePlan(
            m, eps, delta, [req],
            {"sum": ctx.additive(s_sum, eps / 2, delta, half_rho, False, req.unit),
             "count": ctx.additive(s_cnt, eps / 2, delta, half_rho, True)},
            MeanParams(float(lo), float(hi)))

    def release(self, mp: MeasurePlan[MeanParams], rows: Rows, rng: RandomSource,
                level: float, want_ci: bool) -> MeasureRelease:
        if mp.params.two_stage is not None:
            return self._two_stage(mp, mp.params.two_stage, rows, rng, level, want_ci)
        role = mp.joint()
        if role is not None:  # the K-norm release of (centred sum, count), shared by the agg
            assert role.count is not None
            drawn = rows.joint(role.release, rng)
            noisy_sum = drawn[role.value].astype(np.float64)
            noisy_cnt = drawn[role.count].astype(np.float64)
            law = joint_pivot(role, level, (mp.params.hi - mp.params.lo) / 2)
            mean = mean_estimate(noisy_sum, noisy_cnt, mp.params.bounds)
            lower, upper = ratio_interval(noisy_sum, noisy_cnt, None, None, mp.params.bounds,
                                          level,
                                          exact=want_ci, law=law)
        else:
            noise, count_noise = mp.additive("sum"), mp.additive("count")
            req = mp.requests[0]
            noisy_sum = noise.add_noise(rows.values(req), req.unit, rng).astype(np.float64)
            noisy_cnt = count_noise.add_noise(rows.counts(req), Fraction(1), rng).astype(
                np.float64)
            mean = mean_estimate(noisy_sum, noisy_cnt, mp.params.bounds)
            # calibrated interval by post-processing the public noise (the pivot inverted)
            lower, upper = ratio_interval(noisy_sum, noisy_cnt, noise, count_noise,
                                          mp.params.bounds, level, exact=want_ci)
        m = mp.measure
        return MeasureRelease(m.name, m.column, mean, lower.reshape(mean.shape),
                              upper.reshape(mean.shape), self.describe(mp, level))

    def _two_stage(self, mp: MeasurePlan[MeanParams], ts: TwoStage, rows: Rows,
                   rng: RandomSource, level: float, want_ci: bool) -> MeasureRelease:
        """The two stages (:meth:`TwoStage.draw`), then the combined estimate and interval
        (:mod:`dpframe.core.two_stage`); every noise was planned before the charge."""
        req = mp.requests[0]
        got = ts.draw(rows.values(req), rows.counts(req), req.unit, rng)
        s1, c1, s2, c2, j = got.s1, got.c1, got.s2, got.c2, got.split
        sum2, cnt2 = ts.candidates[j]
        s, c = ts.combine(s1, c1, s2, c2, j)
        bounds = mp.params.bounds
        mean = mean_estimate(s, c, bounds)
        mid = (bounds[0] + bounds[1]) / 2
        if want_ci:
            lo_r, hi_r = two_stage_interval(ts, s1, c1, s2, c2, j, level, mean - mid)
        else:
            lo_r, hi_r = first_order(ts, s, c, j, level)
            lo_r, hi_r = np.minimum(lo_r, mean.reshape(-1) - mid), np.maximum(
                hi_r, mean.reshape(-1) - mid)
        lower = np.clip(mid + lo_r, *bounds).reshape(mean.shape)
        upper = np.clip(mid + hi_r, *bounds).reshape(mean.shape)
        d = self.describe(mp, level)
        # stage 2's split, picked by the pilot (post-processing): provenance states it
        d["released"] = {"stage2_count_share": float(ts.shares[j]),
                         "stage2_sum_noise_scale": sum2.scale,
                         "stage2_count_noise_scale": cnt2.scale}
        m = mp.measure
        return MeasureRelease(m.name, m.column, mean, lower, upper, d)

    def clamp_bounds(self, mp: MeasurePlan[MeanParams]) -> tuple[float, float] | None:
        """The declared bounds (the plan's params)."""
        return mp.params.bounds

    def describe_parts(self, mp: MeasurePlan[MeanParams], level: float) -> dict[str, object]:
        """The count's noise (:func:`describe_ratio`) and ``ci_half_width_times_rows``: the
        interval's public bound over ``n`` rows (a mean's half-width is about this / n; the
        release carries its own interval). A two-stage mean adds ``two_stage``: the pilot's
        share, rho and scales, stage 2's rho, candidate count shares and scales (the one
        chosen is in the release's own description) and the candidate its event states."""
        noise, count_noise = mp.additive("sum"), mp.additive("count")
        ts = mp.params.two_stage
        if ts is None:
            return {**describe_ratio(noise, count_noise, level),
                    "ci_half_width_times_rows": mean_half_width_numerator(
                        noise, count_noise, mp.params.bounds, level)}
        return {**describe_ratio(noise, count_noise, level),
                "ci_half_width_times_rows": ts.numerator(level),
                "two_stage": describe_two_stage(ts)}

    def describe(self, mp: MeasurePlan[MeanParams], level: float) -> dict[str, object]:
        """The generic description; a two-stage mean's ``noise_scale`` and ``rho`` are those
        of the parts its event states (stage 2's candidate that dominates the others), and
        ``rho`` the whole measure's."""
        d = super().describe(mp, level)
        ts = mp.params.two_stage
        if ts is not None:
            d["rho"] = float(ts.rho)
        return d

    def joint_parts(self, mp: MeasurePlan[MeanParams], level: float) -> dict[str, object]:
        """A ratio's interval depends on the private count (``ci_half_width`` is None); its
        public bound over ``n`` rows is ``ci_half_width_times_rows / n``."""
        role = mp.joint()
        assert role is not None
        h = (mp.params.hi - mp.params.lo) / 2
        assert role.count is not None
        spec = role.release.spec
        return {"count_noise_scale": spec.radius_scale(role.count),
                "count_ci_half_width": spec.half_width(role.count, level),
                "sum_ci_half_width": spec.half_width(role.value, level), "ci_half_width": None,
                "ci_half_width_times_rows": float(joint_pivot(role, level, h)(np.array([h]))[0])}

    def half_width(self, mp: MeasurePlan[MeanParams], level: float, min_rows: int | None
                   ) -> float:
        role = mp.joint()
        width = mp.params.hi - mp.params.lo
        if role is not None and min_rows is not None:
            a = float(joint_pivot(role, level, width / 2)(np.array([width / 2]))[0])
            return min(a / min_rows, width)
        if mp.params.two_stage is not None and min_rows is not None:
            return min(mp.params.two_stage.numerator(level) / min_rows, width)
        if min_rows is None:
            raise ValidationError(
                "accuracy= for a mean needs min_rows=: the interval of a mean shrinks with its "
                "number of rows, which is private; declare a lower bound you know (e.g. "
                "min_rows=1000) and every group with at least that many rows meets the target")
        return mean_half_width_bound(mp.additive("sum"), mp.additive("count"),
                                     mp.params.bounds, min_rows, level)


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


def describe_two_stage(ts: TwoStage) -> dict[str, object]:
    """A two-stage plan's public description (no data: the chosen split is the release's)."""
    sums = [a.scale for a, _ in ts.candidates]
    counts = [b.scale for _, b in ts.candidates]
    return {"pilot_share": float(ts.pilot_share), "rho": float(ts.rho),
            "pilot": {"rho": float(ts.rho * ts.pilot_share),
                      "sum_noise_scale": ts.pilot_sum.scale,
                      "count_noise_scale": ts.pilot_count.scale},
            "stage2": {"rho": float(ts.rho2),
                       "count_share": [float(ts.shares[0]), float(ts.shares[-1])],
                       "sum_noise_scale": [min(sums), max(sums)],
                       "count_noise_scale": [min(counts), max(counts)],
                       "split": "the count's share of rho_2 minimising (V_S + R^2 V_C)(1 + "
                                "3 V_C / N^2), V the combined variances, R^2 and N^2 the "
                                "pilot's mean squared centred mean and count (Lemma S, "
                                "dpframe.core.two_stage)",
                       "stated_count_share": float(ts.shares[ts.stated])},
            "combined": "inverse variance of the two stages' sums and counts"}


MEAN = Mean()
