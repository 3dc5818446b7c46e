"""Applying a plan to exact aggregates: the only place noise meets data.

:func:`apply_plan` takes a :class:`~dpframe.core.plan.ReleasePlan` (public) and the backend's
:class:`~dpframe.core.compute.ExactAggregates`, selects private keys, and asks each measure's
aggregate (:mod:`dpframe.core.aggregates`) to add its planned noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .aggregates import aggregate
from .compute import ExactAggregates
from .measure import MeasurePlan, MeasureRelease, Rows
from .plan import ReleasePlan
from .rng import RandomSource
from .values import sorted_order


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
    only then sorted, by the total order of :mod:`dpframe.core.values` on their canonical labels:
    the order of the released keys is a function of the released set alone, so a key that was
    observed but not released cannot move them (PRIVACY.md, "One canonical value model").
    """
    keys = exact.keys
    keep = np.arange(len(keys))
    noisy: np.ndarray | None = None
    sel = plan.selection
    if sel is not None:
        if sel.released_count:  # one count (rows = units): the released one is thresholded
            counts = exact.values[plan.measures[0].requests[0].key]
        else:
            assert exact.unit_counts is not None
            counts = exact.unit_counts
        keep, noisy = sel.select(counts, rng)
    if plan.query.private_keys:
        keep = keep[sorted_order([keys[i] for i in keep])]
        keys = [keys[i] for i in keep]
    level = plan.query.ci or 0.95
    rows = Rows(exact, keep)
    if sel is not None and sel.released_count:
        assert noisy is not None
        out = [_thresholded_count(plan.measures[0], noisy[keep], level)]
    else:
        out = [aggregate(mp.measure.op).release(mp, rows, rng, level, plan.query.ci is not None)
               for mp in plan.measures]
    prov = plan.describe()
    return CoreRelease(keys, plan.query.by, out, prov)


def _thresholded_count(mp: MeasurePlan, noisy: np.ndarray, level: float) -> MeasureRelease:
    """The count measure of a stability histogram: the selection's noisy counts of the released
    keys, as :class:`~dpframe.core.measure.AdditiveCount` would have released them (the same
    noise spec, interval and description), without a second draw."""
    assert mp.noise is not None
    hw = mp.noise.half_width(level)
    m = mp.measure
    return MeasureRelease(m.name, m.column, noisy, noisy - hw, noisy + hw,
                          aggregate(m.op).describe(mp, level))
