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
import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import cached_property

from ..errors import ValidationError
from .accounting import PrivacyCost, poisson_subsampling, zcdp_to_approx_dp
from .aggregates import aggregate
from .compute import NO_GROUP_LIMIT, AggregateRequest, ComputeRequest
from .measure import MeasurePlan, PlanContext
from .mechanisms import NoiseSpec, noise_spec, rho_for
from .memo import RecentCache
from .query import Measure, Query
from .sensitivity import Contribution, Relation, contribution, key_selection_sensitivity
from .values import ColumnKind


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class ReleasePlan:
    """Everything about a release that does not depend on the data. Immutable: one plan may
    serve many releases (:func:`plan_release` caches them)."""

    query: Query
    relation: Relation
    measures: tuple[MeasurePlan, ...]
    selection: SelectionPlan | None
    cost: PrivacyCost
    contribution: Contribution = field(default_factory=Contribution)

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
                              self.selection is not None, total)

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
            "max_rows_per_unit": self.contribution.cap,
            "max_groups_per_unit": self.contribution.groups,
            "max_rows_per_group": self.contribution.rows,
            "measures": [aggregate(mp.measure.op).describe(mp, level)
                         for mp in self.measures],
            "key_selection": self.selection.describe() if self.selection else None,
        }


def plan_query(query: Query, relation: Relation, column_kinds: dict[str, str]) -> ReleasePlan:
    """Plan a validated query under ``relation``; pure function of public information."""
    if relation not in ("add_remove", "change_one"):
        raise ValidationError("neighbouring must be 'add_remove' or 'change_one'")
    contrib = _contribution(query)
    gaussian = query.mechanism == "gaussian"
    selection: SelectionPlan | None = None
    eps_measures, delta_measures = query.epsilon, query.delta
    if query.private_keys:
        eps_sel = query.epsilon * query.selection_share
        delta_sel = query.delta / 2 if gaussian else query.delta
        eps_measures, delta_measures = query.epsilon - eps_sel, query.delta - delta_sel
        selection = _plan_selection(relation, contrib, eps_sel, delta_sel)

    budgets = _measure_budgets(query.measures, eps_measures, delta_measures, gaussian)
    ctx = PlanContext(query, relation, contrib, column_kinds)
    plans = [aggregate(m.op).plan(ctx, m, eps_m, delta_m, rho_m)
             for m, (eps_m, delta_m, rho_m) in zip(query.measures, budgets, strict=True)]
    rho_total = sum((r for _, _, r in budgets if r is not None), Fraction(0))
    pure_gaussian = gaussian and selection is None and all(mp.em is None for mp in plans)
    cost = _cost(query, relation, rho_total if pure_gaussian else None)
    return ReleasePlan(query, relation, tuple(plans), selection, cost, contrib)


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
    keys or bounds hold anything but plain values."""
    members: list[object] = []
    for values in (*query.keys.values(), *query.bounds.values()):
        if not isinstance(values, tuple | list):
            return None
        members.extend(values)
    return exact_fingerprint((query, relation, sorted(column_kinds.items())), members)


def plan_release(query: Query, relation: Relation,
                 column_kinds: Mapping[str, ColumnKind]) -> ReleasePlan:
    """Validate ``query`` against the schema and plan it: :meth:`Query.validate` then
    :func:`plan_query`, remembered for the last :data:`PLAN_CACHE_SIZE` distinct inputs.

    Both are pure functions of public information (the query, the relation, the column
    kinds), so a remembered plan is the plan a new computation would give; a query that fails
    validation is never remembered and fails again, with the same error."""
    key = _plan_key(query, relation, column_kinds)
    plan = _PLANS.get(key)
    if plan is None:
        query.validate(column_kinds)
        plan = plan_query(query, relation, dict(column_kinds))
        _PLANS.put(key, plan)
    return plan


def _contribution(query: Query) -> Contribution:
    """How many rows, in how many groups, one privacy unit may contribute (1 and 1 when each
    row is its own unit; ungrouped releases have one group): :func:`contribution`."""
    if not query.privacy_unit:
        return Contribution(1, 1)
    return contribution(*query.contribution_bounds, grouped=bool(query.by))


def enforced_bounds(query: Query, c: Contribution) -> tuple[int, int, int | None]:
    """The bounds a backend enforces, (rows per group, groups, total rows or None), for the
    normalized ``c``: a group step unless T implies it (k >= T, or k not declared
    with T declared), a total step only when T binds (T < k * R). Leaving a step out that
    cannot bind changes no distribution; leaving the group step out lets blocks pre-select by
    T too (:func:`~dpframe.core.transform.select_by_priority`)."""
    if not query.privacy_unit or not query.by:
        return c.rows, c.groups, None
    t = query.max_rows_per_unit
    groups = c.groups if t is None or c.groups < t else NO_GROUP_LIMIT
    binds = groups >= NO_GROUP_LIMIT or c.cap < groups * c.rows
    total = c.cap if t is not None and binds else None
    return c.rows, groups, total


def _cost(query: Query, relation: Relation, rho: Fraction | None) -> PrivacyCost:
    """The charge: the query's (epsilon, delta), amplified by Poisson sampling of units when
    it samples (add_remove neighbours only), with the zCDP rho of an all-Gaussian release."""
    if query.sample_rate is not None:
        if relation != "add_remove":
            raise ValidationError("sample() amplification holds for neighbouring='add_remove' "
                                  "only")
        return poisson_subsampling(query.epsilon, query.delta, query.sample_rate)
    return PrivacyCost(query.epsilon, query.delta, rho=rho)


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
    additive = [m for m in measures if not aggregate(m.op).exponential]
    w_g = sum((m.weight for m in additive), Fraction(0))
    rho_g = rho_for(eps * w_g / total, delta) if gaussian and w_g > 0 else None
    out: list[tuple[Fraction, Fraction, Fraction | None]] = []
    for m in measures:
        if rho_g is None or aggregate(m.op).exponential:
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
