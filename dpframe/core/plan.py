"""Release plans: from a validated Query to mechanisms, costs and requested exact aggregates.

A plan is computed from public information only (arguments, declared bounds and keys, the
neighbouring relation), so it can be shown before anything is spent (``explain`` / dry runs).
Budget split rules (documented in docs/privacy.md):

* ``agg`` with several aggregates: epsilon (and delta, and rho for Gaussian noise) is split in
  proportion to the aggregates' weights (equal by default): sequential composition.
* ``mean`` (Gaussian noise): half of its share for the noisy count, half for the noisy
  shifted sum. With pure-DP noise, a query's counts, sums and means share one K-norm release
  of their counts and centred sums, charged the sum of their shares (:mod:`dpframe.core.joint`).
* ``keys="private"``: where the only aggregate is a count of units (a row unit, or one row per
  unit and key), or of rows with ``max_rows_per_group`` declared where a public rule prefers
  it (``_rows_beat_units``), the count is released thresholded (stability histogram): the
  whole budget is spent once. Otherwise ``selection_share`` (1/2 by default) of epsilon goes
  to a separate selection (truncated geometric rule), the rest to the aggregates; delta goes to key
  selection unless Gaussian noise needs half of it (:mod:`dpframe.core.selection`).
* groupby over disjoint groups: one charge (parallel composition), with sensitivities scaled by
  ``max_groups_per_unit`` (additive noise) or epsilon divided among the groups a unit can touch
  (per-group exponential mechanism).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from fractions import Fraction
from functools import cached_property
from typing import Any

from ..errors import ValidationError
from .accountant import Component, PrivacyEvent
from .accounting import PrivacyCost, poisson_subsampling, round_up, zcdp_to_approx_dp
from .aggregates import AGGREGATES, aggregate
from .diagnostics import DiagnosticsPlan, plan_diagnostics
from .exact.compute import NO_GROUP_LIMIT, AggregateRequest, ComputeRequest
from .exact.memo import RecentCache
from .exact.values import ColumnKind
from .hierarchy import RollupPlan, plan_rollup
from .joint import join_measures
from .measure import MeasurePlan, PlanContext
from .noise.gaussian import analytic_mu, delta_float, discrete_epsilon, satisfies
from .noise.mechanisms import NoiseSpec, gaussian_parts, noise_spec, rho_for
from .query import Measure, Query
from .selection import (
    SelectionPlan,
    gaussian_selection,
    half_count,
    stability_threshold,
    truncated_geometric_table,
)
from .sensitivity import (
    Contribution,
    Relation,
    contribution,
    count_sensitivity,
    key_selection_sensitivity,
)
from .validate import check_query


@dataclass(frozen=True)
class ReleasePlan:
    """Everything about a release that does not depend on the data. Immutable: one plan may
    serve many releases (:func:`plan_release` caches them)."""

    query: Query
    relation: Relation
    measures: tuple[MeasurePlan[Any], ...]
    selection: SelectionPlan | None
    cost: PrivacyCost
    contribution: Contribution = field(default_factory=Contribution)
    diagnostics: DiagnosticsPlan | None = None
    #: advice read from public parameters only, warned before the charge
    #: (:class:`~dpframe.errors.KeySelectionWarning`)
    advice: tuple[str, ...] = ()
    #: ``rollup=True``: every level's plan and the consistency step (core/hierarchy.py)
    rollup: RollupPlan | None = None

    @cached_property
    def requests(self) -> list[AggregateRequest]:
        """Deduplicated exact aggregates to compute (always including row counts per group)."""
        seen: dict[tuple[object, ...], AggregateRequest] = {}
        for mp in self.measures:
            for r in mp.requests:
                seen.setdefault(r.key, r)
        return list(seen.values())

    @cached_property
    def compute(self) -> ComputeRequest:
        """The data-only request a backend receives (no noise, no budget)."""
        q = self.query
        rows, groups, total = enforced_bounds(q, self.contribution)
        return ComputeRequest(tuple(self.requests), q.by, q.keys, q.private_keys,
                              q.privacy_unit, rows, groups, q.sample_rate,
                              self.selection is not None and not self.selection.released_count,
                              total, self.diagnostics.cap if self.diagnostics else None)

    @property
    def mechanism(self) -> str:
        return ", ".join(dict.fromkeys(aggregate(mp.measure.op).mechanism(mp)
                                       for mp in self.measures))

    def describe(self) -> dict[str, object]:
        level = self.query.ci or 0.95
        return {
            "relation": self.relation,
            "epsilon": float(self.query.epsilon), "delta": float(self.query.delta),
            "charge_epsilon": float(self.cost.epsilon), "charge_delta": float(self.cost.delta),
            "privacy_unit": self.query.privacy_unit,
            "sample_rate": float(self.query.sample_rate) if self.query.sample_rate else None,
            "max_rows_per_unit": self.contribution.cap,
            "max_groups_per_unit": self.contribution.groups_per_unit,
            "max_rows_per_group": self.contribution.rows_per_group,
            "measures": [aggregate(mp.measure.op).describe(mp, level)
                         for mp in self.measures],
            "key_selection": self.selection.describe() if self.selection else None,
            **({"diagnostics": self.diagnostics.describe(level)} if self.diagnostics else {}),
            **({"rollup": self.rollup.describe()} if self.rollup else {}),
        }


def plan_query(query: Query, relation: Relation, column_kinds: dict[str, str]) -> ReleasePlan:
    """Plan a validated query under ``relation``; pure function of public information."""
    if relation not in ("add_remove", "change_one"):
        raise ValidationError("neighbouring must be 'add_remove' or 'change_one'")
    contrib = _contribution(query)
    if query.rollup is not None:
        return _plan_rollup(query, relation, contrib, column_kinds)
    gaussian = query.mechanism == "gaussian"
    one_count = query.private_keys and _one_count(query, relation, contrib)
    selection, eps_measures, delta_measures = _split_selection(query, relation, contrib,
                                                               one_count)
    ctx = PlanContext(query, relation, contrib, column_kinds)
    analytic = _analytic_block(ctx, eps_measures, delta_measures) if gaussian else None
    if analytic is not None:
        budgets, plans = analytic
    else:
        budgets = _measure_budgets(query.measures, eps_measures, delta_measures, gaussian)
        plans = join_measures(ctx, _plan_measures(ctx, budgets))
    if one_count:  # the count's own noise, thresholded: the whole budget spent once
        selection = PLANNERS["key_selection"].plan(relation, contrib, query.epsilon,
                                                   query.delta, plans[0].additive("count"))
    rho_total = sum((r for _, _, r in budgets if r is not None), Fraction(0))
    pure_gaussian = gaussian and selection is None and not any(
        aggregate(mp.measure.op).exponential for mp in plans)
    diagnostics = (None if query.diagnostics is None
                   else plan_diagnostics(query.diagnostics, contrib.cap))
    cost = _cost(query, relation, rho_total if pure_gaussian and diagnostics is None else None)
    if selection is None and diagnostics is None and query.sample_rate is None:
        cost = with_event(cost, plans)
    advice = _groups_advice(query, relation, contrib, selection)
    return ReleasePlan(query, relation, tuple(plans), selection, cost, contrib, diagnostics,
                       advice)


def _plan_rollup(query: Query, relation: Relation, contrib: Contribution,
                 column_kinds: dict[str, str]) -> ReleasePlan:
    """A rollup: every level planned at its share of epsilon (sequential composition over the
    levels, core/hierarchy.py); the charge is the query's epsilon. The leaves' plan is the
    plan's measure (its exact request is the backend's)."""
    ctx = PlanContext(query, relation, contrib, column_kinds)
    rollup = plan_rollup(ctx, query)
    diagnostics = (None if query.diagnostics is None
                   else plan_diagnostics(query.diagnostics, contrib.cap))
    return ReleasePlan(query, relation, (rollup.levels[-1],), None,
                       _cost(query, relation, None), contrib, diagnostics, rollup=rollup)


#: ``max_groups_per_unit`` values whose thresholds :func:`_groups_advice` names.
ADVISED_GROUPS = (1, 10)


def _groups_advice(query: Query, relation: Relation, contrib: Contribution,
                   selection: SelectionPlan | None) -> tuple[str, ...]:
    """Advice when private keys are selected with ``k`` derived from T alone (a unit with T
    rows touches at most T keys: sound, but each unit then counts in T keys' selection): the
    distinct units a key needs now, and with a declared ``max_groups_per_unit``. Public
    parameters only (the same plan for every data set)."""
    if (selection is None or not query.privacy_unit or query.max_groups_per_unit is not None
            or contrib.groups_per_unit <= 1):
        return ()
    now = half_count(selection)
    rows = thresholds_rows(selection, contrib)
    options = []
    for k in (g for g in ADVISED_GROUPS if g < contrib.groups_per_unit):
        other = _advised_selection(query, relation, replace(contrib, groups_per_unit=k), selection)
        options.append(f"max_groups_per_unit={k} would need about {half_count(other):,}")
    return (f"keys='private' without max_groups_per_unit: a unit may then be in up to "
            f"{contrib.groups_per_unit:,} keys (max_rows_per_unit), so a key needs about {now:,} "
            f"{'rows' if rows else 'distinct units'} to be released (with probability 1/2); "
            f"{'; '.join(options)}. Declare the fewest keys one unit may be in",)


def thresholds_rows(selection: SelectionPlan | None, contrib: Contribution) -> bool:
    """Whether ``selection`` thresholds the released count of rows, a unit holding several rows
    per key (its threshold counts rows, not distinct units)."""
    return selection is not None and selection.released_count and contrib.rows_per_group > 1


def _advised_selection(query: Query, relation: Relation, alt: Contribution,
                       selection: SelectionPlan) -> SelectionPlan:
    """The selection the same rule would plan under the contribution bounds ``alt``."""
    if thresholds_rows(selection, alt):
        return thresholded_count_selection(query, relation, alt)
    return PLANNERS["key_selection"].plan(relation, alt, selection.epsilon, selection.delta)


#: Types whose pickle is their value, exactly: ``-0.0`` and ``0.0``, ``True`` and ``1``, ``1``
#: and ``1.0`` pickle apart. Queries holding anything else (in keys or bounds) are not cached.
_PLAIN_TYPES = (str, int, float, bool, type(None), Fraction, Decimal, bytes)
PLAN_CACHE_SIZE = 256
#: Inputs whose fingerprint is longer are planned afresh each time (a cache of 256 plans stays
#: within a few tens of MB whatever the queries).
MAX_FINGERPRINT_BYTES = 1 << 16


def _plain_type(kind: type) -> bool:
    return kind in _PLAIN_TYPES or kind.__module__ == "numpy"


def exact_fingerprint(value: object, members: Iterable[object] = ()) -> bytes | None:
    """Bytes equal only for inputs no public computation could tell apart, or None.

    A pickle records the type and exact bits of every number and the order of every sequence
    (``-0.0`` and ``0.0``, ``True`` and ``1``, ``1`` and ``1.0`` pickle apart), so equal
    fingerprints mean equal inputs. Objects of other types could pickle alike while differing
    (a class with its own ``__reduce__``): ``members`` are the user-given values inside
    ``value`` (declared keys, bounds), and any that is not a plain str, bytes, number or None
    makes the answer None (never remembered), as does a fingerprint longer than
    :data:`MAX_FINGERPRINT_BYTES`."""
    if not all(_plain_type(t) for t in set(map(type, members))):  # each type once
        return None
    try:
        fingerprint = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # anything a pickle refuses is simply not remembered
        return None
    # huge inputs (a million declared keys) are not worth remembering: caches stay small
    return fingerprint if len(fingerprint) <= MAX_FINGERPRINT_BYTES else None


_PLANS: RecentCache[ReleasePlan] = RecentCache(PLAN_CACHE_SIZE)


def _plan_key(query: Query, relation: str,
              column_kinds: Mapping[str, ColumnKind]) -> bytes | None:
    """The fingerprint of a plan's inputs (:func:`exact_fingerprint`), or None when declared
    keys or bounds hold anything but plain values. The planners that would plan it (the
    measures' aggregates and :data:`PLANNERS`) are part of it, by identity: an aggregate or
    planner swapped in (a test's broken control) never meets a plan another one made."""
    members: list[object] = []
    for values in (*query.keys.values(), *query.bounds.values(), *(query.combos or ())):
        if not isinstance(values, tuple | list):
            return None
        members.extend(values)
    planners = (tuple(id(AGGREGATES.get(m.op)) for m in query.measures),
                tuple(id(p) for p in PLANNERS.values()))
    return exact_fingerprint((query, relation, sorted(column_kinds.items()), planners), members)


def plan_release(query: Query, relation: Relation,
                 column_kinds: Mapping[str, ColumnKind]) -> ReleasePlan:
    """Validate ``query`` against the schema and plan it: :func:`check_query` then
    :func:`plan_query`, remembered for the last :data:`PLAN_CACHE_SIZE` distinct inputs.

    Both are pure functions of public information (the query, the relation, the column
    kinds), so a remembered plan is the plan a new computation would give; a query that fails
    validation is never remembered and fails again, with the same error."""
    key = _plan_key(query, relation, column_kinds)
    plan = _PLANS.get(key)
    if plan is None:
        check_query(query, column_kinds)  # every refusal (core/validate.py)
        plan = plan_query(query, relation, dict(column_kinds))
        _PLANS.put(key, plan)
    return plan


def _contribution(query: Query) -> Contribution:
    """How many rows, in how many groups, one privacy unit may contribute (1 and 1 when each
    row is its own unit; ungrouped releases have one group): :func:`contribution`."""
    if not query.privacy_unit:
        return Contribution(1, 1)
    return contribution(*query.declared_contribution, grouped=bool(query.by))


def enforced_bounds(query: Query, c: Contribution) -> tuple[int, int, int | None]:
    """The bounds a backend enforces, (rows per group, groups, total rows or None), for the
    normalized ``c``: a group step unless T implies it (k >= T, or k not declared
    with T declared), a total step only when T binds (T < k * R). Leaving a step out that
    cannot bind changes no distribution; leaving the group step out lets blocks pre-select by
    T too (:func:`~dpframe.core.exact.bounding.select_by_priority`)."""
    if not query.privacy_unit or not query.by:
        return c.rows_per_group, c.groups_per_unit, None
    t = query.max_rows_per_unit
    groups = c.groups_per_unit if t is None or c.groups_per_unit < t else NO_GROUP_LIMIT
    binds = groups >= NO_GROUP_LIMIT or c.cap < groups * c.rows_per_group
    total = c.cap if t is not None and binds else None
    return c.rows_per_group, groups, total


def _cost(query: Query, relation: Relation, rho: Fraction | None) -> PrivacyCost:
    """The charge: the query's (epsilon, delta), plus ``diagnostics=`` epsilon (sequential
    composition), amplified by Poisson sampling of units when it samples (add_remove
    neighbours only), with the zCDP rho of an all-Gaussian release (none with diagnostics)."""
    epsilon = query.epsilon + (query.diagnostics or 0)
    if query.sample_rate is not None:
        if relation != "add_remove":
            raise ValidationError("sample() amplification holds for neighbouring='add_remove' "
                                  "only")
        return poisson_subsampling(epsilon, query.delta, query.sample_rate)
    return PrivacyCost(epsilon, query.delta, rho=rho)


def with_event(cost: PrivacyCost, plans: Sequence[MeasurePlan]) -> PrivacyCost:
    """``cost`` with the privacy event of its noises (:mod:`dpframe.core.accountant`) when every
    mechanism of ``plans`` is additive noise whose own guarantee is within its measure's share
    (a Laplace noise's Delta / b <= its epsilon); ``cost`` unchanged (its generic (epsilon,
    delta) event) otherwise. Public parameters only."""
    parts: list[Component] = []
    for mp in plans:
        if aggregate(mp.measure.op).exponential or len(mp.noises()) != len(mp.mechanisms):
            return cost
        for s in mp.noises():
            if s.kind == "laplace":
                if s.int_scale <= 0 or s.int_sensitivity / s.int_scale > s.epsilon:
                    return cost
                parts.append(Component("laplace", s.int_sensitivity, s.int_scale))
            elif s.kind == "gaussian":
                parts.append(Component("gaussian", s.int_sensitivity, s.int_sigma2))
            else:  # a kind the accountant does not know: its stated (epsilon, delta)
                return cost
    if not parts:
        return cost
    return PrivacyCost(cost.epsilon, cost.delta, cost.rho, event=PrivacyEvent(tuple(parts)))


Budgets = list[tuple[Fraction, Fraction, Fraction | None]]


def _plan_measures(ctx: PlanContext, budgets: Budgets) -> list[MeasurePlan]:
    return [aggregate(m.op).plan(ctx, m, eps_m, delta_m, rho_m)
            for m, (eps_m, delta_m, rho_m) in zip(ctx.query.measures, budgets, strict=True)]


def _block_parts(plans: list[MeasurePlan]) -> list[tuple[Fraction, Fraction]]:
    """Every Gaussian noise of a query's measures, as Theorem C's parts."""
    return gaussian_parts([s for mp in plans for s in mp.noises()])


#: Slacks tried (fractions of the analytic block's rho given up to the discrete correction).
_SLACKS = (0.0, 1e-12, 1e-9, 1e-6, 1e-4, 1e-3, 0.003, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2,
           0.3, 0.45)
#: Below this slack the analytic block is kept without computing the zCDP plan: on (epsilon,
#: delta) in [1e-4, 100] x [1e-15, 0.3] the zCDP route's rho is at most 0.966 of the analytic
#: one (both plans are valid: this only saves the zCDP calibration's time).
_SURE_SLACK = 1e-3


def _analytic_block(ctx: PlanContext, eps: Fraction,
                    delta: Fraction) -> tuple[Budgets, list[MeasurePlan]] | None:
    """The Gaussian block calibrated on the analytic curve, or None (then the zCDP plan).

    The block's measures are independent discrete Gaussians; :mod:`dpframe.core.noise.gaussian`'s
    Theorem C bounds their joint (eps_g, delta) from mu^2 = sum Delta^2 / sigma^2 (Gaussian DP
    composes exactly). Its rho_g = mu^2 / 2, less the least slack (a float search) that covers
    the discrete correction, is shared by weight as the zCDP rho is; the planned noise is then
    *checked* in conservative arithmetic, and anything unproven falls back to the zCDP plan
    (valid by Canonne, Kamath and Steinke 2020). Either way each measure's noise is
    rho_m-zCDP for the rho recorded, so the session's zCDP composition stays sound.
    """
    measures = ctx.query.measures
    total = sum((m.weight for m in measures), Fraction(0))
    w_g = sum((m.weight for m in measures if not aggregate(m.op).exponential), Fraction(0))
    eps_g = eps * w_g / total
    mu = analytic_mu(float(eps_g), float(delta)) if w_g > 0 else 0.0
    if mu <= 0:
        return None

    def attempt(slack: float, stated: bool = False) -> tuple[Budgets, list[MeasurePlan]] | None:
        rho = round_up(Fraction(mu * mu / 2 * (1 - slack)))
        b = _measure_budgets(measures, eps, delta, True, rho_g=rho, stated=stated)
        try:
            return b, _plan_measures(ctx, b)
        except ValidationError:  # noise beyond the sampler's range: the zCDP plan decides
            return None

    def fits(slack: float) -> bool:
        tried = attempt(slack)
        return tried is not None and delta_float(float(eps_g), _block_parts(tried[1])) <= float(
            delta) * (1 - 1e-9)

    def proven(slack: float) -> bool:
        tried = attempt(slack)
        return tried is not None and satisfies(eps_g, delta, _block_parts(tried[1]))

    slack = _least_slack(fits, proven)
    if slack is None:
        return None
    # more noise than the zCDP plan's iff this rho's zCDP conversion fits eps_g
    rho_a = round_up(Fraction(mu * mu / 2 * (1 - slack)))
    if slack > _SURE_SLACK and zcdp_to_approx_dp(rho_a, delta) <= eps_g:
        return None
    final = attempt(slack, stated=True)
    return None if final is None else _state_epsilons(final, eps_g)


def _least_slack(fits: Callable[[float], bool], proven: Callable[[float], bool]) -> float | None:
    """The least slack of :data:`_SLACKS` (refined by bisection) that ``fits`` in floats and is
    then ``proven``; None when none is."""
    passing = next((i for i, sl in enumerate(_SLACKS) if fits(sl)), None)
    if passing is None:
        return None
    hi = _SLACKS[passing]
    if passing > 0:
        lo = _SLACKS[passing - 1]
        for _ in range(8):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return next((hi + b for b in (0.0, 1e-9, 1e-6, 1e-4) if proven(hi + b)), None)


def _state_epsilons(planned: tuple[Budgets, list[MeasurePlan]],
                    eps_g: Fraction) -> tuple[Budgets, list[MeasurePlan]]:
    """Each Gaussian measure's stated epsilon: the whole block's when it is alone in it, else
    the smaller of its rho's zCDP conversion and Theorem C for its own noise at its delta."""
    budgets, plans = planned
    gauss = [i for i, (_, _, r) in enumerate(budgets) if r is not None]
    out_b, out_p = list(budgets), list(plans)
    for i in gauss:
        e, d, r = budgets[i]
        stated = eps_g if len(gauss) == 1 else e
        if len(gauss) > 1:
            own = discrete_epsilon(_block_parts([plans[i]]), d)
            stated = min(e, own) if own is not None else e
        out_b[i] = (stated, d, r)
        out_p[i] = replace(plans[i], epsilon=stated)
    return out_b, out_p


def _measure_budgets(measures: tuple[Measure, ...], eps: Fraction, delta: Fraction,
                     gaussian: bool, rho_g: Fraction | None = None,
                     stated: bool = True) -> Budgets:
    """Each measure's (epsilon, delta, rho) from the query's measure budget (eps, delta).

    Pure-DP measures (every measure without Gaussian noise, and exponential-mechanism measures
    always) get ``eps * w / W``, their weight's share. With Gaussian noise, the additive measures
    form one block with ``eps_g = eps * W_g / W`` and all of ``delta``; the block is calibrated
    in zCDP, ``rho_g = rho_for(eps_g, delta)``, so that rho_g-zCDP implies (eps_g, delta)-DP
    (Canonne, Kamath and Steinke 2020, Cor. 13), and each Gaussian measure gets ``rho_g * w / W_g``
    (zCDP composes additively). Basic composition of the block and the pure measures gives
    (eps, delta) for the query. A Gaussian measure's stated budget is what its own rho gives:
    (zcdp_to_approx_dp(rho_m, delta_m), delta_m) with ``delta_m = delta * w / W_g``, true of
    its noise (a share of rho is *not* the same share of epsilon). ``rho_g`` overrides the
    block's rho (:func:`_analytic_block`); ``stated=False`` skips the zCDP conversion of each
    share (a placeholder epsilon, during searches whose plans are never released).
    """
    total = sum((m.weight for m in measures), Fraction(0))
    additive = [m for m in measures if not aggregate(m.op).exponential]
    w_g = sum((m.weight for m in additive), Fraction(0))
    if rho_g is None:
        rho_g = rho_for(eps * w_g / total, delta) if gaussian and w_g > 0 else None
    out: list[tuple[Fraction, Fraction, Fraction | None]] = []
    for m in measures:
        if rho_g is None or aggregate(m.op).exponential:
            out.append((eps * m.weight / total, Fraction(0) if gaussian else delta * m.weight
                        / total, None))
            continue
        rho_m = rho_g * m.weight / w_g
        delta_m = delta * m.weight / w_g
        e_m = zcdp_to_approx_dp(rho_m, delta_m) if stated else eps * m.weight / total
        out.append((e_m, delta_m, rho_m))
    return out


def _split_selection(query: Query, relation: Relation, contrib: Contribution,
                     one_count: bool) -> tuple[SelectionPlan | None, Fraction, Fraction]:
    """A separate selection's plan and the (epsilon, delta) left for the measures: the whole
    budget when there is no selection or the released count is thresholded (``one_count``)."""
    if not query.private_keys or one_count:
        return None, query.epsilon, query.delta
    eps_sel = query.epsilon * query.selection_share
    delta_sel = query.delta / 2 if query.mechanism == "gaussian" else query.delta
    return (PLANNERS["key_selection"].plan(relation, contrib, eps_sel, delta_sel),
            query.epsilon - eps_sel, query.delta - delta_sel)


def _one_count(query: Query, relation: Relation, contrib: Contribution) -> bool:
    """Whether one noisy count serves as both the selection and the release (the stability
    histogram, :mod:`dpframe.core.selection`): the query's only aggregate is a row count with
    pure-DP noise, and either each unit has at most one row per key (a row unit, or ``R = 1``:
    rows per key are units per key; any ``max_groups_per_unit`` qualifies, the stability
    histogram with sensitivity ``k`` beats a split budget, docs/benchmarks/accuracy.md), or
    ``max_rows_per_group`` (R > 1) is declared, ``selection_share`` is not given (it asks for a
    separate selection) and :func:`_rows_beat_units` says so."""
    m = query.measures
    if not (len(m) == 1 and m[0].op == "count" and m[0].column is None
            and query.mechanism != "gaussian"):
        return False
    if contrib.rows_per_group == 1:
        return True
    return (query.max_rows_per_group is not None and not query.selection_share_given
            and _rows_beat_units(query, relation, contrib))


def thresholded_count_selection(query: Query, relation: Relation,
                                contrib: Contribution) -> SelectionPlan:
    """The stability histogram of a lone count at the query's whole budget: the count's own
    geometric noise (L1 ``min(T, k R)``, twice under change_one, as
    :class:`~dpframe.core.aggregates.count.Count` plans it), thresholded where a key only one
    neighbour has (at most ``R`` rows, in at most ``k'`` keys) is released with total
    probability <= delta."""
    sens = count_sensitivity(relation, contrib, True)
    noise = noise_spec("laplace", sens.l1, query.epsilon, changed=sens.changed, integer=True)
    return PLANNERS["key_selection"].plan(relation, contrib, query.epsilon, query.delta, noise)


#: How many more units (a share) the rows rule may need than the split's selection, for a key
#: whose units hold the midpoint of the declared rows, in exchange for halving the released
#: counts' noise (:func:`_rows_beat_units`).
ROWS_RULE_SLACK = Fraction(1, 8)


def _rows_beat_units(query: Query, relation: Relation, contrib: Contribution) -> bool:
    """R > 1 (issue 47, item 8): the stability histogram of row counts (OpenDP's
    ``make_count_by`` + threshold: no second charge, so the released counts' noise is at the
    whole epsilon, half the split's) or the split (1/2 of epsilon selects by distinct units,
    the rest counts)? From public parameters only: the rows rule is taken when a key whose
    units hold ``(1 + R) / 2`` rows each (the midpoint of the declared ``1..R``) is released
    with probability 1/2 from at most 1/8 more units than under the split (its count's noise
    halves): ``2 tau <= (1 + R) n_half (1 + 1/8)``, ``tau`` the rows threshold, ``n_half``
    the split's count kept with probability 1/2 (:func:`~dpframe.core.selection.half_count`).
    At epsilon 1, delta 1e-6, R = 3, k = 4: tau = 178 rows (89 units at 2 rows each) against
    88 units (the Gaussian threshold at epsilon 1/2): rows. At R = 10 (tau = 590, 107 units
    at 5.5 rows) the split stays."""
    tau = thresholded_count_selection(query, relation, contrib).threshold
    split = PLANNERS["key_selection"].plan(relation, contrib,
                                           query.epsilon * query.selection_share, query.delta)
    return 2 * tau <= (1 + contrib.rows_per_group) * half_count(split) * (1 + ROWS_RULE_SLACK)


class KeySelection:
    """The planner of private-key selection: a replaceable part, like an aggregate of the
    registry (:data:`PLANNERS`; the audit injects a broken one to show it is caught)."""

    def plan(self, relation: Relation, contrib: Contribution, eps: Fraction, delta: Fraction,
             count_noise: NoiseSpec | None = None) -> SelectionPlan:
        """The key-selection rule at budget (eps, delta) (proofs: :mod:`dpframe.core.selection`).

        With ``count_noise`` (the released count's own geometric noise, :func:`_one_count`): the
        stability histogram, whose released counts are the thresholded ones. Otherwise a separate
        selection on distinct-unit counts: the truncated-geometric rule at per-key budget
        ``(eps / k', delta / k')``, ``k'`` the keys one neighbour can touch (``k``, or ``2k``
        under change_one); for a per-key epsilon so small that its table would be huge, the
        geometric threshold of scale ``k' / eps`` (the same guarantee, slightly fewer keys);
        or, where it releases keys from fewer units (the count kept with probability 1/2 is
        lower: a function of (eps, delta, k') only), the Gaussian threshold on the same counts,
        whose L2 sensitivity is ``sqrt(k')`` where the L1 is ``k'``.
        Keys never appear merely because they occur in the data.
        """
        if delta <= 0:
            raise ValidationError("keys='private' needs delta > 0")
        sens = key_selection_sensitivity(relation, contrib)
        keys = sens.changed
        if count_noise is not None:
            tau, boundary, used = stability_threshold(count_noise, delta, contrib.rows_per_group,
                                                      keys)
            return SelectionPlan(count_noise, tau, eps, delta, "stability histogram", boundary,
                                 True, used)
        table = truncated_geometric_table(eps / keys, delta / keys)
        if table is not None:
            pure = SelectionPlan(None, len(table), eps, delta, "truncated geometric",
                                 delta_used=delta, probs=table)
        else:
            noise = noise_spec("laplace", sens.l1, eps, integer=True)
            tau, boundary, used = stability_threshold(noise, delta, 1, keys, coin=True)
            pure = SelectionPlan(noise, tau, eps, delta, "stability histogram", boundary,
                                 False, used)
        # the rule that keeps more keys, by the count released with probability 1/2 (public)
        gauss = gaussian_selection(eps, delta, sens.l2, keys, 1, below=half_count(pure))
        return pure if gauss is None else gauss


#: The planners a release uses beside the aggregates' own, by name: replaceable entries, as
#: :data:`~dpframe.core.aggregates.AGGREGATES` holds the aggregates (a test swaps one with
#: ``monkeypatch.setitem``; the plan cache never serves one planner's plan to another).
PLANNERS: dict[str, KeySelection] = {"key_selection": KeySelection()}
