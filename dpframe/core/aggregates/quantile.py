"""``quantile`` (and ``median``, ``max``, ``min``): the exponential mechanism on a public grid.

Privacy: candidates are a public grid over the declared bounds (linear, or log-spaced for
bounds estimation). The utility of a candidate is minus the rank error of the quantile level
``q = a/b``: ``-|(b - a) below - a above|``, whose sensitivity is
:func:`~dpframe.core.sensitivity.quantile_utility_sensitivity`; permute-and-flip with exact
Bernoulli sampling is eps-DP (McKenna and Sheldon 2020). Grouped: each group is released with
``eps / k`` (``k`` the groups a unit can touch).
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ValidationError
from ..compute import AggregateRequest
from ..measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..mechanisms import ExponentialSpec
from ..rng import RandomSource
from ..sensitivity import quantile_group_share, quantile_utility_sensitivity

if TYPE_CHECKING:
    from ..query import Measure, Query

#: Largest denominator of a quantile level (utilities stay exact integers).
MAX_LEVEL_DENOMINATOR = 1000

#: Most candidates of a quantile's grid (``resolution=``).
MAX_GRID = 1_000_000

#: The names whose level is fixed (the others take ``q``).
LEVELS: dict[str, Fraction] = {"max": Fraction(1), "min": Fraction(0), "median": Fraction(1, 2)}

#: Smallest magnitude of a log-spaced candidate grid, relative to its largest.
LOG_GRID_RANGE = 1e-15


def log_candidates(lo: float, hi: float, n: int) -> np.ndarray:
    """``n`` candidates in ``[lo, hi]`` (``lo < 0 < hi``), log-spaced on each side of 0 (and 0
    itself): the same relative resolution for magnitudes from ``LOG_GRID_RANGE * max(|lo|,
    |hi|)`` up, for quantiles of a column whose scale is unknown (bounds estimation). Public:
    a function of the bounds and ``n`` only."""
    if not lo < 0 < hi or n < 5:
        raise ValidationError("a log-spaced grid needs bounds around 0 and at least 5 points")
    side = (n - 1) // 2
    tiny = max(-lo, hi) * LOG_GRID_RANGE
    pos = np.geomspace(tiny, hi, side)
    neg = -np.geomspace(tiny, -lo, n - 1 - side)[::-1]
    return np.concatenate([neg, [0.0], pos])


class Quantile(Aggregate):
    op = "quantile"
    names = ("max", "min", "median", "quantile")
    summary = "a quantile of values clamped to the declared bounds, on a public grid"
    exponential = True
    mechanism_pages = ("exponential",)

    def arguments(self, name: str) -> tuple[str, ...]:
        return () if name in LEVELS else ("q",)

    def check(self, m: Measure, query: Query) -> None:
        super().check(m, query)
        if type(m.q) is not Fraction or not (0 <= m.q <= 1):
            raise ValidationError("quantile level q must be in [0, 1] (a Fraction: use "
                                  "quantile_level(q))")
        if m.q.denominator > MAX_LEVEL_DENOMINATOR:
            raise ValidationError("quantile level q must be a fraction with denominator "
                                  f"<= {MAX_LEVEL_DENOMINATOR} (use quantile_level(q))")
        if isinstance(m.grid, bool) or not isinstance(m.grid, numbers.Integral) or not (
                2 <= m.grid <= MAX_GRID):
            raise ValidationError("resolution must be an integer between 2 and 1e6 (the "
                                  "candidate grid's points)")

    def cells(self, m: Measure) -> int:
        return m.grid

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan:
        assert m.q is not None and m.column is not None
        lo, hi = ctx.query.bounds_of(m.column)
        cands = (log_candidates(float(lo), float(hi), m.grid) if m.log_grid
                 else np.linspace(float(lo), float(hi), m.grid))
        req = AggregateRequest("grid", m.column, float(lo), float(hi),
                               edges=tuple(cands.tolist()))
        usens = quantile_utility_sensitivity(ctx.relation, m.q, ctx.contribution)
        per_group_eps = (eps * quantile_group_share(ctx.relation, ctx.contribution)
                         if ctx.grouped else eps)
        em = ExponentialSpec(per_group_eps, usens, m.grid)
        return MeasurePlan(m, eps, delta, [req], em=em, candidates=cands,
                           bounds=(float(lo), float(hi)))

    def release(self, mp: MeasurePlan, rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        m = mp.measure
        assert mp.em is not None and mp.candidates is not None and m.q is not None
        cells = rows.values(mp.requests[0])  # [groups, candidates]
        below = np.concatenate([np.zeros((cells.shape[0], 1), dtype=np.int64),
                                np.cumsum(cells, axis=1)[:, :-1]], axis=1)
        above = cells.sum(axis=1, keepdims=True) - below - cells
        qn, qd = m.q.numerator, m.q.denominator
        idx = mp.em.choose(-np.abs((qd - qn) * below - qn * above), rng)
        vals = mp.candidates[idx]
        nan = np.full(vals.shape, np.nan)
        return MeasureRelease(m.name, m.column, vals, nan, nan, self.describe(mp, level))

    def describe(self, mp: MeasurePlan, level: float) -> dict[str, object]:
        """The grid and the rank error of the exponential mechanism at ``level``."""
        m, em = mp.measure, mp.em
        assert em is not None and mp.bounds is not None
        d = mp.describe_common()
        d.update(candidates=em.n_candidates, utility_sensitivity=em.utility_sensitivity,
                 rank_error=em.utility_error(level) / max(1, (m.q or Fraction(1)).denominator),
                 grid_step=None if m.log_grid else
                 float((mp.bounds[1] - mp.bounds[0]) / (em.n_candidates - 1)))
        if m.log_grid and mp.candidates is not None:
            pos = mp.candidates[mp.candidates > 0]
            d["grid"] = "log"
            d["grid_relative_step"] = float(pos[1] / pos[0] - 1) if pos.size > 1 else None
        return d


QUANTILE = Quantile()
