"""``quantile`` (and ``median``, ``max``, ``min``): the exponential mechanism over fine cells.

Privacy: the candidates are the ``n`` equal cells of a public grid over the declared bounds
``[L, U]`` (``resolution=`` cells, 2**16 by default; an integer column whose integers in the
bounds fit uses the integers themselves). Backends only count the clamped values per cell. For
the level ``q = a/b``, the utility of cell ``c`` holding ``N`` values with ``B`` below and ``A``
above is minus the distance, in units of ``1/b`` rank, from ``q n`` to the ranks ``[B, B + N]``
that a point of the cell can have: ``-max(0, b B - a n, a n - b (B + N))``. Adding or removing
a row moves ``B`` or ``B + N`` by one and ``a n`` by ``a``: the sensitivity is ``max(a, b - a)``
per row (:func:`~dpframe.core.sensitivity.quantile_utility_sensitivity`). Permute-and-flip over
the cells, sampled exactly (McKenna and Sheldon 2020), is eps-DP; the released value is uniform
inside the chosen cell (post-processing). With cells far narrower than the data's spacing this
is Smith's (2011) continuous mechanism on the data rounded to the cells: every interval between
two values weighted by its length (its number of cells), at twice Smith's rate for the median.
Grouped: each group is released with ``eps * R / T`` (:func:`quantile_group_share`).

Interval (``ci=``): from the same charge, the estimate gets ``eps/2`` and two more mechanisms,
``eps/4`` each, target the ranks ``q n - t`` and ``q n + t`` of the data padded with ``t``
public phantom rows at each end (so the targets are always attained; the padding is constant,
the sensitivity unchanged). ``t`` (ranks) is public: ``(m + 2) exp(-rate b t) <= alpha / 2``,
``m + 2`` the candidates, ``rate`` the acceptance rate actually sampled. Permute-and-flip
outputs a candidate whose utility gap is ``g`` with probability at most ``exp(-rate g)``, so
with probability ``>= 1 - alpha/2`` the lower cell has fewer than ``q n`` values below it, and
its left edge is at most every empirical q-quantile of the clamped data; the same for the upper
cell's right edge. The interval covers the clamped data's empirical quantile (the whole set of
points with at most ``q n`` values below and at least ``q n`` at or below) with probability
``>= 1 - alpha`` (up to float rounding of cell edges).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...errors import ValidationError
from ..exact.compute import DEFAULT_QUANTILE_CELLS, MAX_CELLS, AggregateRequest
from ..joint_quantiles import (
    MAX_JOINT_CANDIDATES,
    JointQuantileSpec,
    common_denominator,
    joint_utility_sensitivity,
)
from ..measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..noise.mechanisms import ExponentialSpec
from ..noise.rng import RandomSource
from ..noise.samplers import uniform_unit
from ..query import MAX_LEVEL_DENOMINATOR
from ..sensitivity import quantile_group_share, quantile_utility_sensitivity

if TYPE_CHECKING:
    from ..query import Measure, Query

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: Largest denominator of a quantile level (utilities stay exact integers).

#: Most candidates of a quantile's grid (``resolution=``).
MAX_GRID = 1_000_000

#: The names whose level is fixed (the others take ``q``).
LEVELS: dict[str, Fraction] = {"max": Fraction(1), "min": Fraction(0), "median": Fraction(1, 2)}

#: Smallest magnitude of a log-spaced candidate grid, relative to its largest.
LOG_GRID_RANGE = 1e-15

#: Shares of a quantile's epsilon when ``ci=`` is asked: the estimate, then each endpoint.
CI_SPLIT = (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4))

#: Cells of a joint release of several levels at the default resolution (JointExp's dynamic
#: program costs ``O(m C log C)`` for ``C`` candidates: :mod:`dpframe.core.joint_quantiles`).
JOINT_CELLS = 1 << 13
#: Most levels of one joint release, and the largest common denominator of its levels.
MAX_JOINT_LEVELS = 64
MAX_JOINT_DENOMINATOR = 1_000_000


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


@dataclass(frozen=True)
class CellGrid:
    """The public cells of a quantile: ``n`` equal cells over ``[lo, hi]``; for an integer
    column (``integer``), one cell per integer ``first + i``, the cells spanning ``[first - 1/2,
    first + n - 1/2]``. ``bounds`` are the declared bounds (the padding's values)."""

    lo: float
    hi: float
    n: int
    integer: bool
    bounds: tuple[float, float]

    @property
    def width(self) -> float:
        return (self.hi - self.lo) / self.n

    def request(self, column: str) -> AggregateRequest:
        return AggregateRequest("cells", column, self.lo, self.hi, ncells=self.n)

    def _edge(self, idx: I64, right: bool) -> F64:
        """Left (or right) edge of each cell ``idx``; ``-1`` and ``n`` (the padding) are the
        declared bounds. An integer cell's edges are its integer."""
        i = np.asarray(idx, dtype=np.int64)
        inner = np.clip(i, 0, self.n - 1)
        if self.integer:
            e = self.lo + 0.5 + inner
        else:
            e = np.minimum(self.lo + (inner + (1 if right else 0)) * self.width, self.hi)
        return np.where(i < 0, self.bounds[0], np.where(i >= self.n, self.bounds[1], e))

    def lower_edge(self, idx: I64) -> F64:
        return self._edge(idx, False)

    def upper_edge(self, idx: I64) -> F64:
        return self._edge(idx, True)

    def value(self, idx: I64, rng: RandomSource) -> F64:
        """The released value of each chosen cell: its integer, or a uniform point in it."""
        i = np.asarray(idx, dtype=np.int64)
        if self.integer:
            return self.lo + 0.5 + i.astype(np.float64)
        pos = self.lo + (i + uniform_unit(i.size, rng)) * self.width
        return np.clip(pos, self.lo, self.hi)


def cell_grid(lo: float, hi: float, resolution: int, integer_column: bool) -> CellGrid:
    """The cells of a quantile over the declared ``[lo, hi]``: the integers when the column is
    integral and they number at most ``resolution``, else ``resolution`` equal cells. Public: a
    function of the bounds, the resolution and the column's dtype."""
    first, last = math.ceil(lo), math.floor(hi)
    if integer_column and first <= last and last - first + 1 <= resolution:
        return CellGrid(first - 0.5, last + 0.5, last - first + 1, True, (lo, hi))
    return CellGrid(lo, hi, resolution, False, (lo, hi))


def _level_ok(q: object) -> bool:
    """A level as a Query holds it: a Fraction in [0, 1] with a denominator at most
    :data:`MAX_LEVEL_DENOMINATOR` (``quantile_level`` makes one)."""
    return type(q) is Fraction and 0 <= q <= 1 and q.denominator <= MAX_LEVEL_DENOMINATOR


@dataclass(frozen=True)
class QuantileParams:
    """A quantile measure's own arguments (public, checked when built): its level ``q``
    (exact: ``quantile_level(q)``), the ``grid`` of candidate cells (``resolution=``),
    ``log_grid`` (log-spaced candidate points, for bounds estimation) and ``levels`` (several
    levels released jointly; ``q`` is then the first)."""

    q: Fraction
    grid: int = DEFAULT_QUANTILE_CELLS
    log_grid: bool = False
    levels: tuple[Fraction, ...] | None = None

    def __post_init__(self) -> None:
        q = self.q
        if type(q) is not Fraction or not (0 <= q <= 1):
            raise ValidationError("quantile level q must be in [0, 1] (a Fraction: use "
                                  "quantile_level(q))")
        if q.denominator > MAX_LEVEL_DENOMINATOR:
            raise ValidationError("quantile level q must be a fraction with denominator "
                                  f"<= {MAX_LEVEL_DENOMINATOR} (use quantile_level(q))")
        if isinstance(self.grid, bool) or not isinstance(self.grid, numbers.Integral) or not (
                2 <= self.grid <= MAX_GRID):
            raise ValidationError("resolution must be an integer between 2 and 1e6 (the "
                                  "candidate cells)")
        if self.levels is not None:
            self._check_levels(self.levels)

    def _check_levels(self, levels: tuple[Fraction, ...]) -> None:
        """Several levels: each a level as ``q`` is, at most :data:`MAX_JOINT_LEVELS`, a
        common denominator up to :data:`MAX_JOINT_DENOMINATOR`, on cells (public)."""
        if not isinstance(levels, tuple) or not 1 <= len(levels) <= MAX_JOINT_LEVELS:
            raise ValidationError(f"quantile levels: between 1 and {MAX_JOINT_LEVELS} of them")
        if not all(_level_ok(q) for q in levels):
            raise ValidationError("each quantile level must be in [0, 1] (a Fraction with "
                                  f"denominator <= {MAX_LEVEL_DENOMINATOR})")
        if common_denominator(levels) > MAX_JOINT_DENOMINATOR:
            raise ValidationError("quantile levels: their common denominator must be at most "
                                  f"{MAX_JOINT_DENOMINATOR} (round them, e.g. to percents)")
        if self.log_grid:
            raise ValidationError("several levels are not available on a log-spaced grid")


#: Cells per group of a quantile with private keys at the default resolution: their number
#: is unknown before the data is read, so each group holds 2**11 counters (16 KiB), not 2**16
#: (512 KiB): a release over 10,000 private keys stays within 160 MiB.
PRIVATE_KEY_CELLS = 1 << 11


def grid_cells(m: Measure[QuantileParams], groups: int) -> int:
    """The cells of a quantile over ``groups`` declared groups (0: private keys, unknown):
    ``resolution=``; at the default (2**16), fewer (a power of two) when the groups would need
    more than ``MAX_CELLS`` counters in all, and :data:`PRIVATE_KEY_CELLS` with private keys.
    A function of the query only (declared keys are public)."""
    p = m.params
    if p.log_grid or p.grid != DEFAULT_QUANTILE_CELLS:
        return p.grid
    if groups == 0:
        return min(p.grid, PRIVATE_KEY_CELLS)
    fit = MAX_CELLS // max(1, groups)
    return max(2, min(p.grid, 1 << max(0, fit.bit_length() - 1)))


@dataclass(frozen=True)
class QuantilePlanParams:
    """A quantile plan's public parameters (:attr:`MeasurePlan.params`): its ``cells`` or,
    for bounds estimation, its log-spaced ``candidates`` (points); with ``ci=``, the rank
    offset ``t`` of the interval's two mechanisms (``"ci_lower"`` and ``"ci_upper"``; also
    the padding)."""

    cells: CellGrid | None = None
    candidates: F64 | None = None
    t: int | None = None
    #: Several levels released jointly: their order as asked (indices into the sorted levels).
    order: tuple[int, ...] | None = None


def rank_offset(em: ExponentialSpec, b: int, level: float) -> int:
    """The smallest ``t >= 1`` (ranks) with ``m exp(-rate b t) <= (1 - level) / 2``, ``m`` the
    candidates and ``rate`` the acceptance rate ``em`` samples with (module docstring)."""
    a, d = em.acceptance_rate()
    rate_b = Fraction(a, d) * b
    need = math.log(2 * em.n_candidates / (1 - level))
    return max(1, math.ceil(need / float(rate_b) * (1 + 1e-12)))


def rank_utilities(cells: I64, q: Fraction, pad: int = 0, shift: int = 0) -> I64:
    """Integer utilities (scaled by ``b``) of each cell per group, for the target rank
    ``pad + q n + shift`` of the data padded with ``pad`` rows before the first cell and after
    the last (two extra candidates, first and last). ``-max(0, b B - target, target - b (B +
    N))``: sensitivity ``max(a, b - a)`` per row whatever ``pad`` and ``shift``."""
    a, b = q.numerator, q.denominator
    c = np.atleast_2d(np.asarray(cells, dtype=np.int64))
    if pad:
        side = np.full((c.shape[0], 1), pad, dtype=np.int64)
        c = np.concatenate([side, c, side], axis=1)
    n = c.sum(axis=1, keepdims=True) - 2 * pad
    below = np.cumsum(c, axis=1) - c
    target = a * n + b * (pad + shift)
    return -np.maximum(0, np.maximum(b * below - target, target - b * (below + c)))


class Quantile(Aggregate[QuantilePlanParams]):
    op = "quantile"
    names = ("max", "min", "median", "quantile")
    summary = "a quantile of values clamped to the declared bounds, on fine public cells"
    exponential = True
    mechanism_pages = ("exponential", "quantiles")
    main = "choice"
    params_type = QuantileParams

    def arguments(self, name: str) -> tuple[str, ...]:
        return () if name in LEVELS else ("q",)

    def check(self, m: Measure[QuantileParams], query: Query) -> None:
        """The column's bounds; with ``ci=``, a single level on cells (the arguments checked
        themselves when built: :class:`QuantileParams`)."""
        super().check(m, query)
        if query.ci is None:
            return
        if m.params.log_grid:
            raise ValidationError("ci= is not available for bounds estimation")
        if m.params.levels is not None:
            raise ValidationError("ci= with several quantile levels is not available: ask "
                                  "quantile(column, q, ci=...) for one level")

    def levels(self, m: Measure[QuantileParams]) -> tuple[Fraction, ...] | None:
        return m.params.levels

    def cells(self, m: Measure[QuantileParams], groups: int = 1) -> int:
        return grid_cells(m, groups)

    def plan(self, ctx: PlanContext, m: Measure[QuantileParams], eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[QuantilePlanParams]:
        assert m.column is not None
        p = m.params
        lo, hi = ctx.query.bounds_of(m.column)
        usens = quantile_utility_sensitivity(ctx.relation, p.q, ctx.contribution)
        per_group_eps = (eps * quantile_group_share(ctx.relation, ctx.contribution)
                         if ctx.grouped else eps)
        if p.log_grid:  # bounds estimation: log-spaced candidate points
            cands = log_candidates(float(lo), float(hi), p.grid)
            req = AggregateRequest("grid", m.column, float(lo), float(hi),
                                   edges=tuple(cands.tolist()))
            em = ExponentialSpec(per_group_eps, usens, p.grid)
            return MeasurePlan(m, eps, delta, [req], {"choice": em},
                               QuantilePlanParams(candidates=cands))
        if p.levels is not None:
            return self._plan_joint(ctx, m, eps, delta, per_group_eps)
        grid = cell_grid(float(lo), float(hi), grid_cells(m, ctx.query.cell_groups),
                         ctx.column_kinds.get(m.column) in ("int", "bool"))
        if ctx.query.ci is None:
            return MeasurePlan(m, eps, delta, [grid.request(m.column)],
                               {"choice": ExponentialSpec(per_group_eps, usens, grid.n)},
                               QuantilePlanParams(grid))
        est, low, up = (per_group_eps * s for s in CI_SPLIT)
        lower = ExponentialSpec(low, usens, grid.n + 2)
        upper = ExponentialSpec(up, usens, grid.n + 2)
        t = max(rank_offset(lower, p.q.denominator, float(ctx.query.ci)),
                rank_offset(upper, p.q.denominator, float(ctx.query.ci)))
        return MeasurePlan(m, eps, delta, [grid.request(m.column)],
                           {"choice": ExponentialSpec(est, usens, grid.n), "ci_lower": lower,
                            "ci_upper": upper}, QuantilePlanParams(grid, t=t))

    def _plan_joint(self, ctx: PlanContext, m: Measure[QuantileParams], eps: Fraction,
                    delta: Fraction,
                    per_group_eps: Fraction) -> MeasurePlan[QuantilePlanParams]:
        """Several levels in one JointExp release over the cells (at most
        :data:`JOINT_CELLS` at the default resolution): :mod:`dpframe.core.joint_quantiles`."""
        asked = m.params.levels
        assert asked is not None and m.column is not None
        lo, hi = ctx.query.bounds_of(m.column)
        n = grid_cells(m, ctx.query.cell_groups)
        n = min(n, JOINT_CELLS if m.params.grid == DEFAULT_QUANTILE_CELLS
                else MAX_JOINT_CANDIDATES)
        grid = cell_grid(float(lo), float(hi), n,
                         ctx.column_kinds.get(m.column) in ("int", "bool"))
        order = sorted(range(len(asked)), key=lambda i: asked[i])
        levels = tuple(asked[i] for i in order)
        usens = joint_utility_sensitivity(ctx.relation, levels, ctx.contribution)
        spec = JointQuantileSpec(per_group_eps, usens, grid.n, levels, (0,) * len(levels))
        return MeasurePlan(m, eps, delta, [grid.request(m.column)], {"choice": spec},
                           QuantilePlanParams(grid, order=tuple(order)))

    def _release_joint(self, mp: MeasurePlan[QuantilePlanParams], cells: I64, rng: RandomSource,
                       level: float) -> MeasureRelease:
        """The chosen cells of every level, a uniform point in each, sorted along the levels
        (post-processing), then put back in the order the levels were asked."""
        grid, order = mp.params.cells, mp.params.order
        assert grid is not None and order is not None
        spec = mp.mechanisms["choice"]
        assert isinstance(spec, JointQuantileSpec)
        idx = spec.choose_joint(cells, rng)  # [groups, levels], nondecreasing
        vals = np.sort(grid.value(idx.reshape(-1), rng).reshape(idx.shape), axis=1)
        out = np.empty_like(vals)
        out[:, list(order)] = vals
        nan = np.full(out.shape, np.nan)
        return MeasureRelease(mp.measure.name, mp.measure.column, out, nan, nan,
                              self.describe(mp, level))

    def release(self, mp: MeasurePlan[QuantilePlanParams], rows: Rows, rng: RandomSource,
                level: float, want_ci: bool) -> MeasureRelease:
        m, em, t = mp.measure, mp.exponential(), mp.params.t
        q = m.params.q
        cells = rows.values(mp.requests[0])  # [groups, candidates]
        if mp.params.order is not None:
            return self._release_joint(mp, cells, rng, level)
        if mp.params.cells is None:
            return self._release_points(mp, cells, rng, level)
        grid = mp.params.cells
        vals = grid.value(em.choose(rank_utilities(cells, q), rng), rng)
        lower = upper = np.full(vals.shape, np.nan)
        if t is not None:
            iv_lower, iv_upper = mp.exponential("ci_lower"), mp.exponential("ci_upper")
            lo_idx = iv_lower.choose(rank_utilities(cells, q, t, -t), rng) - 1
            hi_idx = iv_upper.choose(rank_utilities(cells, q, t, t), rng) - 1
            lower = np.minimum(grid.lower_edge(lo_idx), vals)
            upper = np.maximum(grid.upper_edge(hi_idx), vals)
        return MeasureRelease(m.name, m.column, vals, lower, upper, self.describe(mp, level))

    def _release_points(self, mp: MeasurePlan[QuantilePlanParams], cells: I64, rng: RandomSource,
                        level: float) -> MeasureRelease:
        """The log-spaced candidate points of bounds estimation: a value counts at the first
        candidate >= it; utility minus the rank error of the candidate."""
        m, candidates = mp.measure, mp.params.candidates
        assert candidates is not None
        below = np.concatenate([np.zeros((cells.shape[0], 1), dtype=np.int64),
                                np.cumsum(cells, axis=1)[:, :-1]], axis=1)
        above = cells.sum(axis=1, keepdims=True) - below - cells
        qn, qd = m.params.q.numerator, m.params.q.denominator
        idx = mp.exponential().choose(-np.abs((qd - qn) * below - qn * above), rng)
        vals = candidates[idx]
        nan = np.full(vals.shape, np.nan)
        return MeasureRelease(m.name, m.column, vals, nan, nan, self.describe(mp, level))

    def clamp_bounds(self, mp: MeasurePlan[QuantilePlanParams]) -> tuple[float, float] | None:
        """The declared bounds: those of the cells (an integer grid's cells span half a unit
        beyond them), or of the log-spaced candidates' request."""
        if mp.params.cells is not None:
            return mp.params.cells.bounds
        req = mp.requests[0]
        return (req.lo, req.hi)

    @staticmethod
    def _rank_unit(mp: MeasurePlan[QuantilePlanParams], d: dict[str, object]) -> int:
        """The utility's unit of rank (the levels' denominator); a joint release also states
        its levels in ``d``."""
        em, m = mp.exponential(), mp.measure
        if isinstance(em, JointQuantileSpec):
            d.update(levels=[float(v) for v in (m.params.levels or ())], joint="JointExp")
            return common_denominator(em.levels)
        return max(1, m.params.q.denominator)

    def describe(self, mp: MeasurePlan[QuantilePlanParams], level: float) -> dict[str, object]:
        """The cells, the estimate's rank error at ``level`` and the interval's rank offset."""
        em, params = mp.exponential(), mp.params
        d = self.describe_common(mp)
        b = self._rank_unit(mp, d)
        d.update(candidates=em.n_candidates, utility_sensitivity=em.utility_sensitivity,
                 rank_error=em.utility_error(level) / b)
        if params.cells is not None:
            g = params.cells
            d.update(grid="integers" if g.integer else "cells", cells=g.n,
                     grid_step=1.0 if g.integer else g.width)
            if params.t is not None:
                d.update(ci_level=level, ci_rank_offset=params.t,
                         estimate_epsilon=float(em.epsilon),
                         ci_epsilon=float(mp.exponential("ci_lower").epsilon
                                          + mp.exponential("ci_upper").epsilon))
            return d
        d["grid_step"] = None
        if params.candidates is not None:
            pos = params.candidates[params.candidates > 0]
            d["grid"] = "log"
            d["grid_relative_step"] = float(pos[1] / pos[0] - 1) if pos.size > 1 else None
        return d


QUANTILE = Quantile()
