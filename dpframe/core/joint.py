"""Which measures of a query share one joint K-norm release (:mod:`dpframe.core.knorm`).

With pure-DP noise, the counts, sums, means, variances and deviations of one query are
released together: their
budgets (shares of epsilon) are pooled into one K-norm release with a box K over the distinct
coordinates they need, and each measure reads its values from that one draw
(post-processing). Sequential composition with the query's other measures is unchanged: the
joint release is charged the sum of the shares it replaces, so the query's charge is its
epsilon, as before.

Coordinates (each at most :data:`~dpframe.core.knorm.MAX_COORDINATES`, else nothing is
joined):

* ``"rows"``: rows per group (``count()``); ``"count:c"``: non-missing values of ``c``.
* ``"sum:c"``: the sum of ``c``'s values clamped and centred on the bounds' midpoint (one
  row moves it by at most ``h``, half the bounds' width), in fixed point exactly as a mean's.
  A mean of ``c`` is ``mid + sum:c / count:c``; a sum is ``sum:c + mid * count:c`` (when
  ``count:c`` is there anyway: a mean or a count of ``c`` in the query, or ``0`` outside the
  bounds).
* ``"sum0:c"``: the same centred sum read over every row, a missing value counting as 0
  (which the bounds hold, so every row's integer stays in ``[ilo, ihi]``): a sum of ``c``
  is then ``sum0:c + mid * rows``, sharing the rows' count with ``count()`` and the other
  sums. Used for a sum when ``0`` is within the bounds and no mean or count of ``c`` needs
  ``count:c``.
* ``"sq:c"``: the sum of shifted squares ``(x - mid)^2 - h^2/2`` of a variance or deviation
  (one row moves it by at most ``h^2/2``), beside ``sum:c`` and ``count:c``.

Joined when the query is not Gaussian, has a mean, var or std, or two of these measures (a lone
count or sum is best released alone: its Laplace noise has no count to carry), and the joint
release gives each joined measure no more noise variance than its own planned release would
(public: noise parameters only; weights that favour one measure can make its own release
better). Else its means alone, on the same condition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np

from .exact.compute import AggregateRequest, fixed_point_request, square_request
from .knorm import (
    MAX_COORDINATES,
    JointRelease,
    JointRole,
    JointSource,
    box_norm_spec,
    coordinate,
)
from .measure import MeasurePlan, PlanContext
from .noise.mechanisms import NoiseSpec
from .query import Measure

#: The ops a joint release serves.
JOINABLE = frozenset({"count", "sum", "mean", "var", "std"})
#: The ops that need a column's own count (``count:c``) and those that need its centred sum.
_COUNTED = ("mean", "var", "std", "count")
_SUMMED = ("mean", "var", "std", "sum")
#: Ratios of sums over a count: joined even alone (their count is theirs to carry).
_RATIOS = ("mean", "var", "std")


def _sum_request(ctx: PlanContext, column: str) -> AggregateRequest:
    lo, hi = ctx.query.bounds_of(column)
    return fixed_point_request(column, lo, hi, (lo + hi) / 2, False, with_count=True)


def _zero_inside(ctx: PlanContext, column: str) -> bool:
    lo, hi = ctx.query.bounds_of(column)
    return lo <= 0 <= hi


def _fill(req: AggregateRequest) -> int:
    """The fixed-point integer of the value 0 (inside the bounds), as a backend computes it."""
    raw = int(np.rint((0.0 - req.shift) * req.scale))
    return min(max(raw, req.ilo), req.ihi)


class _Builder:
    """Collects the distinct coordinates of the joined measures (in first-use order)."""

    def __init__(self, ctx: PlanContext) -> None:
        self.ctx = ctx
        self.coords: dict[str, tuple[JointSource, Fraction, Fraction, bool]] = {}
        s = ctx.count_sensitivity()
        self.count_width = s.l1
        self.changed = s.changed
        per = Fraction(ctx.contribution.cap)
        self.sum_rows = per if ctx.relation == "add_remove" else 2 * per

    def count(self, name: str, source: JointSource) -> str:
        self.coords.setdefault(name, (source, self.count_width, Fraction(1), True))
        return name

    def centred(self, name: str, source: JointSource) -> str:
        req = source.request
        m = max(abs(req.ilo), abs(req.ihi)) * req.unit
        self.coords.setdefault(name, (source, self.sum_rows * m, req.unit, False))
        return name


def _count_role(m: Measure, b: _Builder, summed: set[str | None]) -> str:
    """A count's coordinate: the rows, or a column's non-missing values (read from its
    centred sum's request when the query has one: the same number)."""
    if m.column is None:
        return b.count("rows", JointSource(AggregateRequest("rows"), "values"))
    src = (JointSource(_sum_request(b.ctx, m.column), "counts") if m.column in summed
           else JointSource(AggregateRequest("nonnull", m.column), "values"))
    return b.count(f"count:{m.column}", src)


def _sum_role(m: Measure, b: _Builder, meaned: set[str | None]) -> tuple[str, str, float]:
    """A sum's or a mean's (centred sum, count, midpoint) coordinates."""
    assert m.column is not None
    req = _sum_request(b.ctx, m.column)
    if m.op == "sum" and m.column not in meaned and _zero_inside(b.ctx, m.column):
        rows = AggregateRequest("rows")
        v = b.centred(f"sum0:{m.column}", JointSource(req, "values", rows=rows,
                                                      fill=_fill(req)))
        return v, b.count("rows", JointSource(rows, "values")), req.shift
    v = b.centred(f"sum:{m.column}", JointSource(req, "values"))
    c = b.count(f"count:{m.column}", JointSource(req, "counts"))
    if m.op in ("var", "std"):  # and the shifted squares (the centred sum beside them)
        lo, hi = b.ctx.query.bounds_of(m.column)
        v = b.centred(f"sq:{m.column}", JointSource(square_request(m.column, lo, hi), "values"))
    return v, c, req.shift


def _roles(plans: Sequence[MeasurePlan], b: _Builder
           ) -> list[tuple[str, str | None, float]]:
    """Each joined measure's (value, count, shift) coordinates, registering them."""
    meaned: set[str | None] = {mp.measure.column for mp in plans
                               if mp.measure.op in _COUNTED and mp.measure.column}
    summed: set[str | None] = {mp.measure.column for mp in plans if mp.measure.op in _SUMMED}
    return [(_count_role(mp.measure, b, summed), None, 0.0) if mp.measure.op == "count"
            else _sum_role(mp.measure, b, meaned) for mp in plans]


def join_measures(ctx: PlanContext, plans: list[MeasurePlan]) -> list[MeasurePlan]:
    """The query's plans with its counts, sums and means sharing one K-norm release, when
    that gives every one of them no more noise variance than its own planned release (a
    public comparison, :func:`_no_worse`); else its means alone, on the same condition;
    else ``plans`` unchanged."""
    for idx in _candidates(ctx, plans):
        joined = _join(ctx, plans, idx)
        if joined is not None and all(_no_worse(plans[i], joined[i]) for i in idx):
            return joined
    return plans


def _candidates(ctx: PlanContext, plans: list[MeasurePlan]) -> list[list[int]]:
    """The sets of measures to try joining, in order: every count, sum, mean, var and std,
    then the means, vars and stds alone; each a ratio or at least two measures (a lone count
    or sum has no count to carry). None with Gaussian noise."""
    if ctx.query.mechanism == "gaussian":
        return []
    joinable = [i for i, mp in enumerate(plans) if mp.measure.op in JOINABLE]
    means = [i for i in joinable if plans[i].measure.op in _RATIOS]
    return [idx for idx in (joinable, means)
            if idx and (len(idx) >= 2 or plans[idx[0]].measure.op in _RATIOS)]


def _join(ctx: PlanContext, plans: list[MeasurePlan], idx: list[int]
          ) -> list[MeasurePlan] | None:
    """``plans`` with the measures ``idx`` in one joint release (None: too many coordinates)."""
    b = _Builder(ctx)
    roles = _roles([plans[i] for i in idx], b)
    if len(b.coords) > MAX_COORDINATES:
        return None
    epsilon = sum((plans[i].epsilon for i in idx), Fraction(0))
    coords = [coordinate(name, width, integer, unit)
              for name, (_, width, unit, integer) in b.coords.items()]
    spec = box_norm_spec(coords, epsilon, b.changed)
    release = JointRelease(spec, tuple(src for src, *_ in b.coords.values()),
                           tuple(Fraction(1) if integer else unit
                                 for _, _, unit, integer in b.coords.values()),
                           tuple(plans[i].measure.name for i in idx))
    out = list(plans)
    for i, (value, count, shift) in zip(idx, roles, strict=True):
        out[i] = replace(plans[i], epsilon=epsilon, requests=release.requests,
                         mechanisms={"joint": JointRole(release, value, count, shift,
                                                        plans[i].epsilon)})
    return out


def _variance(mp: MeasurePlan) -> float:
    """The noise variance of a count's or sum's value, or of a mean's ratio numerator at the
    worst shifted mean ``r = h`` (``z_s - h z_c``), by the continuous laws: public, from the
    plan."""
    op, role = mp.measure.op, mp.joint()
    h = (mp.params[1] - mp.params[0]) / 2 if op in ("mean", "var", "std") else 0.0
    if role is not None:
        spec = role.release.spec
        v = {"value": spec.std(role.value) ** 2,
             "count": spec.std(role.count) ** 2 if role.count is not None else 0.0,
             "sum": spec.std(f"sum:{mp.measure.column}") ** 2 if op in ("var", "std") else 0.0}
    else:
        names = {"count": ("count", None, None), "sum": ("sum", None, None),
                 "mean": ("sum", "count", None)}.get(op, ("squares", "count", "sum"))
        v = {k: _laplace_variance(mp.additive(n)) if n else 0.0
             for k, n in zip(("value", "count", "sum"), names, strict=True)}
    if op in ("var", "std"):  # W = z_q - 2 m1 z_s + k z_c at m1 = h, k = 3 h^2 / 2
        return v["value"] + 4 * h * h * v["sum"] + (1.5 * h * h) ** 2 * v["count"]
    times = h if op == "mean" else (role.shift if role is not None else 0.0)
    return v["value"] + times * times * v["count"]


def _laplace_variance(spec: NoiseSpec) -> float:
    """The continuous law's variance, ``2 b**2`` (the joint side is compared by its continuous
    law too: a discrete Laplace of tiny scale has variance near 0, which would say nothing)."""
    return 2 * spec.scale**2


def _no_worse(own: MeasurePlan, joined: MeasurePlan) -> bool:
    """Whether the joint release gives the measure no more noise than its own plan."""
    return _variance(joined) <= _variance(own) * (1 + 1e-9)


__all__ = ["JOINABLE", "join_measures"]
