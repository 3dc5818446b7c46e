"""``histogram``: counts per bin, with ``pd.cut`` semantics (``right``, ``include_lowest``).

Privacy: bins partition the rows, so one unit's ``R`` rows move at most ``R`` bin counts by one
each (add/remove; see :func:`~dpframe.core.sensitivity.histogram_sensitivity`): geometric or
discrete Gaussian noise on every declared bin, empty or not.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import TYPE_CHECKING

from ...errors import ValidationError
from ..compute import AggregateRequest
from ..measure import AdditiveCount, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..rng import RandomSource
from ..sensitivity import histogram_sensitivity

if TYPE_CHECKING:
    from ..query import Measure, Query


class Histogram(AdditiveCount):
    op = "histogram"
    names = ("histogram",)
    summary = "counts per declared bin, exactly pd.cut's bins"
    numeric = True

    def check(self, m: Measure, query: Query) -> None:
        edges = m.edges or ()
        if len(edges) < 2 or any(not math.isfinite(e) for e in edges) or any(
                b <= a for a, b in itertools.pairwise(edges)):
            raise ValidationError("histogram bins must be >= 2 finite, increasing edges")

    def cells(self, m: Measure) -> int:
        return len(m.edges or ())

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan:
        s = histogram_sensitivity(ctx.relation, ctx.contribution)
        assert m.edges is not None
        req = AggregateRequest("bins", m.column, edges=tuple(m.edges), right=m.right,
                               include_lowest=m.include_lowest)
        return MeasurePlan(m, eps, delta, [req], noise=ctx.additive(s, eps, delta, rho, True))

    def release(self, mp: MeasurePlan, rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        out = super().release(mp, rows, rng, level, want_ci)
        m = mp.measure
        out.bins, out.right, out.include_lowest = m.edges, m.right, m.include_lowest
        return out


HISTOGRAM = Histogram()
