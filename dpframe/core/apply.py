"""Applying a plan to exact aggregates: the only place noise meets data.

:func:`apply_plan` takes a :class:`~dpframe.core.plan.ReleasePlan` (public) and the backend's
:class:`~dpframe.core.exact.compute.ExactAggregates`, selects private keys, and asks each measure's
aggregate (:mod:`dpframe.core.aggregates`) to add its planned noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .aggregates import aggregate
from .diagnostics import release_diagnostics
from .exact.compute import ExactAggregates
from .exact.values import sorted_order
from .hierarchy import leaf_positions, release_rollup
from .hints import near_zero_hint, no_keys_hint
from .measure import MeasurePlan, MeasureRelease, Rows
from .noise.rng import RandomSource
from .plan import ReleasePlan, thresholds_rows
from .projection import postprocessed


@dataclass
class CoreRelease:
    """The result of a release, before a front wraps it in pandas objects."""

    keys: list[tuple[object, ...]]
    by: tuple[str, ...]
    measures: list[MeasureRelease]
    provenance: dict[str, object]


def apply_plan(plan: ReleasePlan, exact: ExactAggregates, rng: RandomSource) -> CoreRelease:
    """Add noise to exact aggregates as planned. The only place noise meets data.

    Private keys are selected first (:meth:`~dpframe.core.selection.SelectionPlan.select`), and
    only then sorted, by the total order of :mod:`dpframe.core.exact.values` on their canonical
    labels:
    the order of the released keys is a function of the released set alone, so a key that was
    observed but not released cannot move them
    (docs/privacy.md#one-canonical-value-model-keys-and-units). Histograms and grouped counts
    are then put in the form their plan states (:func:`~dpframe.core.projection.postprocessed`:
    projected over the released cells, post-processing), before any result is built.
    """
    if plan.rollup is not None:  # every level, made consistent (core/hierarchy.py)
        keys, rolled = release_rollup(plan.rollup, exact, rng)
        return CoreRelease(keys, plan.query.by, [rolled], _described(plan, exact, rng))
    keys = exact.keys
    keep, noisy = _select(plan, exact, rng)
    if plan.query.combos is not None:  # the declared combinations (core/hierarchy.py)
        keep = leaf_positions(plan.query)
        keys = [tuple(k) for k in plan.query.combos]
    if plan.query.private_keys:
        keep = keep[sorted_order([keys[i] for i in keep])]
        keys = [keys[i] for i in keep]
    level = plan.query.ci or 0.95
    if noisy is not None:  # the released count is the thresholded one
        out = [_thresholded_count(plan.measures[0], noisy[keep], level)]
    else:
        rows = Rows(exact, keep)
        out = [aggregate(mp.measure.op).release(mp, rows, rng, level, plan.query.ci is not None)
               for mp in plan.measures]
    # post-processing of the noisy values (released keys only): histograms and grouped counts
    # projected onto non-negative values with their noisy total kept (core/projection.py)
    out = [postprocessed(m, mp.form) for mp, m in zip(plan.measures, out, strict=True)]
    prov = _described(plan, exact, rng)
    measures = prov.get("measures")
    if isinstance(measures, list):  # what a release states once drawn (a two-stage mean's
        for d, m in zip(measures, out, strict=True):  # split: a function of its pilot)
            if "released" in m.description:
                d["released"] = m.description["released"]
    if not plan.query.private_keys:  # post-processing of the noisy values (core/hints.py)
        hint = near_zero_hint(plan.measures, out, len(keys), plan.query.by)
        if hint is not None:
            prov["warnings"] = [hint]
    elif not keys and plan.selection is not None:  # the released key set is empty (public)
        prov["warnings"] = [no_keys_hint(plan.selection, plan.query.by,
                                         plan.contribution.groups_per_unit,
                                         plan.query.privacy_unit is not None,
                                         thresholds_rows(plan.selection, plan.contribution))]
    return CoreRelease(keys, plan.query.by, out, prov)


def _described(plan: ReleasePlan, exact: ExactAggregates, rng: RandomSource
               ) -> dict[str, object]:
    """The release's provenance: the plan's description, then the noisy counts of
    ``diagnostics=`` (drawn after the measures, at the query's interval level)."""
    prov = plan.describe()
    if plan.diagnostics is not None:
        prov["diagnostics"] = release_diagnostics(plan.diagnostics, exact.diagnostics, rng,
                                                  plan.query.ci or 0.95)
    return prov


def _select(plan: ReleasePlan, exact: ExactAggregates, rng: RandomSource
            ) -> tuple[np.ndarray, np.ndarray | None]:
    """The observed keys' indices to release (all without selection) and, when the released
    count is the thresholded one, every key's noisy count (None otherwise)."""
    sel = plan.selection
    if sel is None:
        return np.arange(len(exact.keys)), None
    if sel.released_count:  # one count (rows = units): the released one is thresholded
        keep, noisy = sel.select(exact.values[plan.measures[0].requests[0].key], rng)
        return keep, noisy
    assert exact.unit_counts is not None
    return sel.select(exact.unit_counts, rng)[0], None


def _thresholded_count(mp: MeasurePlan, noisy: np.ndarray, level: float) -> MeasureRelease:
    """The count measure of a stability histogram: the selection's noisy counts of the released
    keys, as :class:`~dpframe.core.measure.AdditiveCount` would have released them (the same
    noise spec, interval and description), without a second draw."""
    hw = mp.additive("count").half_width(level)
    m = mp.measure
    return MeasureRelease(m.name, m.column, noisy, noisy - hw, noisy + hw,
                          aggregate(m.op).describe(mp, level))
