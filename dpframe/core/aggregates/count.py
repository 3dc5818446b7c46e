"""``count``: rows per group, or non-missing values of a column.

Privacy: one unit adds or removes at most ``R`` rows in each of the ``k`` groups it touches, so
the count vector has L1 sensitivity ``R k`` (add/remove; twice that for change-one, see
:func:`~dpframe.core.sensitivity.count_sensitivity`); geometric noise of scale ``L1 / eps`` is
eps-DP (Ghosh, Roughgarden and Sundararajan 2009), the discrete Gaussian rho-zCDP (Canonne,
Kamath and Steinke 2020).

Grouped, the noisy vector over the groups is then projected onto non-negative values with its
noisy total kept (``postprocess="nonnegative"``, the default; ``postprocess=None`` keeps the raw,
unbiased values): post-processing of the noisy values alone (:mod:`dpframe.core.projection`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from ..exact.compute import AggregateRequest
from ..measure import AdditiveCount, MeasurePlan, PlanContext

if TYPE_CHECKING:
    from ..query import Measure, Query


class Count(AdditiveCount[None]):
    op = "count"
    names = ("count",)
    summary = "rows per group, or non-missing values of a column"
    additive = True
    value_name = "count"
    zero_when_empty = True
    rollup = True
    needs_column = False

    def check(self, m: Measure, query: Query) -> None:
        return None

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[None]:
        s = ctx.count_sensitivity()
        req = (AggregateRequest("rows") if m.column is None
               else AggregateRequest("nonnull", m.column))
        # grouped: one vector over disjoint groups, released in the query's form (projected
        # onto non-negative values with its noisy total kept by default: core/projection.py)
        return MeasurePlan(m, eps, delta, [req], {"count": ctx.additive(s, eps, delta, rho, True)},
                           None, ctx.count_form if ctx.grouped else None)


COUNT = Count()
