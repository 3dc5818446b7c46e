"""``mode``: the most frequent value of a column among public candidates, per group.

Candidates (public, never read from the data): the values declared for the column with
``keys={column: [...]}`` (numbers), else the integers of the declared bounds for an integer
column (as a quantile's integer grid), ``(0, 1)`` for a bool column. Any other column is
refused with a ``ValidationError`` before the charge: a float column's values are not
enumerable, and a text column's counts are a grouped count (``groupby(column).count()``, whose
argmax is post-processing). Backends count each candidate's rows exactly (a ``bins`` request
whose bin ``(prev(v), v]`` holds exactly the float ``v``); other values count for none.

Privacy: the utility of candidate ``v`` is its count ``N_v`` (rows equal to ``v``). Adding or
removing one row moves one count by 1; changing one row (change_one) moves two counts by 1
each, but every single candidate's count by at most 1. The exponential mechanism's
sensitivity is the largest change of one candidate's utility, so it is 1 per row under both
relations, ``R`` (rows per unit and group) per unit. Permute-and-flip over the ``m``
candidates at acceptance rate ``eps / (2 R)``, sampled exactly (McKenna and Sheldon 2020,
Thm 1), is ``eps``-DP; it outputs one candidate (no ties). Grouped, a unit with ``a_g`` rows in
group ``g`` moves that group's utilities by at most ``a_g`` (``max(a_g, b_g) <= a_g + b_g``
under change_one), costing ``eps_g a_g / R`` there; with ``eps_g = eps R / T`` (``eps R /
(2 T)`` under change_one, :func:`~dpframe.core.sensitivity.quantile_group_share`) the groups,
composed in parallel, cost at most ``eps`` in all.

Accuracy: with probability ``>= level`` the released candidate's count is within
``2 R ln(m / (1 - level)) / eps_g`` rows of the top count (McKenna and Sheldon 2020, Thm 2):
the description's ``count_error``, a function of public parameters only.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...errors import ValidationError
from ..exact.compute import MAX_CELLS, AggregateRequest
from ..exact.values import NUMERIC_KINDS
from ..measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from ..noise.mechanisms import ExponentialSpec
from ..noise.rng import RandomSource
from ..sensitivity import quantile_group_share

if TYPE_CHECKING:
    from ..query import Measure, Query

#: Most candidates of one mode (declared values, or integers of the bounds).
MAX_CANDIDATES = 1_000_000
#: Most candidates with private keys (the groups are unknown until the data is read).
PRIVATE_KEY_CANDIDATES = 1 << 10
#: Largest magnitude of a candidate: floats hold every integer up to it exactly.
MAX_CANDIDATE = float(1 << 52)


@dataclass(frozen=True)
class Candidates:
    """A mode plan's public candidates: sorted ``values``, each counted in bin ``bins[i]`` of
    the plan's request, and where they come from (``"keys"``, ``"integers"``, ``"bool"``)."""

    values: tuple[float, ...]
    bins: tuple[int, ...]
    source: str

    def request(self, column: str) -> AggregateRequest:
        """Counts per ``(prev(v), v]``, right-closed as ``pd.cut``: exactly the rows equal to
        ``v`` (no float lies between ``prev(v)`` and ``v``); the gaps between are unused."""
        edges: list[float] = []
        for v in self.values:
            below = math.nextafter(v, -math.inf)
            if not edges or below > edges[-1]:
                edges.append(below)
            edges.append(v)
        return AggregateRequest("bins", column, edges=tuple(edges), right=True)


def candidates(values: list[float], source: str) -> Candidates:
    """Sorted distinct candidates and their bins in :meth:`Candidates.request`'s edges."""
    vals = sorted({0.0 if v == 0 else v for v in values})  # -0.0 and 0.0 are one value
    bins, edges = [], 0
    for i, v in enumerate(vals):
        gap = i == 0 or math.nextafter(v, -math.inf) > vals[i - 1]
        edges += 2 if gap else 1
        bins.append(edges - 2)
    return Candidates(tuple(vals), tuple(bins), source)


def _declared(query: Query, column: str) -> list[float] | None:
    """The column's declared values as floats (``keys=``), None when none are declared;
    ``ValidationError`` when they are not numbers a float holds exactly."""
    keys = query.keys.get(column)
    if keys is None:
        return None
    out = []
    for k in keys:
        if not isinstance(k, numbers.Real) or not math.isfinite(float(k)) or (
                abs(float(k)) > MAX_CANDIDATE or float(k) != k):
            raise ValidationError(
                f"mode of {column!r}: its declared values (keys=) must be finite numbers up to "
                "2**52 in magnitude; for text values release groupby(column).count() and take "
                "its largest count (post-processing)")
        out.append(float(k))
    return out


def _integer_candidates(query: Query, column: str) -> Candidates:
    """The integers of an integer column's declared bounds (at most :data:`MAX_CANDIDATES`)."""
    lo, hi = query.bounds_of(column)
    first, last = math.ceil(lo), math.floor(hi)
    if first > last:
        raise ValidationError(f"mode of {column!r}: its bounds hold no integer")
    if last - first + 1 > MAX_CANDIDATES:
        raise ValidationError(f"mode of {column!r}: its bounds hold more than "
                              f"{MAX_CANDIDATES} integers; declare narrower bounds or "
                              "the candidate values (keys=)")
    return candidates([float(v) for v in range(first, last + 1)], "integers")


def _source(query: Query, column: str, kind: str | None) -> Candidates:
    """The candidates by their source: declared keys, a bool's two values, an int's bounds."""
    if kind not in NUMERIC_KINDS:
        raise ValidationError(
            f"mode of {column!r}: its values are not numbers (kind {kind!r}); release "
            f"groupby({column!r}).count() over its declared keys and take the largest count "
            "(post-processing)")
    declared = _declared(query, column)
    if declared is not None:
        return candidates(declared, "keys")
    if kind == "bool":
        return candidates([0.0, 1.0], "bool")
    if kind == "int":
        return _integer_candidates(query, column)
    raise ValidationError(
        f"mode of {column!r} needs public candidates: declare them with keys={{{column!r}: "
        "[...]} (numbers), or use an integer or bool column with declared bounds (its "
        "integers are the candidates)")


def public_candidates(query: Query, column: str, kind: str | None) -> Candidates:
    """The candidates of ``mode(column)`` (module docstring): public, from the declared keys,
    the declared bounds and the column's kind. ``ValidationError`` before any charge."""
    found = _source(query, column, kind)
    limit = PRIVATE_KEY_CANDIDATES if query.by and query.private_keys else MAX_CANDIDATES
    groups = max(1, query.declared_groups)
    if len(found.values) > limit or groups * (2 * len(found.values)) > MAX_CELLS:
        raise ValidationError(f"mode of {column!r}: {len(found.values)} candidates in "
                              f"{groups} groups exceed the counters dpframe holds (at most "
                              f"{limit} candidates); declare fewer")
    return found


class Mode(Aggregate[Candidates]):
    op = "mode"
    names = ("mode",)
    summary = "most frequent value of a column among public candidates, per group"
    numeric = False  # refused in :func:`public_candidates`, with the way to a text mode
    exponential = True
    mechanism_pages = ("exponential",)
    main = "choice"

    def check(self, m: Measure, query: Query) -> None:
        assert m.column is not None
        if query.ci is not None:
            raise ValidationError("mode has no interval (ci=): its description's "
                                  "count_error states its accuracy")
        if _declared(query, m.column) is None and m.column in query.bounds:
            query.bounds_of(m.column)  # malformed bounds: BoundsError

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[Candidates]:
        assert m.column is not None
        found = public_candidates(ctx.query, m.column, ctx.column_kinds.get(m.column))
        per_group_eps = (eps * quantile_group_share(ctx.relation, ctx.contribution)
                         if ctx.grouped else eps)
        em = ExponentialSpec(per_group_eps, ctx.contribution.rows_per_group, len(found.values))
        return MeasurePlan(m, eps, delta, [found.request(m.column)], {"choice": em}, found)

    def release(self, mp: MeasurePlan[Candidates], rows: Rows, rng: RandomSource,
                level: float, want_ci: bool) -> MeasureRelease:
        counts: npt.NDArray[np.int64] = np.atleast_2d(np.asarray(
            rows.values(mp.requests[0]), dtype=np.int64))[:, list(mp.params.bins)]
        idx = mp.exponential().choose(counts, rng)
        vals = np.asarray(mp.params.values, dtype=np.float64)[idx]
        nan = np.full(vals.shape, np.nan)
        m = mp.measure
        return MeasureRelease(m.name, m.column, vals, nan, nan, self.describe(mp, level))

    def describe(self, mp: MeasurePlan[Candidates], level: float) -> dict[str, object]:
        """The candidates, the utility sensitivity and the count error at ``level``."""
        em = mp.exponential()
        d = self.describe_common(mp)
        d.update(candidates=em.n_candidates, candidate_source=mp.params.source,
                 utility_sensitivity=em.utility_sensitivity,
                 epsilon_per_group=float(em.epsilon), ci_level=level,
                 count_error=em.utility_error(level))
        return d

    def front_doc(self, name: str) -> str:
        return ("The most frequent value of ``column`` among public candidates, by "
                "permute-and-flip over their counts (one value, no ties): the values "
                "declared with ``keys={column: [...]}``, else the integers of an integer "
                "column's declared bounds (``(0, 1)`` for a bool column); other columns are "
                "refused before the charge. ``.attrs['dp']``'s ``count_error``: with "
                "probability ``ci_level`` the value's count is within it of the top count.\n\n"
                "Example:\n"
                "    >>> import dpframe as dpf, pandas as pd, warnings\n"
                "    >>> warnings.simplefilter('ignore')  # seeded: insecure, docs only\n"
                "    >>> df = pd.DataFrame({'stars': [1, 5, 5, 4, 5, 2] * 30})\n"
                "    >>> priv = df.dp(dpf.Session(10, seed=1), bounds={'stars': (1, 5)})\n"
                "    >>> float(priv.mode('stars', epsilon=1))\n"
                "    5.0")


MODE = Mode()
