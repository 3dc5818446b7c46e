"""Release plans: from a validated Query to mechanisms, costs and requested exact aggregates.

A plan is computed from public information only (arguments, declared bounds and keys, the
neighbouring relation), so it can be shown before anything is spent (``explain`` / dry runs).
Budget split rules (documented in docs/privacy.md):

* ``agg`` with several aggregates: epsilon (and delta, and rho for Gaussian noise) is split in
  proportion to the aggregates' weights (equal by default): sequential composition.
* ``mean``: half of its share for the noisy count, half for the noisy shifted sum.
* ``keys="private"``: ``selection_share`` (1/2 by default) of epsilon for DP key selection, the
  rest for the aggregates; delta goes to key selection unless Gaussian noise needs half of it.
* groupby over disjoint groups: one charge (parallel composition), with sensitivities scaled by
  ``max_groups_per_unit`` (additive noise) or epsilon divided among the groups a unit can touch
  (per-group exponential mechanism).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from .accounting import PrivacyCost, poisson_subsampling, zcdp_to_approx_dp
from .intervals import (
    mean_estimate,
    mean_half_width_numerator,
    ratio_interval,
    variance_estimate,
    variance_interval,
)
from .mechanisms import ExponentialSpec, NoiseSpec, noise_spec, power_of_two_at_most, rho_for
from .query import Measure, Query
from .rng import RandomSource
from .sensitivity import (
    Contribution,
    Relation,
    count_sensitivity,
    groups_affected,
    histogram_sensitivity,
    key_selection_sensitivity,
    quantile_utility_sensitivity,
    sum_sensitivity,
)
from .values import sorted_order

ACCUMULATION_BITS = 32

RequestKind = Literal["rows", "nonnull", "fixed_sum", "bins", "grid", "distinct"]


@dataclass(frozen=True)
class AggregateRequest:
    """An exact aggregate a backend must compute per group (no noise, ever).

    * ``rows``: number of rows; ``nonnull``: non-missing values of ``column``.
    * ``fixed_sum``: sum of ``clip(rint((clip(x, lo, hi) - shift) / unit), ilo, ihi)`` over
      non-missing x, as exact integers (also returns the non-missing count). With ``center``,
      the value accumulated is ``(clip(x, lo, hi) - center)**2`` instead of ``clip(x, lo, hi)``
      (sums of squares, for variances).
    * ``bins``: counts per histogram bin (``edges``, ``right``, ``include_lowest``: exactly
      ``pd.cut``); values outside are dropped.
    * ``grid``: counts per candidate cell: a value goes to the first candidate >= clip(x).
    * ``distinct``: the set of (group, value hash) pairs of non-missing values (the backend's
      canonical hash: equal values hash equal in every block), whose size per group is the
      number of distinct values; blocks merge by union, not by sum.
    """

    kind: RequestKind
    column: str | None = None
    lo: float = 0.0
    hi: float = 0.0
    shift: float = 0.0
    unit: Fraction = Fraction(1)
    ilo: int = 0
    ihi: int = 0
    integer: bool = False
    edges: tuple[float, ...] = ()
    right: bool = True
    include_lowest: bool = False
    with_count: bool = False
    center: float | None = None

    @property
    def key(self) -> tuple[object, ...]:
        return (self.kind, self.column, self.lo, self.hi, self.shift, self.unit, self.edges,
                self.right, self.include_lowest, self.integer, self.with_count, self.center)


def fixed_point_request(column: str, lo: Fraction, hi: Fraction, shift: Fraction,
                        integer: bool, with_count: bool = False) -> AggregateRequest:
    """Fixed-point accumulation of clamped values: exact integer sums whose per-row bound holds
    by construction (the integer value is clipped after rounding), so float rounding can never
    push a sum past its sensitivity (PRIVACY.md)."""
    if integer and shift == 0:
        ilo, ihi = math.ceil(lo), math.floor(hi)
        if ilo > ihi:
            raise ValidationError(f"bounds of {column!r} contain no integer")
        return AggregateRequest("fixed_sum", column, float(lo), float(hi), 0.0, Fraction(1),
                                ilo, ihi, integer=True)
    m = max(abs(lo - shift), abs(hi - shift))
    unit = power_of_two_at_most(m) / (1 << ACCUMULATION_BITS)
    ilo = math.ceil((lo - shift) / unit)
    ihi = math.floor((hi - shift) / unit)
    return AggregateRequest("fixed_sum", column, float(lo), float(hi), float(shift), unit,
                            ilo, ihi, with_count=with_count)


def square_request(column: str, lo: Fraction, hi: Fraction) -> AggregateRequest:
    """Fixed-point sum of ``(clip(x, lo, hi) - mid)**2 - h**2 / 2`` (``mid`` the bounds'
    midpoint, ``h`` their half-width): each row's value lies in ``[-h**2/2, h**2/2]``, clipped
    after rounding like every fixed-point sum, so the sum's sensitivity follows from those
    bounds whatever float rounding did."""
    mid, h = (lo + hi) / 2, (hi - lo) / 2
    shift = h * h / 2
    unit = power_of_two_at_most(shift) / (1 << ACCUMULATION_BITS)
    ilo, ihi = math.ceil(-shift / unit), math.floor(shift / unit)
    return AggregateRequest("fixed_sum", column, float(lo), float(hi), float(shift), unit,
                            ilo, ihi, center=float(mid))


#: Smallest magnitude of a log-spaced candidate grid, relative to its largest.
LOG_GRID_RANGE = 1e-15


def log_candidates(lo: float, hi: float, n: int) -> npt.NDArray[np.float64]:
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


@dataclass
class MeasurePlan:
    """How one measure is released."""

    measure: Measure
    epsilon: Fraction
    delta: Fraction
    requests: list[AggregateRequest]
    noise: NoiseSpec | None = None          # count, sum, histogram; the sum part of a mean
    count_noise: NoiseSpec | None = None    # the count part of a mean, var or std
    square_noise: NoiseSpec | None = None   # the sum of squares of a var or std
    em: ExponentialSpec | None = None       # quantiles
    candidates: npt.NDArray[np.float64] | None = None
    bounds: tuple[float, float] | None = None

    @property
    def mechanism(self) -> str:
        if self.em is not None:
            return "exponential (permute-and-flip)"
        assert self.noise is not None
        kind = "geometric" if self.noise.kind == "laplace" and self.noise.integer else (
            "granular laplace" if self.noise.kind == "laplace" else "discrete gaussian")
        return kind

    def describe(self, level: float) -> dict[str, object]:
        """Public description: mechanism, scale, granularity, interval half-width."""
        d: dict[str, object] = {
            "aggregate": self.measure.name, "column": self.measure.column,
            "mechanism": self.mechanism, "epsilon": float(self.epsilon),
            "delta": float(self.delta),
        }
        if self.noise is not None:
            d.update(noise_scale=self.noise.scale, granularity=float(self.noise.granularity),
                     sensitivity=float(self.noise.sensitivity),
                     ci_level=level, ci_half_width=self.noise.half_width(level))
            if self.count_noise is not None:
                # a mean's (var's) interval is in the result's units and depends on the
                # private number of rows n: only its bound over n rows is public (a mean:
                # ci_half_width_times_rows / n); the released result carries its interval
                # (ci=). The sum's and count's own intervals stay.
                d.update(count_noise_scale=self.count_noise.scale,
                         count_ci_half_width=self.count_noise.half_width(level),
                         sum_ci_half_width=d["ci_half_width"], ci_half_width=None)
                if self.measure.op == "mean" and self.bounds is not None:
                    d["ci_half_width_times_rows"] = mean_half_width_numerator(
                        self.noise, self.count_noise, self.bounds, level)
            if self.square_noise is not None:
                d.update(square_noise_scale=self.square_noise.scale,
                         square_sensitivity=float(self.square_noise.sensitivity))
            if self.noise.rho is not None:
                d["rho"] = float(self.noise.rho)
        if self.em is not None:
            d.update(candidates=self.em.n_candidates,
                     utility_sensitivity=self.em.utility_sensitivity,
                     rank_error=self.em.utility_error(level)
                     / max(1, (self.measure.q or Fraction(1)).denominator),
                     grid_step=float((self.bounds[1] - self.bounds[0]) / (self.em.n_candidates - 1))
                     if self.bounds and not self.measure.log_grid else None)
            if self.measure.log_grid and self.candidates is not None:
                pos = self.candidates[self.candidates > 0]
                d["grid"] = "log"
                d["grid_relative_step"] = float(pos[1] / pos[0] - 1) if pos.size > 1 else None
        return d


@dataclass
class SelectionPlan:
    """DP key selection: noisy distinct-unit counts per key, released above a threshold."""

    noise: NoiseSpec
    threshold: int
    epsilon: Fraction
    delta: Fraction

    def describe(self) -> dict[str, object]:
        return {"mechanism": "geometric key selection", "epsilon": float(self.epsilon),
                "delta": float(self.delta), "noise_scale": self.noise.scale,
                "threshold": self.threshold}


@dataclass
class ReleasePlan:
    """Everything about a release that does not depend on the data."""

    query: Query
    relation: Relation
    measures: list[MeasurePlan]
    selection: SelectionPlan | None
    cost: PrivacyCost
    contribution: Contribution = field(default_factory=Contribution)

    @property
    def requests(self) -> list[AggregateRequest]:
        """Deduplicated exact aggregates to compute (always including row counts per group)."""
        seen: dict[tuple[object, ...], AggregateRequest] = {}
        for mp in self.measures:
            for r in mp.requests:
                seen.setdefault(r.key, r)
        return list(seen.values())

    @property
    def mechanism(self) -> str:
        return ", ".join(dict.fromkeys(mp.mechanism for mp in self.measures))

    def describe(self) -> dict[str, object]:
        level = self.query.ci or 0.95
        return {
            "relation": self.relation,
            "epsilon": float(self.query.epsilon), "delta": float(self.query.delta),
            "charge_epsilon": float(self.cost.epsilon), "charge_delta": float(self.cost.delta),
            "privacy_unit": self.query.privacy_unit,
            "sample_rate": float(self.query.sample_rate) if self.query.sample_rate else None,
            "max_rows_per_unit": self.contribution.rows,
            "max_groups_per_unit": self.contribution.groups,
            "measures": [mp.describe(level) for mp in self.measures],
            "key_selection": self.selection.describe() if self.selection else None,
        }


def plan_query(query: Query, relation: Relation, column_kinds: dict[str, str]) -> ReleasePlan:
    """Plan a validated query under ``relation``; pure function of public information."""
    if relation not in ("add_remove", "change_one"):
        raise ValidationError("neighbouring must be 'add_remove' or 'change_one'")
    grouped = bool(query.by)
    if query.privacy_unit:
        contrib = Contribution(query.max_rows_per_unit, query.max_groups_per_unit if grouped else 1)
    else:
        contrib = Contribution(1, 1)
    gaussian = query.mechanism == "gaussian"
    eps_total, delta_total = query.epsilon, query.delta

    selection: SelectionPlan | None = None
    eps_measures, delta_measures = eps_total, delta_total
    if query.private_keys:
        eps_sel = eps_total * query.selection_share
        delta_sel = delta_total / 2 if gaussian else delta_total
        eps_measures, delta_measures = eps_total - eps_sel, delta_total - delta_sel
        selection = _plan_selection(relation, contrib, eps_sel, delta_sel)

    budgets = _measure_budgets(query.measures, eps_measures, delta_measures, gaussian)
    plans = [_plan_measure(query, m, relation, contrib, grouped, eps_m, delta_m, rho_m,
                           column_kinds)
             for m, (eps_m, delta_m, rho_m) in zip(query.measures, budgets, strict=True)]
    rho_total = sum((r for _, _, r in budgets if r is not None), Fraction(0))

    if query.sample_rate is not None:
        # amplification by Poisson subsampling of units (add_remove neighbours only)
        if relation != "add_remove":
            raise ValidationError("sample() amplification holds for neighbouring='add_remove' "
                                  "only")
        cost = poisson_subsampling(eps_total, delta_total, query.sample_rate)
    elif gaussian and selection is None and all(mp.em is None for mp in plans):
        cost = PrivacyCost(eps_total, delta_total, rho=rho_total)
    else:
        cost = PrivacyCost(eps_total, delta_total)
    return ReleasePlan(query, relation, plans, selection, cost, contrib)


def _measure_budgets(measures: tuple[Measure, ...], eps: Fraction, delta: Fraction,
                     gaussian: bool) -> list[tuple[Fraction, Fraction, Fraction | None]]:
    """Each measure's (epsilon, delta, rho) from the query's measure budget (eps, delta).

    Pure-DP measures (every measure without Gaussian noise, and exponential-mechanism measures
    always) get ``eps * w / W``, their weight's share. With Gaussian noise, the additive measures
    form one block with ``eps_g = eps * W_g / W`` and all of ``delta``; the block is calibrated
    in zCDP, ``rho_g = rho_for(eps_g, delta)``, so that rho_g-zCDP implies (eps_g, delta)-DP
    (Canonne, Kamath and Steinke 2020, Cor. 13), and each Gaussian measure gets ``rho_g * w / W_g``
    (zCDP composes additively). Basic composition of the block and the pure measures gives
    (eps, delta) for the query. A Gaussian measure's stated budget is what its own rho gives:
    (zcdp_to_approx_dp(rho_m, delta_m), delta_m) with ``delta_m = delta * w / W_g``, true of
    its noise (a share of rho is *not* the same share of epsilon).
    """
    total = sum((m.weight for m in measures), Fraction(0))
    additive = [m for m in measures if m.op != "quantile"]
    w_g = sum((m.weight for m in additive), Fraction(0))
    rho_g = rho_for(eps * w_g / total, delta) if gaussian and w_g > 0 else None
    out: list[tuple[Fraction, Fraction, Fraction | None]] = []
    for m in measures:
        if rho_g is None or m.op == "quantile":
            out.append((eps * m.weight / total, Fraction(0) if gaussian else delta * m.weight
                        / total, None))
            continue
        rho_m = rho_g * m.weight / w_g
        delta_m = delta * m.weight / w_g
        out.append((zcdp_to_approx_dp(rho_m, delta_m), delta_m, rho_m))
    return out


def _plan_selection(relation: Relation, contrib: Contribution, eps: Fraction,
                    delta: Fraction) -> SelectionPlan:
    """Threshold for key selection with geometric noise on distinct-unit counts.

    A key present only because of one unit has true count <= 1 in one neighbour and is absent
    from the other; the unit touches at most k keys (k = groups_affected). With noise Z of
    scale b = L1 / eps, P(1 + Z >= tau) = p^(tau-1) / (1 + p), p = exp(-1/b), so requiring
    k p^(tau-1) / (1 + p) <= delta makes the release (eps, delta)-DP (Korolova et al. 2009;
    Wilson et al. 2020). Keys never appear merely because they occur in the data.
    """
    sens = key_selection_sensitivity(relation, contrib)
    noise = noise_spec("laplace", sens.l1, eps, integer=True)
    b = float(noise.int_scale)
    p = math.exp(-1.0 / b)
    if p == 0.0:  # the noise is 0 except with probability < 1e-300: a singleton key stays below 2
        return SelectionPlan(noise, 2, eps, delta)
    k = sens.changed
    tau = 1 + math.ceil(math.log(delta_float_guard(delta) * (1 + p) / k) / math.log(p))
    return SelectionPlan(noise, max(tau, 2), eps, delta)


def delta_float_guard(delta: Fraction) -> float:
    d = float(delta)
    if d <= 0:
        raise ValidationError("keys='private' needs delta > 0")
    return d


def _plan_measure(query: Query, m: Measure, relation: Relation, contrib: Contribution,
                  grouped: bool, eps: Fraction, delta: Fraction, rho: Fraction | None,
                  kinds: dict[str, str]) -> MeasurePlan:
    kind = "gaussian" if query.mechanism == "gaussian" else "laplace"

    def additive(sens_l1: Fraction, sens_l2: Fraction, changed: int, e: Fraction, r: Fraction |
                 None, integer: bool, unit: Fraction | None = None) -> NoiseSpec:
        if kind == "gaussian":
            assert r is not None
            spec = noise_spec("gaussian", sens_l2, e, delta, changed=changed, integer=integer,
                              rho=r, min_granularity=unit)
        else:
            spec = noise_spec("laplace", sens_l1, e, changed=changed, integer=integer,
                              min_granularity=unit)
        return spec

    if m.op == "count_distinct":
        # one unit adds or removes at most its R rows' values in each of its k groups: the
        # count's sensitivity (PRIVACY.md), whatever the other rows hold
        s = count_sensitivity(relation, contrib, grouped)
        return MeasurePlan(m, eps, delta, [AggregateRequest("distinct", m.column)],
                           noise=additive(s.l1, s.l2, s.changed, eps, rho, True))
    if m.op == "count":
        s = count_sensitivity(relation, contrib, grouped)
        req = AggregateRequest("rows") if m.column is None else AggregateRequest(
            "nonnull", m.column)
        return MeasurePlan(m, eps, delta, [req],
                           noise=additive(s.l1, s.l2, s.changed, eps, rho, True))
    if m.op == "histogram":
        s = histogram_sensitivity(relation, contrib)
        assert m.edges is not None
        req = AggregateRequest("bins", m.column, edges=tuple(m.edges), right=m.right,
                               include_lowest=m.include_lowest)
        return MeasurePlan(m, eps, delta, [req],
                           noise=additive(s.l1, s.l2, s.changed, eps, rho, True))
    assert m.column is not None
    lo, hi = query.bounds_of(m.column)
    is_int = kinds.get(m.column) in ("int", "bool")
    if m.op == "sum":
        req = fixed_point_request(m.column, lo, hi, Fraction(0), is_int)
        ilo, ihi = req.ilo * req.unit, req.ihi * req.unit
        s = sum_sensitivity(relation, ilo, ihi, contrib, grouped)
        return MeasurePlan(m, eps, delta, [req],
                           noise=additive(s.l1, s.l2, s.changed, eps, rho, req.integer,
                                          req.unit),
                           bounds=(float(lo), float(hi)))
    if m.op == "mean":
        mid = (lo + hi) / 2
        req = fixed_point_request(m.column, lo, hi, mid, False, with_count=True)
        ilo, ihi = req.ilo * req.unit, req.ihi * req.unit
        s_sum = sum_sensitivity(relation, ilo, ihi, contrib, grouped)
        s_cnt = count_sensitivity(relation, contrib, grouped)
        half_rho = rho / 2 if rho is not None else None
        # the sum of the mean uses the shifted values: an add/remove of a row moves it by at
        # most (hi - lo) / 2 instead of max(|lo|, |hi|)
        return MeasurePlan(
            m, eps, delta, [req],
            noise=additive(s_sum.l1, s_sum.l2, s_sum.changed, eps / 2, half_rho, False,
                           req.unit),
            count_noise=additive(s_cnt.l1, s_cnt.l2, s_cnt.changed, eps / 2, half_rho, True),
            bounds=(float(lo), float(hi)))
    if m.op in ("var", "std"):
        # three releases at a third of the share each (basic composition): the count, the sum
        # of values shifted by the midpoint (in [-h, h]) and the sum of their shifted squares
        # (in [-h^2/2, h^2/2]); the variance is post-processing of the three.
        mid = (lo + hi) / 2
        req = fixed_point_request(m.column, lo, hi, mid, False, with_count=True)
        sq = square_request(m.column, lo, hi)
        s_sum = sum_sensitivity(relation, req.ilo * req.unit, req.ihi * req.unit, contrib,
                                grouped)
        s_sq = sum_sensitivity(relation, sq.ilo * sq.unit, sq.ihi * sq.unit, contrib, grouped)
        s_cnt = count_sensitivity(relation, contrib, grouped)
        third = rho / 3 if rho is not None else None
        return MeasurePlan(
            m, eps, delta, [req, sq],
            noise=additive(s_sum.l1, s_sum.l2, s_sum.changed, eps / 3, third, False, req.unit),
            count_noise=additive(s_cnt.l1, s_cnt.l2, s_cnt.changed, eps / 3, third, True),
            square_noise=additive(s_sq.l1, s_sq.l2, s_sq.changed, eps / 3, third, False,
                                  sq.unit),
            bounds=(float(lo), float(hi)))
    if m.op == "quantile":
        assert m.q is not None
        cands = (log_candidates(float(lo), float(hi), m.grid) if m.log_grid
                 else np.linspace(float(lo), float(hi), m.grid))
        req = AggregateRequest("grid", m.column, float(lo), float(hi),
                               edges=tuple(cands.tolist()))
        usens = quantile_utility_sensitivity(relation, m.q, contrib)
        per_group_eps = eps / groups_affected(relation, contrib) if grouped else eps
        em = ExponentialSpec(per_group_eps, usens, m.grid)
        return MeasurePlan(m, eps, delta, [req], em=em, candidates=cands,
                           bounds=(float(lo), float(hi)))
    raise ValidationError(f"unknown aggregate {m.op!r}")  # pragma: no cover


# -- applying a plan to exact aggregates ---------------------------------------------------------

@dataclass
class ExactAggregates:
    """What a backend returns: per-group exact values for each request, in group order.

    ``keys`` lists the group keys (tuples) in output order; for private keys it lists every
    observed key and ``unit_counts`` their distinct-unit counts (after contribution bounding).
    Arrays are indexed [group] (or [group, bin]).
    """

    keys: list[tuple[object, ...]]
    values: dict[tuple[object, ...], np.ndarray]
    counts: dict[tuple[object, ...], np.ndarray]
    unit_counts: np.ndarray | None = None
    #: ``distinct`` requests: unique (group, value hash) pairs, as two arrays
    distinct: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict)

    def merge(self, other: ExactAggregates) -> ExactAggregates:
        """Sum of two blocks' aggregates (blocks must hold disjoint privacy units), aligning
        keys: public keys coincide; observed private keys are unioned."""
        keys = list(dict.fromkeys([*self.keys, *other.keys]))
        pos = {k: i for i, k in enumerate(keys)}
        ia = np.array([pos[k] for k in self.keys], dtype=np.int64)
        ib = np.array([pos[k] for k in other.keys], dtype=np.int64)

        def add(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
            if a is None or b is None:
                return a if b is None else b
            big = any(x.dtype == object or (x.size and int(np.abs(x).max()) >= (1 << 61))
                      for x in (a, b))
            dtype = object if big else np.int64  # exact Python ints near the int64 limit
            out = np.zeros((len(keys), *a.shape[1:]), dtype=dtype)
            np.add.at(out, ia, a)
            np.add.at(out, ib, b)
            return out

        values = {k: add(self.values.get(k), other.values.get(k)) for k in
                  {**self.values, **other.values}}
        counts = {k: add(self.counts.get(k), other.counts.get(k)) for k in
                  {**self.counts, **other.counts}}
        distinct = {k: union_pairs(self.distinct.get(k), ia, other.distinct.get(k), ib)
                    for k in {**self.distinct, **other.distinct}}
        return ExactAggregates(keys, values, counts,  # type: ignore[arg-type]
                               add(self.unit_counts, other.unit_counts), distinct)


Pairs = tuple[np.ndarray, np.ndarray]


def union_pairs(a: Pairs | None, ia: np.ndarray | None, b: Pairs | None,
                ib: np.ndarray | None) -> Pairs:
    """The union of two sets of (group, hash) pairs, their groups first mapped through ``ia`` /
    ``ib`` (block-local to merged group positions; None: already merged positions)."""
    groups, hashes = [], []
    for pairs, index in ((a, ia), (b, ib)):
        if pairs is None:
            continue
        g, h = pairs
        groups.append(g if index is None else np.asarray(index, dtype=np.int64)[g])
        hashes.append(h)
    if not groups:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    return unique_pairs(np.concatenate(groups), np.concatenate(hashes))


def unique_pairs(groups: np.ndarray, hashes: np.ndarray) -> Pairs:
    """The distinct (group, hash) pairs, sorted."""
    if groups.size == 0:
        return groups.astype(np.int64), hashes.astype(np.uint64)
    order = np.lexsort((hashes, groups))
    g, h = groups[order], hashes[order]
    keep = np.ones(g.size, dtype=bool)
    keep[1:] = (g[1:] != g[:-1]) | (h[1:] != h[:-1])
    return g[keep].astype(np.int64), h[keep].astype(np.uint64)


@dataclass
class MeasureRelease:
    """Noisy values of one measure, per group, with interval bounds where they exist."""

    name: str
    column: str | None
    values: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    description: dict[str, object]
    bins: tuple[float, ...] | None = None
    right: bool = True
    include_lowest: bool = False


@dataclass
class CoreRelease:
    """The result of a release, before a front wraps it in pandas objects."""

    keys: list[tuple[object, ...]]
    by: tuple[str, ...]
    measures: list[MeasureRelease]
    provenance: dict[str, object]


def apply_plan(plan: ReleasePlan, exact: ExactAggregates, rng: RandomSource) -> CoreRelease:
    """Add noise to exact aggregates as planned. The only place noise meets data.

    Private keys are selected first (noisy distinct-unit counts over the threshold), and only
    then sorted, by the total order of :mod:`dpframe.core.values` on their canonical labels:
    the order of the released keys is a function of the released set alone, so a key that was
    observed but not released cannot move them (PRIVACY.md, "One canonical value model").
    """
    keys = exact.keys
    keep = np.arange(len(keys))
    if plan.selection is not None:
        assert exact.unit_counts is not None
        noisy = plan.selection.noise.add_noise(exact.unit_counts, Fraction(1), rng)
        keep = np.flatnonzero(noisy >= plan.selection.threshold)
    if plan.query.private_keys:
        keep = keep[sorted_order([keys[i] for i in keep])]
        keys = [keys[i] for i in keep]
    level = plan.query.ci or 0.95
    out: list[MeasureRelease] = []
    for mp in plan.measures:
        out.append(_release_measure(mp, exact, keep, rng, level,
                                    want_ci=plan.query.ci is not None))
    prov = plan.describe()
    return CoreRelease(keys, plan.query.by, out, prov)


def _release_measure(mp: MeasurePlan, exact: ExactAggregates, keep: npt.NDArray[np.intp],
                     rng: RandomSource, level: float, want_ci: bool = True) -> MeasureRelease:
    m = mp.measure
    req = mp.requests[0]
    desc = mp.describe(level)
    if m.op == "count_distinct":
        assert mp.noise is not None
        groups, _ = exact.distinct.get(req.key, (np.zeros(0, dtype=np.int64), None))
        per_group = np.bincount(groups, minlength=len(exact.keys))[:len(exact.keys)][keep]
        noisy = mp.noise.add_noise(per_group.astype(np.int64), Fraction(1), rng)
        hw = mp.noise.half_width(level)
        return MeasureRelease(m.name, m.column, noisy, noisy - hw, noisy + hw, desc)
    if m.op in ("count", "histogram"):
        assert mp.noise is not None
        vals = exact.values[req.key][keep]
        noisy = mp.noise.add_noise(vals, Fraction(1), rng)
        hw = mp.noise.half_width(level)
        return MeasureRelease(m.name, m.column, noisy, noisy - hw, noisy + hw, desc,
                              bins=m.edges if m.op == "histogram" else None, right=m.right,
                              include_lowest=m.include_lowest)
    if m.op == "sum":
        assert mp.noise is not None
        vals = exact.values[req.key][keep]
        noisy = mp.noise.add_noise(vals, req.unit, rng)
        hw = mp.noise.half_width(level)
        return MeasureRelease(m.name, m.column, noisy, noisy - hw, noisy + hw, desc)
    if m.op == "mean":
        assert mp.noise is not None and mp.count_noise is not None and mp.bounds is not None
        sums = exact.values[req.key][keep]
        cnts = exact.counts[req.key][keep]
        noisy_sum = mp.noise.add_noise(sums, req.unit, rng)
        noisy_cnt = mp.count_noise.add_noise(cnts, Fraction(1), rng).astype(np.float64)
        mean = mean_estimate(noisy_sum.astype(np.float64), noisy_cnt, mp.bounds)
        # calibrated interval by post-processing the public noise (core/intervals.py); the
        # simulation of small groups (DRAWS draws each) only when an interval was asked for
        lower, upper = ratio_interval(noisy_sum.astype(np.float64), noisy_cnt, mp.noise,
                                      mp.count_noise, mp.bounds, level, simulate=want_ci)
        lower, upper = lower.reshape(mean.shape), upper.reshape(mean.shape)
        return MeasureRelease(m.name, m.column, mean, lower, upper, desc)
    if m.op in ("var", "std"):
        assert mp.noise is not None and mp.count_noise is not None
        assert mp.square_noise is not None and mp.bounds is not None
        sq = mp.requests[1]
        noisy_sum = mp.noise.add_noise(exact.values[req.key][keep], req.unit, rng)
        noisy_cnt = mp.count_noise.add_noise(exact.counts[req.key][keep], Fraction(1),
                                             rng).astype(np.float64)
        noisy_sq = mp.square_noise.add_noise(exact.values[sq.key][keep], sq.unit, rng)
        est = variance_estimate(noisy_sum.astype(np.float64), noisy_cnt,
                                noisy_sq.astype(np.float64), mp.bounds, m.ddof)
        if want_ci:
            lower, upper = variance_interval(noisy_sum.astype(np.float64), noisy_cnt,
                                             noisy_sq.astype(np.float64), mp.noise,
                                             mp.count_noise, mp.square_noise, mp.bounds,
                                             m.ddof, level)
        else:
            lower = upper = np.full(est.shape, np.nan)
        if m.op == "std":
            est, lower, upper = np.sqrt(est), np.sqrt(lower), np.sqrt(upper)
        return MeasureRelease(m.name, m.column, est, lower.reshape(est.shape),
                              upper.reshape(est.shape), desc)
    if m.op == "quantile":
        assert mp.em is not None and mp.candidates is not None and m.q is not None
        cells = exact.values[req.key][keep]  # [groups, candidates]
        below = np.concatenate([np.zeros((cells.shape[0], 1), dtype=np.int64),
                                np.cumsum(cells, axis=1)[:, :-1]], axis=1)
        total = cells.sum(axis=1, keepdims=True)
        above = total - below - cells
        qn, qd = m.q.numerator, m.q.denominator
        util = -np.abs((qd - qn) * below - qn * above)
        idx = mp.em.choose(util, rng)
        vals = mp.candidates[idx]
        nan = np.full(vals.shape, np.nan)
        return MeasureRelease(m.name, m.column, vals, nan, nan, desc)
    raise ValidationError(f"unknown aggregate {m.op!r}")  # pragma: no cover
