"""``histogram``: counts per bin, with ``pd.cut`` semantics (``right``, ``include_lowest``).

Edges are declared: a list (the outer ones may be -inf and +inf, as ``pd.cut`` takes them), or
a number of equal-width bins over the column's declared bounds (:func:`histogram_edges`), never
read from the data (``pd.cut(x, 10)`` spreads its bins over the data's range).

Privacy: bins partition the rows, so one unit's ``R`` rows move at most ``R`` bin counts by one
each (add/remove; see :func:`~dpframe.core.sensitivity.histogram_sensitivity`): geometric or
discrete Gaussian noise on every declared bin, empty or not. Grouped (a crosstab), the
(group, bin) cells partition the rows too, and a unit touches at most its ``k`` groups' cells
with ``R`` rows each: the grouped count's sensitivity
(:func:`~dpframe.core.sensitivity.count_sensitivity`). The noisy cells (all of them, over the
groups too) are then projected onto non-negative values with their noisy total kept
(``postprocess="nonnegative"``, the default; ``postprocess=None`` keeps the raw, unbiased
values): post-processing of the noisy values alone (:mod:`dpframe.core.projection`).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, cast

from ...errors import ValidationError
from ..exact.compute import AggregateRequest
from ..measure import AdditiveCount, BinLayout, MeasurePlan, PlanContext
from ..sensitivity import count_sensitivity, histogram_sensitivity

if TYPE_CHECKING:
    from ..query import Measure, Query


@dataclass(frozen=True)
class Bins(BinLayout):
    """A histogram measure's own arguments (public, checked when built): its declared bin
    ``edges`` and which side of each bin is closed, as ``pd.cut`` takes them. Also the
    release's layout (:class:`~dpframe.core.measure.BinLayout`)."""

    def __post_init__(self) -> None:
        if isinstance(self.edges, list):  # held as a tuple (hashable, as the plan takes it)
            object.__setattr__(self, "edges", tuple(self.edges))
        if not isinstance(self.edges, tuple) or not valid_edges(self.edges):
            raise ValidationError("histogram bins must be >= 2 increasing edges, finite but "
                                  "for a first edge -inf and a last edge +inf")
        if not isinstance(self.right, bool) or not isinstance(self.include_lowest, bool):
            raise ValidationError("right and include_lowest must be True or False")


class Histogram(AdditiveCount[BinLayout]):
    op = "histogram"
    names = ("histogram",)
    summary = "counts per declared bin, exactly pd.cut's bins"
    numeric = True
    in_agg = False  # one count per bin, not one value per group
    params_type = Bins
    additive = True
    value_name = "count"

    def arguments(self, name: str) -> tuple[str, ...]:
        return ("bins",)

    def check(self, m: Measure[Bins], query: Query) -> None:
        """Nothing beyond its bins, checked when built (:class:`Bins`): a histogram needs no
        bounds (values outside its edges are dropped)."""
        return None

    def cells(self, m: Measure[Bins], groups: int = 1) -> int:
        return len(m.params.edges)

    def plan(self, ctx: PlanContext, m: Measure[Bins], eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[BinLayout]:
        # grouped, the bins of all groups are the cells of one count (a unit's rows land in at
        # most its groups' cells): the grouped count's sensitivity; ungrouped, the bins alone
        s = (count_sensitivity(ctx.relation, ctx.contribution, True) if ctx.grouped
             else histogram_sensitivity(ctx.relation, ctx.contribution))
        p = m.params
        bins = BinLayout(p.edges, p.right, p.include_lowest)
        req = AggregateRequest("bins", m.column, edges=bins.edges, right=bins.right,
                               include_lowest=bins.include_lowest)
        return MeasurePlan(m, eps, delta, [req],
                           {"count": ctx.additive(s, eps, delta, rho, True)}, bins,
                           ctx.count_form)

    def layout(self, mp: MeasurePlan[BinLayout]) -> BinLayout:
        """The declared bins (the plan's params): the counts are per group and bin."""
        return mp.params


def valid_edges(edges: Sequence[object]) -> bool:
    """Whether ``edges`` are at least two increasing real numbers (not bools), finite but for
    a first edge -inf and a last edge +inf, as ``pd.cut`` takes them (public: declared)."""
    if len(edges) < 2 or not all(_real(e) for e in edges):
        return False
    reals = cast(Sequence[float], edges)
    return _outer(reals[0], reals[-1]) and all(math.isfinite(e) for e in reals[1:-1]) and all(
        a < b for a, b in itertools.pairwise(reals))


def _real(e: object) -> bool:
    return isinstance(e, numbers.Real) and not isinstance(e, bool)


def _outer(first: float, last: float) -> bool:
    """The outer edges: numbers, the first may be -inf and the last +inf."""
    return not (math.isnan(first) or math.isnan(last) or first == math.inf or last == -math.inf)


HISTOGRAM = Histogram()

#: Most bins ``bins=<int>`` may ask for (a release holds at most MAX_CELLS counters anyway).
MAX_EQUAL_BINS = 100_000


def histogram_edges(bins: int, bounds: tuple[float, float] | None, column: str
                    ) -> tuple[float, ...]:
    """``bins`` equal-width bins over the declared ``bounds`` of ``column``: ``bins + 1``
    edges from the lower to the upper bound (public: the bounds are declared). Raises
    :class:`~dpframe.errors.BoundsError` without declared bounds."""
    from ...errors import BoundsError

    if isinstance(bins, bool) or not 1 <= bins <= MAX_EQUAL_BINS:
        raise ValidationError(f"bins must be a list of edges or a number of bins in "
                              f"[1, {MAX_EQUAL_BINS:,}]")
    if bounds is None:
        raise BoundsError(f"bins={bins} spreads the bins over the declared bounds of "
                          f"{column!r}: declare bounds={{{column!r}: (lo, hi)}} or pass edges")
    lo, hi = float(bounds[0]), float(bounds[1])
    step = (hi - lo) / bins
    return (lo, *(lo + i * step for i in range(1, bins)), hi)
