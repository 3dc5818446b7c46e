"""The pandas-shaped query front shared by every backend (pandas, Arrow scans, Dask, Polars,
Spark): :class:`PrivateFrame`, its aggregates and the ways to the other fronts (``groupby``,
column selections, ``pipe``, ``sample``, ``query``, ``explain``).

A front holds a :class:`~dpframe.fronts.release.Releaser` (its declarations, the Query
building and the run through the session's release path) and only builds measures and wraps
released values as plain numbers or pandas objects with ``.attrs["dp"]`` provenance. No
sensitivity, noise or budget logic lives here.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Unpack

import pandas as pd

from ..backends.base import Backend
from ..core.aggregates import NAMES, aggregate
from ..core.digest import derived_provenance
from ..core.names import close_names
from ..core.query import DEFAULT_GRID, DeclaredContribution, Measure, Query, quantile_level
from ..core.value_bounds import bounds_from_counts, noise_threshold, signed_octave_edges
from ..errors import DPWarning, OptionError, ValidationError
from .arguments import (
    as_ddof,
    column_attribute,
    identifiers,
    levels_series,
    measure_levels,
    options_checked,
    pipe_to,
    quantile_measure,
)
from .docs import (
    BASIC,
    RETURNS_BOUNDS,
    RETURNS_COUNT,
    RETURNS_FLOAT,
    RETURNS_HIST,
    RETURNS_SUM,
    RETURNS_TABLE,
    ReleaseOptions,
    releases,
)
from .groupby import PrivateGroupBy
from .idioms import describe
from .registered import registered
from .release import Releaser
from .results import ContributionBounds, DPFloat, DPInt, as_float, as_int, histogram_index
from .selection import PrivateSelection

if TYPE_CHECKING:
    from ..engine.session import Session

#: The contribution bounds (T, k, R) of ``bounds()``'s sensitivity-1 reduction: one random row
#: per unit (core/value_bounds.py).
ONE_ROW_PER_UNIT: DeclaredContribution | None = DeclaredContribution(rows_per_unit=1)


@options_checked
@registered(grouped=False)
class PrivateFrame:
    """Differentially private aggregates over declared bounds and keys
    (docs/reference.md#queries-on-a-frame)."""

    _grouped: ClassVar[bool] = False  # selections tell group-bys from frames by it

    def __init__(
        self,
        backend: Backend,
        session: Session | None = None,
        *,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        keys: Mapping[str, Sequence[object] | str] | None = None,
        schema: Any = None,
        privacy_unit: str | None = None,
        max_rows_per_unit: int | None = None,
        max_groups_per_unit: int | None = None,
        max_rows_per_group: int | None = None,
        strict: bool = True,
    ) -> None:
        self._rel = Releaser.declare(
            backend, session, bounds=bounds, keys=keys, schema=schema,
            privacy_unit=privacy_unit, strict=strict,
            contribution=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group))

    @classmethod
    def _of(cls, releaser: Releaser) -> PrivateFrame:
        """The frame of ``releaser`` (a sample, a preview), its declarations checked."""
        frame = cls.__new__(cls)
        frame._rel = releaser
        return frame

    @property
    def _backend(self) -> Backend:
        return self._rel.backend

    @property
    def session(self) -> Session:
        return self._rel.session

    def sample(self, rate: float) -> PrivateFrame:
        """Queries on a Poisson sample of the privacy units at ``rate``, charged the amplified
        cost ln(1 + q (e^eps - 1)) for the epsilon given to each aggregate (add_remove only).
        The rate is rounded up to a multiple of 2**-53 (the rate actually used and charged). A
        sample of a sample is one sample at the product of the rates (``sample(0.5)
        .sample(0.5)`` samples at 0.25), as two independent Poisson samplings are."""
        return PrivateFrame._of(self._rel.sampled(rate))

    def declared(self) -> dict[str, Any]:
        """What this frame declares (public): bounds, keys, privacy unit and contribution
        bounds, sampling rate, and the columns with their public kinds."""
        return self._rel.declared()

    def __repr__(self) -> str:
        d = self.declared()
        unit = "rows" if d["privacy_unit"] is None else (
            f"{d['privacy_unit']!r} (max_rows_per_unit={d['max_rows_per_unit']}, "
            f"max_groups_per_unit={d['max_groups_per_unit']}, "
            f"max_rows_per_group={d['max_rows_per_group']})")
        return (f"PrivateFrame(columns={list(d['columns'])}, bounds={d['bounds']}, "
                f"keys={sorted(d['keys'])}, privacy_unit={unit})")

    def _repr_html_(self) -> str:
        """Notebook display: declared bounds and keys, the privacy unit, the columns."""
        from ..display.html import frame_html

        return frame_html(self.declared())

    def query(self, aggregate: str, *args: Any, by: str | Sequence[str] | None = None,
              keys: str | None = None, **kwargs: Any) -> Query:
        """The Query that ``self[.groupby(by, keys=keys)].<aggregate>(*args, **kwargs)`` would
        release, after the same checks (the same typed errors: core/validate.py), with
        nothing planned, charged or run: for pipelines that price, store or run queries later
        (``dpframe.engine.release.prepare`` / ``run_release``).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> priv = pd.DataFrame({"g": ["a", "b"], "x": [1.0, 3.0]}).dp(
            ...     dpf.Session(1, seed=1), bounds={"x": (0, 5)}, keys={"g": ["a", "b"]})
            >>> q = priv.query("sum", "x", by="g", epsilon=0.5)
            >>> q.by, float(q.epsilon), [m.op for m in q.measures]
            (('g',), 0.5, ['sum'])
        """
        out: Query = self._verb("query", aggregate, args, by, keys, kwargs)
        return out

    def explain(self, aggregate: str, *args: Any, by: str | Sequence[str] | None = None,
                keys: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """The plan of ``self[.groupby(by, keys=keys)].<aggregate>(*args, **kwargs)``, with
        nothing computed or charged: its mechanisms, noise scales, intervals, cost (the
        epsilon ``accuracy=`` chooses) and whether it fits the remaining budget, as a dict.
        Takes what :meth:`query` takes; the same typed errors as the release itself. It
        reads only the public schema and declarations, never the data.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> priv = pd.DataFrame({"x": range(100)}).dp(dpf.Session(10, seed=1))
            >>> plan = priv.explain("count", accuracy=10)
            >>> (measure,) = plan["measures"]
            >>> plan["epsilon"], measure["ci_half_width"] <= 10
            (0.285, True)
        """
        out: dict[str, Any] = self._verb("explain", aggregate, args, by, keys, kwargs)
        return out

    def _verb(self, mode: str, aggregate: str, args: tuple[Any, ...],
              by: str | Sequence[str] | None, keys: str | None, kwargs: dict[str, Any]) -> Any:
        """What ``self[.groupby(by, keys=keys)].<aggregate>(*args, **kwargs)`` gives in
        ``mode`` (``"query"``: its checked Query; ``"explain"``: its plan)."""
        if aggregate not in (*NAMES, "agg", "bounds", "describe"):
            raise ValidationError(f"unknown aggregate {aggregate!r}"
                                  f"{close_names(aggregate, [*NAMES, 'agg', 'bounds'])}")
        if "dry_run" in kwargs:
            raise OptionError(f"{mode}() takes no dry_run: it is the preview itself")

        def call(frame: PrivateFrame) -> object:
            target: Any = frame if by is None else frame.groupby(by, keys=keys)
            return getattr(target, aggregate)(*args, **kwargs)

        return self._preview(mode, call)

    def _preview(self, mode: str, call: Callable[[Any], object]) -> Any:
        """``call`` on this frame whose releases stop before anything is planned or charged
        (``"query"``: the checked Query is the result) or charged (``"explain"``: the plan
        is): both leave the session as it was."""
        return self._rel.previewed(mode, lambda rel: call(PrivateFrame._of(rel)))

    def choose_contribution_bounds(self, *, epsilon: float,
                                   by: str | Sequence[str] | None = None, cap: int = 1000,
                                   release_epsilon: float = 1.0, release: str = "sum"
                                   ) -> ContributionBounds:
        """A DP choice of the contribution bounds T, k and R (``max_rows_per_unit``,
        ``max_groups_per_unit``, ``max_rows_per_group``) for a release grouped by ``by``
        (ungrouped: T only); ``priv.groupby(by).choose_contribution_bounds(...)`` is the same.
        ``contribution_bounds`` is the same method under the name of 0.1 and 0.2.

        Spends ``epsilon`` once (delta 0), like any release: noisy histograms of each unit's
        rows, groups and largest group over the candidates 1, 2, 3, 5, 7, 10, 15, ... up to ``cap``
        (sensitivity 1 each: one unit is in one bin), then the bounds that minimise the
        estimated per-group RMSE of the release they are for, at ``release_epsilon`` over the
        declared keys' groups: noise against the bias of the rows the bounds drop
        (:mod:`dpframe.core.choose_bounds` has the proof and each release's error model).
        Needs ``privacy_unit``; the frame may declare no bound yet.

        :param release: the release the bounds are tuned for: ``"count"``, ``"sum"`` (the
            default), ``"mean"`` or ``"quantile"`` (also median, max, min). A count or a sum
            pays for every dropped row, so it keeps more rows; a mean or a quantile is hurt
            less by dropped rows than by noise, so it bounds tighter.
        :returns: a dict of all three bounds, ``max_rows_per_unit``, ``max_groups_per_unit``
            and ``max_rows_per_group``, always: an int for each bound that binds, None for
            one that does not (not declared: the release derives it and it drops nothing
            more), to pass as ``df.dp(..., **bounds)``.

        Example:
            >>> import dpframe as dpf, numpy as np, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> rng = np.random.default_rng(0)
            >>> uid = np.repeat(np.arange(2000), rng.integers(1, 11, 2000))
            >>> df = pd.DataFrame({"uid": uid, "g": rng.integers(0, 20, uid.size)})
            >>> s = dpf.Session(1.0, seed=1)
            >>> priv = df.dp(s, privacy_unit="uid", keys={"g": list(range(20))})
            >>> bounds = priv.groupby("g").choose_contribution_bounds(epsilon=0.1,
            ...                                               release_epsilon=0.9)
            >>> bounds
            {'max_rows_per_unit': 10, 'max_groups_per_unit': None, 'max_rows_per_group': None}
            >>> counts = df.dp(s, privacy_unit="uid", keys={"g": list(range(20))},
            ...                **bounds).groupby("g").count(epsilon=0.9)
        """
        return self._rel.choose_contribution_bounds(epsilon, by, cap, release_epsilon, release)

    def contribution_bounds(self, *, epsilon: float, by: str | Sequence[str] | None = None,
                            cap: int = 1000, release_epsilon: float = 1.0,
                            release: str = "sum") -> ContributionBounds:
        """:meth:`choose_contribution_bounds` under its earlier name (a release: it spends
        ``epsilon``)."""
        return self.choose_contribution_bounds(epsilon=epsilon, by=by, cap=cap,
                                               release_epsilon=release_epsilon,
                                               release=release)

    def __getitem__(self, column: str) -> PrivateSelection:
        """Column selection, as in pandas: ``priv["income"].mean(epsilon=0.2)``."""
        if not isinstance(column, str):
            if not isinstance(column, list | tuple) or not all(
                    isinstance(c, str) for c in column):
                raise ValidationError(
                    "a private frame cannot filter its rows: filter the pandas frame before "
                    ".dp, e.g. df[df['origin'] == 'JFK'].dp(session, ...) (a filter on "
                    "public criteria; priv['income'] selects one column by its name)")
            raise ValidationError("select one column by its name: priv['income'] (a list of "
                                  "columns is for group-bys: priv.groupby(...)[['a', 'b']])")
        return PrivateSelection(self, column)

    def __getattr__(self, name: str) -> PrivateSelection:
        """Attribute access to a column, as in pandas: ``priv.income.mean(epsilon=0.2)``."""
        return PrivateSelection(self, column_attribute(self._backend.schema(), name))

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *identifiers(self._backend.schema())]

    def pipe(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``, as ``DataFrame.pipe``: chains of reusable steps."""
        return pipe_to(self, func, args, kwargs)

    def groupby(self, by: str | Sequence[str], keys: str | None = None, *,
                sort: bool = False) -> PrivateGroupBy:
        """Group by public keys (declared, pandera isin, or Categorical) or ``keys="private"``.

        Results come in declared-key order (public keys) or the core's total order (private
        keys); ``sort=True`` sorts them by label as ``df.groupby(sort=True)`` does, so they line
        up with pandas' own group-bys (post-processing of released labels)."""
        try:
            cols = (by,) if isinstance(by, str) else tuple(by)
        except TypeError:
            raise ValidationError("groupby columns are named by strings") from None
        if not cols:
            raise ValidationError("groupby needs at least one column")
        if not all(isinstance(c, str) for c in cols):
            raise ValidationError("groupby columns are named by strings")
        if keys not in (None, "public", "private"):
            raise ValidationError("keys must be 'private' (DP key selection) or omitted")
        if not isinstance(sort, bool):
            raise ValidationError("sort must be True or False")
        return PrivateGroupBy(self._rel, cols, keys == "private", sort)

    # -- aggregates ------------------------------------------------------------------------------
    def _registered(self, meas: Measure, options: ReleaseOptions) -> DPInt | DPFloat:
        """The release of a method generated from the registry (``fronts/registered.py``)."""
        r = self._rel.run(self._rel.query([meas], f"{meas.name}({meas.column})", **options))
        if NAMES[meas.name].integer_result:
            return as_int(r, options.get("ci"))
        return as_float(r, options.get("ci"))

    @releases(RETURNS_COUNT, *BASIC)
    def count(self, column: str | None = None, **options: Unpack[ReleaseOptions]
              ) -> DPInt:
        """Noisy number of rows (or of non-missing values of ``column``): an int.

        ``accuracy=`` instead of ``epsilon=``: the smallest epsilon whose ``ci`` interval
        (95% by default) has at most that half-width; ``priv.explain("count", ...)`` shows it.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> session = dpf.Session(10, seed=1)
            >>> n = pd.DataFrame({"x": range(100)}).dp(session).count(accuracy=10)
            >>> isinstance(n, int), session.spent
            (True, (0.285, 0.0))
        """
        r = self._rel.run(self._rel.query([Measure("count", column)], f"count({column or ''})",
                                  **options))
        return as_int(r, options.get("ci"))

    @releases(RETURNS_COUNT, *BASIC)
    def count_distinct(self, column: str, **options: Unpack[ReleaseOptions]) -> DPInt:
        """Noisy number of distinct values of ``column`` (missing values are not counted;
        ``0.0`` and ``-0.0``, ``True`` and ``1`` are one value). A privacy unit's rows add at
        most ``max_rows_per_unit`` values, so the noise is a count's.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"city": ["Oslo", "Rome", "Oslo", None, "Lima"] * 40})
            >>> int(df.dp(dpf.Session(1e9, seed=1)).count_distinct("city", epsilon=1e6))
            3
        """
        r = self._rel.run(self._rel.query([Measure("count_distinct", column)],
                                  f"count_distinct({column})", **options))
        return as_int(r, options.get("ci"))

    @releases(RETURNS_SUM, *BASIC)
    def sum(self, column: str, **options: Unpack[ReleaseOptions]) -> DPInt | DPFloat:
        """Noisy sum of ``column`` clamped to its bounds (an int for integer columns).
        ``accuracy=``: as :meth:`count`.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> float(priv.sum("x", epsilon=1e6))
            200.0
        """
        r = self._rel.run(self._rel.query([Measure("sum", column)], f"sum({column})", **options))
        integer = r.measures[0].values.dtype.kind == "i"
        return (as_int if integer else as_float)(r, options.get("ci"))

    @releases(RETURNS_FLOAT, *BASIC, "min_rows")
    def mean(self, column: str, **options: Unpack[ReleaseOptions]) -> DPFloat:
        """Noisy mean: noisy shifted sum over noisy count (epsilon split in half).

        ``accuracy=`` with ``min_rows=``: the smallest epsilon whose interval is at most that
        half-width whenever the mean is over at least ``min_rows`` rows (a lower bound you
        declare: the number of rows itself is private).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> m = priv.mean("x", epsilon=1e6, ci=0.95)
            >>> float(m), m.lower <= 2.0 <= m.upper
            (2.0, True)
        """
        r = self._rel.run(self._rel.query([Measure("mean", column)], f"mean({column})", **options))
        return as_float(r, options.get("ci"))

    @releases(RETURNS_FLOAT, *BASIC)
    def var(self, column: str, *, ddof: int = 1, **options: Unpack[ReleaseOptions]
            ) -> DPFloat:
        """Noisy variance of the clamped values (``ddof=1`` like pandas): a noisy count, a noisy
        sum and a noisy sum of squares, each at a third of ``epsilon``; the variance is
        post-processing of the three.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0] * 250})
            >>> v = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)}).var("x", epsilon=1e6)
            >>> round(float(v), 4), round(float(df.x.var()), 4)
            (1.2513, 1.2513)
        """
        return self._moment("var", column, ddof, options)

    @releases(RETURNS_FLOAT, *BASIC)
    def std(self, column: str, *, ddof: int = 1, **options: Unpack[ReleaseOptions]
            ) -> DPFloat:
        """Noisy standard deviation: the square root of :meth:`var` (same release).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> round(float(priv.std("x", epsilon=1e6, ddof=0)), 4)
            1.0
        """
        return self._moment("std", column, ddof, options)

    def _moment(self, op: str, column: str, ddof: int, options: ReleaseOptions) -> DPFloat:
        meas = aggregate(op).measure(column, ddof=as_ddof(ddof))
        r = self._rel.run(self._rel.query([meas], f"{op}({column})", **options))
        return as_float(r, options.get("ci"))

    @releases(RETURNS_BOUNDS, "epsilon", "accuracy")
    def bounds(self, column: str, *, quantiles: tuple[float, float] = (0.01, 0.99),
               max_abs: float = 1e12, resolution: int | None = None,
               **options: Unpack[ReleaseOptions]) -> tuple[DPFloat, DPFloat]:
        """Estimate bounds for ``column`` when you do not know its range: a noisy histogram
        of one randomly chosen row per privacy unit (every row at the row level) over signed
        powers of two from ``-max_abs`` to ``max_abs`` (down to ``max_abs * 2**-52``), its bins
        below a noise threshold read as empty, and read at the ``quantiles`` levels (by
        default the 1st and 99th percentiles): ``lo`` is the left edge of the bin where the
        ``quantiles[0]`` share is reached, ``hi`` the right edge of the one where
        ``quantiles[1]`` is. One unit moves one count by one, whatever its number of rows, so
        the estimate holds up at the unit level (docs/privacy.md, core/value_bounds.py).

        This spends ``epsilon`` like any release. Its result is public: declare it as the
        column's bounds for later queries (``bounds={column: (lo, hi)}``), which is
        post-processing and costs nothing more. Values beyond the estimate are clamped by later
        queries; powers of two err on the side of less clamping (at most twice the quantile's
        magnitude). The quantiles are of units (one row each), not of rows. Returns
        ``(lo, hi)``, two numbers carrying the release's provenance (``"value_bounds"``: the
        threshold, the noisy number of units read, whether that is enough); ``lo <= hi``.
        When too few units are read for more than the bulk of the values, a
        :class:`~dpframe.DPWarning` says so (from the released counts only). ``resolution``
        is deprecated and ignored (0.2's grid of candidates).

        Example:
            >>> import dpframe as dpf, numpy as np, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> income = np.random.default_rng(0).lognormal(10, 1, 20_000)
            >>> priv = pd.DataFrame({"income": income}).dp(dpf.Session(10, seed=1))
            >>> lo, hi = priv.bounds("income", epsilon=1.0)
            >>> (lo, hi)
            (2048.0, 262144.0)
        """
        if options.get("accuracy") is not None:
            raise ValidationError("accuracy= is not available for bounds: its two quantiles' "
                                  "error depends on the data (use epsilon=)")
        try:
            q_lo, q_hi = quantiles
        except (TypeError, ValueError):
            raise ValidationError("quantiles is a (lower, upper) pair of levels") from None
        levels = [quantile_level(q_lo), quantile_level(q_hi)]
        if not levels[0] < levels[1]:
            raise ValidationError("quantiles must be two increasing levels, e.g. (0.01, 0.99)")
        if isinstance(max_abs, bool) or not isinstance(max_abs, numbers.Real) or not (
                0 < float(max_abs) <= 2**52):
            raise ValidationError("max_abs must be a positive number up to 2**52")
        if resolution is not None:
            warnings.warn("bounds(resolution=) is deprecated and ignored: the estimate is a "
                          "histogram over powers of two", DeprecationWarning, stacklevel=2)
        rel = self._rel
        one_row = (rel.contribution if rel.unit is None or ONE_ROW_PER_UNIT is None
                   else ONE_ROW_PER_UNIT)
        rel = dataclasses.replace(rel, contribution=one_row, bounds={
            **rel.bounds, column: (-float(max_abs), float(max_abs))})
        edges = signed_octave_edges(float(max_abs))
        meas = aggregate("histogram").measure(column, label="bounds", edges=edges, right=False)
        q = rel.query([meas], f"bounds({column})", epsilon=options.get("epsilon"),
                      mechanism="laplace", postprocess=None)  # raw counts: the threshold
        r = rel.run(q)  # is for their noise
        scale = r.provenance["measures"][0]["noise_scale"]
        read = bounds_from_counts(r.measures[0].values, edges,
                                  (float(levels[0]), float(levels[1])),
                                  noise_threshold(scale, len(edges) - 1), float(max_abs))
        r.provenance["value_bounds"] = {**read.describe(),
                                        "quantiles": [float(v) for v in levels]}
        r.provenance = derived_provenance(r.provenance)  # two numbers read off the counts
        if not read.trusted:
            warnings.warn(
                f"bounds({column}): the noisy histogram read about {read.units} units against a "
                f"threshold of {read.threshold} per bin at epsilon {float(q.epsilon):g}: the "
                "estimate covers the bulk of the values only and may clamp far more than the "
                "quantiles ask; more epsilon or more rows (units) would help. This check reads "
                "only the released counts; it costs no privacy", DPWarning, stacklevel=2)
        return (DPFloat(read.lower, provenance=r.provenance),
                DPFloat(read.upper, provenance=r.provenance))

    def _quantile(self, column: str, label: str, q: object, resolution: int, description: str,
                  options: ReleaseOptions) -> Any:
        meas = quantile_measure(column, label, q, resolution)
        r = self._rel.run(self._rel.query([meas], description, **options))
        if measure_levels(meas) is not None:  # quantile(list): a Series indexed by q
            return levels_series(meas, r, column)
        return as_float(r, options.get("ci"))

    @releases(RETURNS_FLOAT, *BASIC)
    def quantile(self, column: str, q: float = 0.5, *, resolution: int = DEFAULT_GRID,
                 **options: Unpack[ReleaseOptions]) -> DPFloat:
        """Quantile by the exponential mechanism over ``resolution`` equal cells of the bounds
        (2**16 by default; the integers of the bounds for an integer column when they are
        fewer), a uniform point of the chosen cell. ``ci=``: a rank-based interval from the
        same charge (docs/mechanisms/quantiles.md); ``accuracy=`` is refused (the error is a
        rank, its size in values depends on the data).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1, 3] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> float(priv.quantile("x", 0.25, epsilon=1e6, resolution=6))
            1.0
        """
        return self._quantile(column, "quantile", q, resolution, f"quantile({column}, {q})",
                              options)

    @releases(RETURNS_FLOAT, *BASIC)
    def max(self, column: str, *, resolution: int = DEFAULT_GRID,
            **options: Unpack[ReleaseOptions]) -> DPFloat:
        """Maximum by the exponential mechanism (never Laplace on the max).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> 3.0 <= priv.max("x", epsilon=1e6, resolution=6) <= 5.0  # candidates 0, 1, ..., 5
            True
        """
        return self._quantile(column, "max", None, resolution, f"max({column})", options)

    @releases(RETURNS_FLOAT, *BASIC)
    def min(self, column: str, *, resolution: int = DEFAULT_GRID,
            **options: Unpack[ReleaseOptions]) -> DPFloat:
        """Minimum by the exponential mechanism.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> m = priv.min("x", epsilon=1e6, resolution=6)  # 6 cells of width 5/6
            >>> 0.0 <= m <= 5 / 3  # the two lowest cells: no value below either
            True
        """
        return self._quantile(column, "min", None, resolution, f"min({column})", options)

    @releases(RETURNS_FLOAT, *BASIC)
    def median(self, column: str, *, resolution: int = DEFAULT_GRID,
               **options: Unpack[ReleaseOptions]) -> DPFloat:
        """Median by the exponential mechanism.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1, 3] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> float(priv.median("x", epsilon=1e6, resolution=6)) in (1.0, 2.0, 3.0)
            True
        """
        return self._quantile(column, "quantile", 0.5, resolution, f"quantile({column}, 0.5)",
                              options)

    @releases(RETURNS_HIST, *BASIC, "postprocess")
    def histogram(self, column: str, bins: Sequence[float] | int, *, right: bool = True,
                  include_lowest: bool | None = None,
                  **options: Unpack[ReleaseOptions]) -> pd.Series | pd.DataFrame:
        """Noisy counts per public bin, exactly as ``pd.cut(x, bins, right=right,
        include_lowest=include_lowest).value_counts(sort=False)`` counts them, indexed by the
        same intervals (the declared edges; with ``include_lowest`` the first interval's left
        end is lowered as pandas lowers it, so every label holds what it counts). Rows outside
        the bins are dropped. The outer edges may be ``-inf`` and ``inf``. ``bins=10`` spreads
        ten equal bins over the column's declared bounds (not the data's range, which is
        private), the lowest bound included (``include_lowest`` defaults to True then).

        ``postprocess="nonnegative"`` (default): the closest non-negative integer counts summing
        to the noisy total (post-processing; biased toward 0 near 0; intervals the raw ones cut
        at 0); None: the raw, unbiased counts (docs/privacy.md#non-negative-counts).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.histogram("x", [0, 2, 4], epsilon=1e6).tolist()
            [50, 50]
        """
        meas = self._rel.histogram_measure(column, bins, right, include_lowest)
        r = self._rel.run(self._rel.query([meas], f"histogram({column})", **options))
        m = r.measures[0]
        assert m.layout is not None  # the declared bins (the measure's own)
        index = histogram_index(m.layout.edges, right, m.layout.include_lowest, column)
        values = m.values.reshape(-1)
        if options.get("ci") is None:
            out: pd.Series | pd.DataFrame = pd.Series(values, index=index, name="count")
        else:
            assert m.lower is not None and m.upper is not None
            out = pd.DataFrame({"count": values, "lower": m.lower.reshape(-1),
                                "upper": m.upper.reshape(-1)}, index=index)
        out.attrs["dp"] = r.provenance
        return out

    @releases(RETURNS_TABLE, "epsilon", "delta", "ci")
    def describe(self, *, columns: Sequence[str] | None = None,
                 percentiles: Sequence[float] = (0.25, 0.5, 0.75),
                 resolution: int = DEFAULT_GRID, **options: Unpack[ReleaseOptions]
                 ) -> pd.DataFrame:
        """Count, mean, std and quartiles (``percentiles``) of each numeric column with
        declared bounds (or ``columns``), like ``DataFrame.describe()``, in one release and one
        charge: ``epsilon`` is split equally over every statistic of every column, and the split
        is stated in ``.attrs["dp"]["budget_split"]``.

        ``ci=`` (a level, as every release takes it) adds each statistic's interval as two
        rows after it, ``<stat>_lower`` and ``<stat>_upper`` (named as ``agg``'s interval
        columns), so ``out.loc["mean_lower", "x"]`` is the lower end of the mean's interval.
        Like every interval, it covers the clamped, bounded value (the ``covers`` entry of
        ``.attrs["dp"]``).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0] * 250})
            >>> out = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)}).describe(
            ...     epsilon=1e6)
            >>> list(out.index), round(float(out.loc["mean", "x"]), 3)
            (['count', 'mean', 'std', '25%', '50%', '75%'], 2.5)
            >>> out = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)}).describe(
            ...     epsilon=1e6, percentiles=[0.5], ci=0.9)
            >>> list(out.index)  # doctest: +NORMALIZE_WHITESPACE
            ['count', 'count_lower', 'count_upper', 'mean', 'mean_lower', 'mean_upper',
             'std', 'std_lower', 'std_upper', '50%', '50%_lower', '50%_upper']
            >>> m = out["x"]
            >>> bool(m["mean_lower"] <= m["mean"] <= m["mean_upper"])
            True
            >>> dp = out.attrs["dp"]
            >>> dp["covers"]
            'values clamped to [0, 5]'
        """

        return describe(self._rel, columns, percentiles, resolution, options)
