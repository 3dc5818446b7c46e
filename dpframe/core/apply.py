"""Applying a plan to exact aggregates: the only place noise meets data.

:func:`apply_plan` takes a :class:`~dpframe.core.plan.ReleasePlan` (public) and the backend's
:class:`~dpframe.core.compute.ExactAggregates`, selects private keys, and asks each measure's
aggregate (:mod:`dpframe.core.aggregates`) to add its planned noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .aggregates import aggregate
from .compute import ExactAggregates
from .hints import near_zero_hint
from .measure import MeasureRelease, Rows
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
    rows = Rows(exact, keep)
    out = [aggregate(mp.measure.op).release(mp, rows, rng, level, plan.query.ci is not None)
           for mp in plan.measures]
    prov = plan.describe()
    if not plan.query.private_keys:  # post-processing of the noisy values (core/hints.py)
        hint = near_zero_hint(plan.measures, out, len(keys), plan.query.by)
        if hint is not None:
            prov["warnings"] = [hint]
    return CoreRelease(keys, plan.query.by, out, prov)
