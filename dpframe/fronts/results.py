"""Scalar results: numbers that carry their own provenance and interval.

``priv.mean("income", epsilon=0.2, ci=0.95)`` returns a :class:`DPFloat`: a ``float`` in every
way (``float(x)``, arithmetic, comparisons, formatting; arithmetic gives plain floats), with
``.lower`` / ``.upper`` when ``ci=`` was given and ``.attrs["dp"]`` holding the release's
provenance, like grouped results. Counts and integer sums are :class:`DPInt`. Each result owns
its provenance, so no other thread's release can be mistaken for it (0.1 exported scalars via a
session-wide "last release"). Everything here is post-processing of the noisy release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.apply import CoreRelease
from ..core.exact.memo import IdentityCache, RecentCache
from ..core.plan import exact_fingerprint
from ..core.query import Query


class _Provenance:
    """Shared read-only views of a scalar result's release metadata."""

    attrs: dict[str, Any]
    lower: float | None
    upper: float | None

    @property
    def provenance(self) -> Mapping[str, Any]:
        """The release's provenance (``.attrs["dp"]``): mechanism, scale, epsilon, delta, ..."""
        return self.attrs["dp"]

    @property
    def covers(self) -> str:
        """What the value and its interval are about, in words: the declared clamp bounds and,
        at the unit level, the contribution bounds, e.g. ``"values clamped to [-60, 240]; at
        most 200 rows per unit"`` (``.attrs["dp"]["covers"]``; empty when there is nothing to
        say). The interval covers that clamped, bounded value, not the raw one:
        ``diagnostics=`` counts the rows clamped and dropped."""
        from ..display.text import coverage_text

        return coverage_text(self.attrs["dp"])  # the stated "covers", else from the bounds

    @property
    def ci(self) -> tuple[float, float] | None:
        """``(lower, upper)`` when the query asked for ``ci=``, else None."""
        if self.lower is None or self.upper is None:
            return None
        return (self.lower, self.upper)

    def _repr_html_(self) -> str:
        """Notebook display: the value, its interval (with ``ci=``), the query and charge."""
        from ..display.html import scalar_html

        value = float(self)  # type: ignore[arg-type]  # the subclasses are float / int
        return scalar_html(value, self.attrs["dp"], self.lower, self.upper)


class DPFloat(_Provenance, float):
    """A released real number (see the module docstring)."""

    def __new__(cls, value: float, *, provenance: Mapping[str, Any],
                lower: float | None = None, upper: float | None = None) -> DPFloat:
        obj = float.__new__(cls, value)
        obj.attrs = {"dp": dict(provenance)}
        obj.lower, obj.upper = lower, upper
        return obj

    def __repr__(self) -> str:
        return float.__repr__(self)

    def __reduce__(self) -> Any:
        return (_rebuild, (DPFloat, float(self), self.attrs["dp"], self.lower, self.upper))


class DPInt(_Provenance, int):
    """A released integer (counts, sums of integer columns)."""

    def __new__(cls, value: int, *, provenance: Mapping[str, Any],
                lower: float | None = None, upper: float | None = None) -> DPInt:
        obj = int.__new__(cls, value)
        obj.attrs = {"dp": dict(provenance)}
        obj.lower, obj.upper = lower, upper
        return obj

    def __repr__(self) -> str:
        return int.__repr__(self)

    def __reduce__(self) -> Any:
        return (_rebuild, (DPInt, int(self), self.attrs["dp"], self.lower, self.upper))


def _rebuild(cls: type, value: Any, provenance: Mapping[str, Any], lower: float | None,
             upper: float | None) -> Any:
    return cls(value, provenance=provenance, lower=lower, upper=upper)


def diagnostics_as_numbers(provenance: dict[str, Any]) -> None:
    """``provenance["diagnostics"]`` (the core's ``{name: {"value", "lower", "upper", ...}}``)
    as ``{name: DPInt}`` with ``.lower`` / ``.upper``, in place (docs/reference.md); each
    count's own provenance (``.attrs["dp"]``) states its epsilon, noise scale, sensitivity and
    (``rows_dropped``) the cap ``rows_dropped_cap``."""
    released = provenance.get("diagnostics")
    if not isinstance(released, Mapping):
        return
    provenance["diagnostics"] = {
        name: v if isinstance(v, DPInt) else DPInt(
            int(v["value"]), provenance={
                "diagnostics_of": provenance.get("query"),
                **{k: x for k, x in v.items() if k not in ("value", "lower", "upper")}},
            lower=v["lower"], upper=v["upper"])
        for name, v in released.items()}



class ContributionBounds(dict[str, int | None]):
    """A DP choice of contribution bounds (``priv.choose_contribution_bounds(epsilon=)``): a
    plain dict of ``max_rows_per_unit`` / ``max_groups_per_unit`` / ``max_rows_per_group``,
    always all three (None for a bound that does not bind: not declared), that plugs into
    ``df.dp(..., **bounds)``, with the release's provenance in ``.attrs["dp"]`` (and
    ``.provenance``): the noisy histograms, the candidates, the ledger entry. Public: using it
    is post-processing and costs nothing more."""

    attrs: dict[str, Any]

    def __init__(self, bounds: Mapping[str, int | None], provenance: Mapping[str, Any]
                 ) -> None:
        super().__init__(bounds)
        self.attrs = {"dp": dict(provenance)}

    @property
    def provenance(self) -> Mapping[str, Any]:
        """The release's provenance (``.attrs["dp"]``)."""
        return self.attrs["dp"]

    def __reduce__(self) -> Any:
        return (ContributionBounds, (dict(self), self.attrs["dp"]))


__all__ = ["ContributionBounds", "DPFloat", "DPInt", "diagnostics_as_numbers"]


_INDEX_DTYPES = {"int": "int64", "float": "float64", "bool": "bool"}


def histogram_index(edges: Sequence[float], right: bool, include_lowest: bool,
                    name: str | None) -> pd.IntervalIndex:
    """The intervals of a histogram's bins: the declared edges, closed as ``pd.cut`` closes
    them; with ``include_lowest`` (and ``right``) the first left end is the one ``pd.cut``
    gives (the lowest edge lowered by its display precision), so the label holds the edge the
    bin counts. Depends on the edges only."""
    breaks = [float(e) for e in edges]
    if right and include_lowest:
        shown = pd.cut(pd.Series([], dtype="float64"), breaks, right=True,
                       include_lowest=True).cat.categories
        breaks[0] = min(breaks[0], float(shown[0].left))
    return pd.IntervalIndex.from_breaks(breaks, closed="right" if right else "left", name=name)


def label_index(labels: list[object], kind: str, name: str) -> pd.Index:
    """Released canonical labels as an Index of the dtype of the column's kind (object for
    other kinds, or for ints beyond int64)."""
    dtype = _INDEX_DTYPES.get(kind, object)
    if dtype == "bool" and not all(isinstance(v, bool) for v in labels):
        dtype = object  # pandas would make any label a bool by its truth (text 'x' True)
    try:
        return pd.Index(labels, dtype=dtype, name=name)
    except (OverflowError, TypeError, ValueError):
        return pd.Index(labels, dtype=object, name=name)


#: Indexes of declared keys, by the exact fingerprint of (names, keys): nightly jobs and
#: notebooks release over the same declared keys again and again.
_DECLARED_INDEXES: RecentCache[pd.Index] = RecentCache(64)
#: The same indexes by the identity of the declared key tuples a query held (a frame passes
#: its own tuples, immutable, release after release).
_BY_IDENTITY: IdentityCache[pd.Index] = IdentityCache(64)


def declared_index(declared: tuple[tuple[object, ...], ...], by: tuple[str, ...],
                    keys: list[tuple[object, ...]]) -> pd.Index:
    """The index of a release over declared keys (``keys``, the combinations of the
    ``declared`` tuples of the ``by`` columns): the declared labels in declared order (public:
    no data reaches it). Built once per distinct declared list; each result gets its own view,
    so renaming one result's index leaves the others alone."""
    known = _BY_IDENTITY.get(declared, by)
    if known is not None:
        return known.view()
    fingerprint = exact_fingerprint((by, keys), (v for k in keys for v in k))
    index = _DECLARED_INDEXES.get(fingerprint)
    if index is None:
        index = (pd.Index([k[0] for k in keys], name=by[0]) if len(by) == 1
                 else pd.MultiIndex.from_tuples(keys, names=list(by)))
        _DECLARED_INDEXES.put(fingerprint, index)
    _BY_IDENTITY.put(declared, index, by)
    return index.view()


def released_index(q: Query, keys: list[tuple[object, ...]], by: tuple[str, ...],
                   private: bool, kinds: Mapping[str, str]) -> pd.Index:
    """The index of a grouped release. Declared combinations and rollups: their labels in
    declared order (margins last). Public keys: the declared labels in declared order. Private
    keys: canonical labels (already in the core's total order) in an index whose dtype follows
    the column's public kind (``kinds``), not the released values."""
    if q.rollup is not None or q.combos is not None:  # declared combinations, margins
        if len(by) == 1:
            return pd.Index([k[0] for k in keys], name=by[0])
        return pd.MultiIndex.from_tuples(keys, names=list(by))
    if not private:
        return declared_index(tuple(q.keys[c] for c in by), by, keys)
    levels = [label_index([k[i] for k in keys], kinds[col], col) for i, col in enumerate(by)]
    if len(levels) == 1:
        return levels[0]
    return pd.MultiIndex.from_arrays(levels, names=list(by))


def _one_value(r: CoreRelease, ci: float | None) -> tuple[Any, float | None, float | None]:
    """A release's one value and, when ``ci=`` was asked, its interval's ends."""
    m = r.measures[0]
    lo = hi = None
    if ci is not None and m.lower is not None and m.upper is not None and bool(
            np.isfinite(m.lower[0])):
        lo, hi = float(m.lower[0]), float(m.upper[0])
    return m.values[0], lo, hi


def as_int(r: CoreRelease, ci: float | None) -> DPInt:
    """The release's one value as an int carrying its provenance (``.attrs["dp"]``) and, with
    ``ci=``, its interval (``.lower`` / ``.upper``): post-processing."""
    v, lo, hi = _one_value(r, ci)
    return DPInt(int(v), provenance=r.provenance, lower=lo, upper=hi)


def as_float(r: CoreRelease, ci: float | None) -> DPFloat:
    """As :func:`as_int`, a float."""
    v, lo, hi = _one_value(r, ci)
    return DPFloat(float(v), provenance=r.provenance, lower=lo, upper=hi)
