"""Grouped releases: :class:`PrivateGroupBy`, built by ``PrivateFrame.groupby``. It only builds
Query objects, sends them through the session's release path and wraps the results as pandas
objects with ``.attrs["dp"]`` provenance; no sensitivity, noise or budget logic lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Unpack

import numpy as np
import pandas as pd

from ..core.aggregates import NAMES, aggregate
from ..core.apply import CoreRelease
from ..core.query import (
    DEFAULT_GRID,
    Measure,
    Query,
)
from .aggregation import SIZE, agg_columns, agg_pairs, size_columns, weights_by_label
from .arguments import (
    QUANTILE_LEVELS,
    as_ddof,
    column_attribute,
    fraction_weights,
    identifiers,
    level_index,
    measure_levels,
    options_checked,
    pipe_to,
    quantile_measure,
)
from .docs import (
    BASIC,
    RETURNS_AGG,
    RETURNS_SERIES,
    ReleaseOptions,
    releases,
)
from .idioms import sort_by_labels
from .registered import registered
from .release import Releaser
from .results import ContributionBounds, histogram_index, released_index
from .selection import PrivateSelection

#: The options of a grouped aggregate.
GROUPED = (*BASIC, "selection_share")


@options_checked
@registered(grouped=True)
class PrivateGroupBy:
    """Grouped aggregates: one charge per release (parallel composition over disjoint groups)."""

    _grouped: ClassVar[bool] = True  # selections tell group-bys from frames by it

    def __init__(self, releaser: Releaser, by: tuple[str, ...], private: bool,
                 sort: bool = False) -> None:
        self._rel = releaser
        self._by = by
        self._private = private
        self._sort = sort

    def _release(self, measures: list[Measure], description: str,
                 rollup: Mapping[str, object] | None = None,
                 **options: Unpack[ReleaseOptions]) -> tuple[Query, CoreRelease]:
        q = self._rel.query(measures, description, by=self._by, private=self._private,
                            **(rollup or {}), **options)
        return q, self._rel.run(q)

    def _preview(self, mode: str, call: Callable[[Any], object]) -> Any:
        """``call`` on this group-by with its releases previewed (see
        ``PrivateFrame._preview``)."""
        return self._rel.previewed(mode, lambda rel: call(
            PrivateGroupBy(rel, self._by, self._private, self._sort)))

    def _index(self, q: Query, r: CoreRelease) -> pd.Index:
        kinds = self._rel.backend.schema() if self._private else {}
        return released_index(q, r.keys, self._by, self._private, kinds)

    def _series(self, q: Query, r: CoreRelease, name: str, ci: float | None
                ) -> pd.Series | pd.DataFrame:
        m = r.measures[0]
        idx = self._index(q, r)
        out: pd.Series | pd.DataFrame
        meas = q.measures[0]
        if measure_levels(meas) is not None:  # pandas' groupby().quantile(list): (group, q)
            lv = level_index(meas)
            keys = [k if isinstance(k, tuple) else (k,) for k in idx]
            full = pd.MultiIndex.from_tuples([(*k, v) for k in keys for v in lv],
                                             names=[*idx.names, None])
            out = pd.Series(np.asarray(m.values).reshape(-1), index=full, name=name)
            out.attrs["dp"] = r.provenance
            return sort_by_labels(out) if self._sort else out
        if ci is None:
            out = pd.Series(m.values, index=idx, name=name)
        else:
            assert m.lower is not None and m.upper is not None
            out = pd.DataFrame({name: m.values, "lower": m.lower, "upper": m.upper}, index=idx)
        out.attrs["dp"] = r.provenance
        return sort_by_labels(out) if self._sort else out

    def _one(self, meas: Measure, name: str, options: ReleaseOptions,
             rollup: Mapping[str, object] | None = None) -> pd.Series | pd.DataFrame:
        rolled = "" if not rollup or not rollup["rollup"] else ", rollup"
        q, r = self._release([meas], f"groupby({','.join(self._by)}).{meas.name}"
                                     f"({meas.column or ''}{rolled})", rollup, **options)
        return self._series(q, r, name, options.get("ci"))

    def _registered(self, meas: Measure, options: ReleaseOptions) -> pd.Series | pd.DataFrame:
        """The release of a method generated from the registry (``fronts/registered.py``): a
        Series named by the column, as pandas names ``groupby(...)[column].nunique()``."""
        assert meas.column is not None
        return self._one(meas, meas.column, options)

    def choose_contribution_bounds(self, *, epsilon: float, cap: int = 1000,
                                   release_epsilon: float = 1.0, release: str = "sum"
                                   ) -> ContributionBounds:
        """A DP choice of T, k and R for a release grouped like this one:
        :meth:`PrivateFrame.choose_contribution_bounds` with ``by`` these columns."""
        return self._rel.choose_contribution_bounds(epsilon, self._by, cap, release_epsilon,
                                                    release)

    def contribution_bounds(self, *, epsilon: float, cap: int = 1000,
                            release_epsilon: float = 1.0, release: str = "sum"
                            ) -> ContributionBounds:
        """:meth:`choose_contribution_bounds` under its earlier name (a release: it spends
        ``epsilon``)."""
        return self.choose_contribution_bounds(epsilon=epsilon, cap=cap,
                                               release_epsilon=release_epsilon,
                                               release=release)

    @releases(RETURNS_SERIES, *GROUPED, "postprocess")
    def count(self, column: str | None = None, *, rollup: bool = False,
              level_shares: Sequence[float] | None = None, margins_name: str = "All",
              **options: Unpack[ReleaseOptions]) -> pd.Series | pd.DataFrame:
        """Noisy row count per group: a Series named ``count``. ``accuracy=``: the smallest
        epsilon whose per-group interval meets that half-width (see ``PrivateFrame.count``).

        ``postprocess=`` as for :meth:`PrivateFrame.histogram` (None: the raw counts).
        ``rollup=True``: every level in one charge, made consistent (float64, generalized least
        squares, never projected), labelled as ``pivot_table(margins=True)`` with
        ``margins_name``; epsilon split over the levels equally or by ``level_shares=`` (the
        grand total first): docs/concepts.md#declared-combinations-and-rollups.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").count(epsilon=1e6).to_dict()
            {'a': 50, 'b': 50}
        """
        return self._one(Measure("count", column), "count", options,
                         {"rollup": rollup, "level_shares": level_shares,
                          "margins_name": margins_name})

    @releases(RETURNS_SERIES, *GROUPED)
    def count_distinct(self, column: str, **options: Unpack[ReleaseOptions]
                       ) -> pd.Series | pd.DataFrame:
        """Noisy number of distinct values of ``column`` per group (see
        ``PrivateFrame.count_distinct``).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").count_distinct("x", epsilon=1e6).to_dict()
            {'a': 1, 'b': 1}
        """
        return self._one(Measure("count_distinct", column), "count_distinct", options)

    def size(self, *, epsilon: float, **kw: Any) -> Any:
        """Alias of :meth:`count` over rows."""
        return self.count(epsilon=epsilon, **kw)

    @releases(RETURNS_SERIES, *GROUPED)
    def sum(self, column: str, *, rollup: bool = False,
            level_shares: Sequence[float] | None = None, margins_name: str = "All",
            **options: Unpack[ReleaseOptions]) -> pd.Series | pd.DataFrame:
        """Noisy clamped sum per group (``accuracy=``: see ``PrivateFrame.count``;
        ``rollup=``, ``level_shares=``, ``margins_name=``: see :meth:`count`).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").sum("x", epsilon=1e6).to_dict()
            {'a': 50.0, 'b': 150.0}
        """
        return self._one(Measure("sum", column), column, options,
                         {"rollup": rollup, "level_shares": level_shares,
                          "margins_name": margins_name})

    @releases(RETURNS_SERIES, *GROUPED, "min_rows")
    def mean(self, column: str, **options: Unpack[ReleaseOptions]) -> pd.Series | pd.DataFrame:
        """Noisy mean per group (``accuracy=`` with ``min_rows=``: see ``PrivateFrame.mean``).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").mean("x", epsilon=1e6).round(6).to_dict()
            {'a': 1.0, 'b': 3.0}
        """
        return self._one(Measure("mean", column), column, options)

    @releases(RETURNS_SERIES, *GROUPED)
    def var(self, column: str, *, ddof: int = 1, **options: Unpack[ReleaseOptions]
            ) -> pd.Series | pd.DataFrame:
        """Noisy variance per group (see :meth:`PrivateFrame.var`).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").var("x", epsilon=1e6).round(6).to_dict()
            {'a': 0.0, 'b': 0.0}
        """
        return self._one(aggregate("var").measure(column, ddof=as_ddof(ddof)), column, options)

    @releases(RETURNS_SERIES, *GROUPED)
    def std(self, column: str, *, ddof: int = 1, **options: Unpack[ReleaseOptions]
            ) -> pd.Series | pd.DataFrame:
        """Noisy standard deviation per group (see :meth:`PrivateFrame.std`).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv["x"].std(epsilon=1e6, ddof=0) > 0.99  # every row together
            True
        """
        return self._one(aggregate("std").measure(column, ddof=as_ddof(ddof)), column, options)

    @releases(RETURNS_SERIES, *GROUPED)
    def max(self, column: str, *, resolution: int = DEFAULT_GRID, **options: Unpack[ReleaseOptions]
            ) -> pd.Series | pd.DataFrame:
        """Per-group maximum by the exponential mechanism.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1, 3] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> out = priv.groupby("g").max("x", epsilon=1e6, resolution=6)
            >>> bool(1.0 <= out["a"] <= 5.0 and 3.0 <= out["b"] <= 5.0)
            True
        """
        meas = quantile_measure(column, "max", None, resolution)
        return self._one(meas, column, options)

    @releases(RETURNS_SERIES, *GROUPED)
    def min(self, column: str, *, resolution: int = DEFAULT_GRID, **options: Unpack[ReleaseOptions]
            ) -> pd.Series | pd.DataFrame:
        """Per-group minimum by the exponential mechanism.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1, 3] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> out = priv.groupby("g").min("x", epsilon=1e6, resolution=6)
            >>> bool(0.0 <= out["a"] <= 1.0 and 0.0 <= out["b"] <= 3.0)
            True
        """
        meas = quantile_measure(column, "min", None, resolution)
        return self._one(meas, column, options)

    @releases(RETURNS_SERIES, *GROUPED)
    def quantile(self, column: str, q: float = 0.5, *, resolution: int = DEFAULT_GRID,
                 **options: Unpack[ReleaseOptions]) -> pd.Series | pd.DataFrame:
        """Per-group quantile by the exponential mechanism.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1, 3] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").quantile("x", 0.5, epsilon=1e6, resolution=6).to_dict()
            {'a': 1.0, 'b': 3.0}
        """
        meas = quantile_measure(column, "quantile", q, resolution)
        return self._one(meas, column, options)

    @releases(RETURNS_SERIES, *GROUPED)
    def median(self, column: str, *, resolution: int = DEFAULT_GRID,
               **options: Unpack[ReleaseOptions]) -> pd.Series | pd.DataFrame:
        """Per-group median by the exponential mechanism.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1, 3] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").median("x", epsilon=1e6, resolution=6).to_dict()
            {'a': 1.0, 'b': 3.0}
        """
        meas = quantile_measure(column, "median", None, resolution)
        return self._one(meas, column, options)

    @releases(RETURNS_SERIES, *GROUPED, "postprocess")
    def histogram(self, column: str, bins: Sequence[float] | int, *, right: bool = True,
                  include_lowest: bool | None = None,
                  **options: Unpack[ReleaseOptions]) -> pd.Series | pd.DataFrame:
        """Noisy counts per group and public bin (a DP crosstab of the groups against
        ``pd.cut(column, bins)``): a Series indexed by (group keys..., interval), ``count``
        (with ``lower``/``upper`` columns under ``ci=``). Bins as for
        :meth:`PrivateFrame.histogram`; one release and one charge (the cells are disjoint).
        ``.unstack()`` gives the crosstab's shape. ``postprocess`` as for
        :meth:`PrivateFrame.histogram` (the projection runs over every cell of every group).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 4)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").histogram("x", [0, 2, 4], epsilon=1e6).unstack().values.tolist()
            [[50, 0], [0, 50]]
        """
        meas = self._rel.histogram_measure(column, bins, right, include_lowest)
        q, r = self._release([meas], f"groupby({','.join(self._by)}).histogram({column})",
                             **options)
        m = r.measures[0]
        groups = self._index(q, r)
        assert m.layout is not None  # the declared bins (the measure's own)
        bins_index = histogram_index(m.layout.edges, right, m.layout.include_lowest, column)
        labels = [g if isinstance(groups, pd.MultiIndex) else (g,) for g in groups]
        index = pd.MultiIndex.from_tuples([(*g, b) for g in labels for b in bins_index],
                                          names=[*groups.names, column])
        if options.get("ci") is None:
            out: pd.Series | pd.DataFrame = pd.Series(m.values.reshape(-1), index=index,
                                                      name="count")
        else:
            assert m.lower is not None and m.upper is not None
            out = pd.DataFrame({"count": m.values.reshape(-1), "lower": m.lower.reshape(-1),
                                "upper": m.upper.reshape(-1)}, index=index)
        out.attrs["dp"] = r.provenance
        return sort_by_labels(out) if self._sort else out

    @releases(RETURNS_AGG)
    def agg(self, spec: Mapping[str, str | Sequence[str]] | None = None, *,
            epsilon: float | None = None, delta: float = 0.0, mechanism: str | None = None,
            ci: float | None = None, weights: Mapping[str, float] | Sequence[float] | None = None,
            resolution: int = DEFAULT_GRID, diagnostics: float | None = None,
            selection_share: float | None = None, accuracy: float | None = None,
            postprocess: str | None = "nonnegative", **named: tuple[str, str]) -> pd.DataFrame:
        """Several aggregates in one release and one charge: epsilon split by ``weights``
        (equal by default; a mapping is keyed "column.aggregate", or by output name).
        ``postprocess`` is the form of its counts (as for :meth:`count`; the other
        aggregates are as they are).

        Either a ``{column: aggregate(s)}`` mapping (a DataFrame with (column, aggregate)
        columns, like pandas) or pandas' named aggregation, ``agg(total=("income", "sum"),
        avg=("income", "mean"), epsilon=0.5)`` (one column per name, in that order).
        ``(column, "size")`` is pandas' group size: the rows, released as :meth:`count`
        (missing values of the column included); with sums and means it shares their
        joint release's row count, where ``(column, "count")`` (the column's non-missing
        values) is a coordinate of its own.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(10, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> out = priv.groupby("g").agg(total=("x", "sum"), n=("x", "count"), epsilon=1)
            >>> list(out.columns), list(out.index)
            (['total', 'n'], ['a', 'b'])
        """
        pairs, names = agg_pairs(spec, named)
        labels = [f"{c}.{o}" for c, o in pairs]
        ws = fraction_weights(weights_by_label(weights, pairs, names), len(pairs), labels)
        size_columns(pairs, self._rel.backend.schema())
        measures = [quantile_measure(col, op, None, resolution, w) if op in QUANTILE_LEVELS
                    else Measure("count", None, label=op, weight=w) if op == SIZE
                    else NAMES[op].measure(col, label=op, weight=w)
                    for (col, op), w in zip(pairs, ws, strict=True)]
        q, r = self._release(measures, f"groupby({','.join(self._by)}).agg({labels})",
                             epsilon=epsilon, delta=delta, mechanism=mechanism, ci=ci,
                             selection_share=selection_share, accuracy=accuracy,
                             diagnostics=diagnostics, postprocess=postprocess)
        data = agg_columns(pairs, names, r, ci is not None)
        out = pd.DataFrame(data, index=self._index(q, r))
        if names is None:
            out.columns = pd.MultiIndex.from_tuples(list(data))
        out.attrs["dp"] = r.provenance
        return sort_by_labels(out) if self._sort else out

    def __getattr__(self, name: str) -> PrivateSelection:
        """Attribute access to a column, as in pandas: ``priv.groupby("g").wage.mean(...)``."""
        return PrivateSelection(self, column_attribute(self._rel.backend.schema(), name))

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *identifiers(self._rel.backend.schema())]

    def __getitem__(self, columns: str | Sequence[str]) -> PrivateSelection:
        """Column selection, as in pandas: ``priv.groupby("g")["x"].sum(epsilon=...)`` (a
        Series), ``priv.groupby("g")[["x", "y"]].mean(epsilon=...)`` (a DataFrame, one
        release and one charge for all columns)."""
        return PrivateSelection(self, columns)

    def pipe(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``, as ``DataFrameGroupBy.pipe``."""
        return pipe_to(self, func, args, kwargs)
