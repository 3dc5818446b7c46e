"""The pandas-shaped query front shared by every backend (pandas, Arrow scans, Dask).

``PrivateFrame`` and ``PrivateGroupBy`` only build :class:`~dpframe.core.query.Query` objects, send
them through the session's release path, and wrap the result as plain numbers or pandas objects
with ``.attrs["dp"]`` provenance. No sensitivity, noise or budget logic lives here.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import pandas as pd

from ..backends.base import Backend
from ..core.accuracy import validate_accuracy
from ..core.aggregates import LEVELS, NAMES, histogram_edges
from ..core.apply import CoreRelease
from ..core.memo import IdentityCache, RecentCache
from ..core.names import close_names
from ..core.numbers import to_fraction
from ..core.plan import exact_fingerprint
from ..core.query import (
    DEFAULT_GRID,
    Measure,
    Query,
    normalise_keys,
    quantile_level,
)
from ..core.validate import check_query
from ..errors import KeysError, UnknownColumnError, ValidationError
from .aggregation import agg_columns, agg_pairs, weights_by_label
from .arguments import (
    check_declared_columns,
    check_unit,
    declarations,
    diagnosable,
    fraction_weights,
    requested_diagnostics,
)
from .docs import (
    RETURNS_AGG,
    RETURNS_BOUNDS,
    RETURNS_COUNT,
    RETURNS_FLOAT,
    RETURNS_HIST,
    RETURNS_SERIES,
    RETURNS_SUM,
    documented,
)
from .idioms import sort_by_labels
from .results import ContributionBounds, DPFloat, DPInt, diagnostics_as_numbers

if TYPE_CHECKING:
    from ..engine.session import Session



def _ddof(ddof: object) -> int:
    """``ddof`` as an int (numpy integers converted); the Variance aggregate refuses others."""
    if isinstance(ddof, np.integer):
        return int(ddof)
    return ddof  # type: ignore[return-value]


def _pipe(obj: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """pandas' ``pipe``: ``func(obj, ...)``, or ``(func, "keyword")`` to pass obj by name."""
    if isinstance(func, tuple):
        func, target = func
        if target in kwargs:
            raise ValidationError(f"{target} is both the pipe target and a keyword argument")
        kwargs[target] = obj
        return func(*args, **kwargs)
    return func(obj, *args, **kwargs)


class PrivateFrame:
    """Differentially private aggregates over declared bounds and keys
    (docs/reference.md#queries-on-a-frame)."""

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
        from ..engine.session import Session

        if session is not None and not isinstance(session, Session):
            raise ValidationError("the first argument must be a dpframe Session")
        self._backend = backend
        self._session = session
        if strict is not True and strict is not False:
            raise ValidationError("strict must be True or False")
        if strict:
            check_declared_columns(backend.schema(), bounds, keys)
        b, k = declarations(bounds, keys, schema)
        self._bounds = b
        self._keys = normalise_keys(k)  # checks the key lists (a string is not a key list)
        check_unit(backend.schema(), privacy_unit, max_rows_per_unit, max_groups_per_unit,
                   max_rows_per_group)
        self._unit = privacy_unit
        # T, k, R as declared (None: not declared; sensitivity.contribution normalizes them)
        self._bounds_tkr = tuple(None if b is None else int(b) for b in (
            max_rows_per_unit, max_groups_per_unit, max_rows_per_group))
        self._sample_rate: Fraction | None = None
        self._captured: list[Query] | None = None  # set by query(): keep, never run

    def sample(self, rate: float) -> PrivateFrame:
        """Queries on a Poisson sample of the privacy units at ``rate``, charged the amplified
        cost ln(1 + q (e^eps - 1)) for the epsilon given to each aggregate (add_remove only).
        The rate is rounded up to a multiple of 2**-53 (the rate actually used and charged). A
        sample of a sample is one sample at the product of the rates (``sample(0.5)
        .sample(0.5)`` samples at 0.25), as two independent Poisson samplings are."""
        q = to_fraction(rate, "rate", positive=True)
        if q > 1:
            raise ValidationError("rate must be in (0, 1]")
        if self._sample_rate is not None:
            q *= self._sample_rate
        out = copy.copy(self)
        out._sample_rate = Fraction(math.ceil(q * (1 << 53)), 1 << 53)
        return out

    def declared(self) -> dict[str, Any]:
        """What this frame declares (public): bounds, keys, privacy unit and contribution
        bounds, sampling rate, and the columns with their public kinds."""
        return {
            "bounds": dict(self._bounds),
            "keys": {k: list(v) if isinstance(v, tuple) else v for k, v in self._keys.items()},
            "privacy_unit": self._unit,
            "max_rows_per_unit": self._bounds_tkr[0],
            "max_groups_per_unit": self._bounds_tkr[1],
            "max_rows_per_group": self._bounds_tkr[2],
            "sample_rate": None if self._sample_rate is None else float(self._sample_rate),
            "columns": dict(self._backend.schema()),
        }

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

    # -- plumbing -------------------------------------------------------------------------------
    @property
    def session(self) -> Session:
        if self._session is not None:
            return self._session
        from ..engine.session import active_session

        return active_session()

    def _query(self, measures: list[Measure], epsilon: object, delta: object, *,
               by: tuple[str, ...] = (), private: bool = False, mechanism: str | None = None,
               ci: float | None = None, description: str = "",
               selection_share: float | None = None, accuracy: object = None,
               min_rows: object = None) -> Query:
        if accuracy is not None or epsilon is None:
            epsilon = self._epsilon_for(measures, epsilon, delta, by=by, private=private,
                                        mechanism=mechanism, ci=ci, description=description,
                                        selection_share=selection_share, accuracy=accuracy,
                                        min_rows=min_rows)
        # parsing only: numbers to exact fractions, the 'geometric' alias to its name; every
        # refusal is the core's (core/validate.py), on the path all fronts share
        eps = to_fraction(epsilon, "epsilon", positive=True)
        dlt = to_fraction(delta, "delta")
        mech = "laplace" if mechanism == "geometric" else mechanism
        keys = self._resolved_keys(by if not private else ())
        share = Fraction(1, 2) if selection_share is None else to_fraction(
            selection_share, "selection_share", positive=True)
        diag = requested_diagnostics()
        diagnostics = None if diag is None else to_fraction(diag, "diagnostics", positive=True)
        return Query(tuple(measures), eps, dlt, bounds=self._bounds, by=by, keys=keys,
                     private_keys=private, privacy_unit=self._unit,
                     max_rows_per_unit=self._bounds_tkr[0],
                     max_groups_per_unit=self._bounds_tkr[1],
                     max_rows_per_group=self._bounds_tkr[2],
                     mechanism=mech,  # type: ignore[arg-type]
                     ci=ci, selection_share=share, sample_rate=self._sample_rate,
                     description=description, diagnostics=diagnostics)

    def _epsilon_for(self, measures: list[Measure], epsilon: object, delta: object,
                     accuracy: object, min_rows: object, **kw: Any) -> Fraction:
        """``accuracy=`` instead of ``epsilon=``: the smallest epsilon (3 significant digits,
        rounded up) whose ``ci`` half-width (level 0.95 by default) is at most ``accuracy`` in
        the result's units (core/accuracy.py). Depends on the arguments and the public schema
        only, never on the data."""
        from ..engine.release import epsilon_for

        validate_accuracy(epsilon, accuracy, len(measures), min_rows)  # only a front knows
        # whether epsilon= was given; the engine runs the rest of the rules again
        base = self._query(measures, Fraction(1), delta, **kw)
        return epsilon_for(self.session, base, self._backend, accuracy, min_rows)

    def _resolved_keys(self, by: tuple[str, ...]) -> dict[str, tuple[object, ...]]:
        """Declared key lists, with ``"categories"`` resolved from the dtype of a Categorical
        (its declared categories: public by the analyst's explicit say-so,
        docs/privacy.md#group-keys)."""
        keys: dict[str, tuple[object, ...]] = {}
        for col, declared in self._keys.items():
            if not isinstance(declared, str):
                keys[col] = declared
            elif col in by:
                cats = self._backend.categories(col) if col in self._backend.schema() else None
                if cats is None:
                    raise KeysError(f"keys={{{col!r}: 'categories'}} needs a Categorical column "
                                    "with declared categories; declare the key list instead")
                keys[col] = normalise_keys({col: list(cats)})[col]  # type: ignore[assignment]
        return keys

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
        if aggregate not in (*NAMES, "agg", "bounds"):
            raise ValidationError(f"unknown aggregate {aggregate!r}")
        frame = copy.copy(self)
        frame._captured = []
        target: Any = frame if by is None else frame.groupby(by, keys=keys)
        getattr(target, aggregate)(*args, dry_run=True, **kwargs)
        return frame._captured[0]

    def _run(self, query: Query, dry_run: bool) -> CoreRelease | dict[str, Any]:
        from ..engine.release import explain, run_release

        if self._captured is not None:  # query(): the Query is the result, checked as a
            # release checks it (core/validate.py), nothing planned or charged
            self._captured.append(check_query(query, self._backend.schema(query.columns)))
            return {}
        if dry_run:
            return explain(self.session, query, self._backend)
        release = run_release(self.session, query, self._backend)
        diagnostics_as_numbers(release.provenance)
        return release

    @staticmethod
    def _scalar(r: CoreRelease, integer: bool, ci: float | None = None) -> DPInt | DPFloat:
        """The release's one value as a number carrying its provenance (``.attrs["dp"]``) and,
        when ``ci=`` was asked, its interval (``.lower`` / ``.upper``)."""
        m = r.measures[0]
        lo = hi = None
        if ci is not None and m.lower is not None and m.upper is not None and bool(
                np.isfinite(m.lower[0])):
            lo, hi = float(m.lower[0]), float(m.upper[0])
        v = m.values[0]
        if integer:
            return DPInt(int(v), provenance=r.provenance, lower=lo, upper=hi)
        return DPFloat(float(v), provenance=r.provenance, lower=lo, upper=hi)

    # -- aggregates ------------------------------------------------------------------------------
    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def count(self, column: str | None = None, *, epsilon: float | None = None,
              delta: float = 0.0, mechanism: str | None = None, ci: float | None = None,
              dry_run: Literal[True], diagnostics: float | None = None,
              accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def count(self, column: str | None = None, *, epsilon: float | None = None,
              delta: float = 0.0, mechanism: str | None = None, ci: float | None = None,
              dry_run: Literal[False] = False, diagnostics: float | None = None,
              accuracy: float | None = None) -> DPInt: ...
    @overload
    def count(self, column: str | None = None, *, epsilon: float | None = None,
              delta: float = 0.0, mechanism: str | None = None, ci: float | None = None,
              dry_run: bool = False, diagnostics: float | None = None,
              accuracy: float | None = None) -> DPInt | dict[str, Any]: ...
    @documented(RETURNS_COUNT)
    @diagnosable
    def count(self, column: str | None = None, *, epsilon: float | None = None,
              delta: float = 0.0, mechanism: str | None = None, ci: float | None = None,
              dry_run: bool = False, diagnostics: float | None = None,
              accuracy: float | None = None) -> Any:
        """Noisy number of rows (or of non-missing values of ``column``): an int.

        ``accuracy=`` instead of ``epsilon=``: the smallest epsilon whose ``ci`` interval
        (95% by default) has at most that half-width; ``dry_run=True`` shows it.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> priv = pd.DataFrame({"x": range(100)}).dp(dpf.Session(10, seed=1))
            >>> plan = priv.count(accuracy=10, dry_run=True)
            >>> (measure,) = plan["measures"]
            >>> plan["epsilon"], measure["ci_half_width"] <= 10
            (0.285, True)
        """
        q = self._query([Measure("count", column)], epsilon, delta, mechanism=mechanism,
                        ci=ci, description=f"count({column or ''})", accuracy=accuracy)
        r = self._run(q, dry_run)
        return r if isinstance(r, dict) else self._scalar(r, True, ci)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def count_distinct(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
                       mechanism: str | None = None, ci: float | None = None,
                       dry_run: Literal[True], diagnostics: float | None = None,
                       accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def count_distinct(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
                       mechanism: str | None = None, ci: float | None = None,
                       dry_run: Literal[False] = False, diagnostics: float | None = None,
                       accuracy: float | None = None) -> DPInt: ...
    @overload
    def count_distinct(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
                       mechanism: str | None = None, ci: float | None = None,
                       dry_run: bool = False, diagnostics: float | None = None,
                       accuracy: float | None = None) -> DPInt | dict[str, Any]: ...
    @documented(RETURNS_COUNT)
    @diagnosable
    def count_distinct(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
                       mechanism: str | None = None, ci: float | None = None,
                       dry_run: bool = False, diagnostics: float | None = None,
                       accuracy: float | None = None) -> Any:
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
        q = self._query([Measure("count_distinct", column)], epsilon, delta,
                        mechanism=mechanism, ci=ci, description=f"count_distinct({column})",
                        accuracy=accuracy)
        r = self._run(q, dry_run)
        return r if isinstance(r, dict) else self._scalar(r, True, ci)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def sum(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, dry_run: Literal[True],
            diagnostics: float | None = None, accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def sum(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, dry_run: Literal[False] = False,
            diagnostics: float | None = None, accuracy: float | None = None) -> DPInt | DPFloat: ...
    @overload
    def sum(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, dry_run: bool = False,
            diagnostics: float | None = None,
            accuracy: float | None = None) -> DPInt | DPFloat | dict[str, Any]: ...
    @documented(RETURNS_SUM)
    @diagnosable
    def sum(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, dry_run: bool = False,
            diagnostics: float | None = None, accuracy: float | None = None) -> Any:
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
        q = self._query([Measure("sum", column)], epsilon, delta, mechanism=mechanism,
                        ci=ci, description=f"sum({column})", accuracy=accuracy)
        r = self._run(q, dry_run)
        if isinstance(r, dict):
            return r
        return self._scalar(r, r.measures[0].values.dtype.kind == "i", ci)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def mean(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
             mechanism: str | None = None, ci: float | None = None, dry_run: Literal[True],
             diagnostics: float | None = None, accuracy: float | None = None,
             min_rows: int | None = None) -> dict[str, Any]: ...
    @overload
    def mean(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
             mechanism: str | None = None, ci: float | None = None, dry_run: Literal[False] = False,
             diagnostics: float | None = None, accuracy: float | None = None,
             min_rows: int | None = None) -> DPFloat: ...
    @overload
    def mean(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
             mechanism: str | None = None, ci: float | None = None, dry_run: bool = False,
             diagnostics: float | None = None, accuracy: float | None = None,
             min_rows: int | None = None) -> DPFloat | dict[str, Any]: ...
    @documented(RETURNS_FLOAT)
    @diagnosable
    def mean(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
             mechanism: str | None = None, ci: float | None = None, dry_run: bool = False,
             diagnostics: float | None = None, accuracy: float | None = None,
             min_rows: int | None = None) -> Any:
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
        q = self._query([Measure("mean", column)], epsilon, delta, mechanism=mechanism,
                        ci=ci, description=f"mean({column})", accuracy=accuracy,
                        min_rows=min_rows)
        r = self._run(q, dry_run)
        return r if isinstance(r, dict) else self._scalar(r, False, ci)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def var(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: Literal[True], diagnostics: float | None = None,
            accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def var(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: Literal[False] = False, diagnostics: float | None = None,
            accuracy: float | None = None) -> DPFloat: ...
    @overload
    def var(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: bool = False, diagnostics: float | None = None,
            accuracy: float | None = None) -> DPFloat | dict[str, Any]: ...
    @documented(RETURNS_FLOAT)
    @diagnosable
    def var(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: bool = False, diagnostics: float | None = None,
            accuracy: float | None = None) -> Any:
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
        return self._moment("var", column, epsilon, delta, mechanism, ci, ddof, dry_run,
                            accuracy)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def std(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: Literal[True], diagnostics: float | None = None,
            accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def std(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: Literal[False] = False, diagnostics: float | None = None,
            accuracy: float | None = None) -> DPFloat: ...
    @overload
    def std(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: bool = False, diagnostics: float | None = None,
            accuracy: float | None = None) -> DPFloat | dict[str, Any]: ...
    @documented(RETURNS_FLOAT)
    @diagnosable
    def std(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: bool = False, diagnostics: float | None = None,
            accuracy: float | None = None) -> Any:
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
        return self._moment("std", column, epsilon, delta, mechanism, ci, ddof, dry_run,
                            accuracy)

    def _moment(self, op: str, column: str, epsilon: float | None, delta: float,
                mechanism: str | None, ci: float | None, ddof: int, dry_run: bool,
                accuracy: float | None) -> Any:
        meas = Measure(op, column, ddof=_ddof(ddof))  # type: ignore[arg-type]
        q = self._query([meas], epsilon, delta, mechanism=mechanism, ci=ci,
                        description=f"{op}({column})", accuracy=accuracy)
        r = self._run(q, dry_run)
        return r if isinstance(r, dict) else self._scalar(r, False, ci)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def bounds(self, column: str, *, epsilon: float | None = None,
               quantiles: tuple[float, float] = (0.01, 0.99), max_abs: float = 1e12,
               resolution: int = 2001, dry_run: Literal[True],
               accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def bounds(self, column: str, *, epsilon: float | None = None,
               quantiles: tuple[float, float] = (0.01, 0.99), max_abs: float = 1e12,
               resolution: int = 2001, dry_run: Literal[False] = False,
               accuracy: float | None = None) -> tuple[DPFloat, DPFloat]: ...
    @overload
    def bounds(self, column: str, *, epsilon: float | None = None,
               quantiles: tuple[float, float] = (0.01, 0.99), max_abs: float = 1e12,
               resolution: int = 2001, dry_run: bool = False,
               accuracy: float | None = None) -> tuple[DPFloat, DPFloat] | dict[str, Any]: ...
    @documented(RETURNS_BOUNDS)
    def bounds(self, column: str, *, epsilon: float | None = None,
               quantiles: tuple[float, float] = (0.01, 0.99), max_abs: float = 1e12,
               resolution: int = 2001, dry_run: bool = False,
               accuracy: float | None = None) -> Any:
        """Estimate bounds for ``column`` when you do not know its range: two DP quantiles
        (by default the 1st and 99th percentiles, epsilon split in half) chosen by the
        exponential mechanism among log-spaced candidates from ``-max_abs`` to ``max_abs``
        (about 7% apart with the default resolution, down to ``max_abs * 1e-15``).

        This spends ``epsilon`` like any release. Its result is public: declare it as the
        column's bounds for later queries (``bounds={column: (lo, hi)}``), which is
        post-processing and costs nothing more. Values beyond the estimate are clamped by later
        queries, so the quantiles trade clamping bias against noise (the 1st-99th percentiles
        clamp about 2% of the rows). Returns ``(lo, hi)``, two numbers carrying the release's
        provenance; ``lo <= hi``.

        Example:
            >>> import dpframe as dpf, numpy as np, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> income = np.random.default_rng(0).lognormal(10, 1, 20_000)
            >>> priv = pd.DataFrame({"income": income}).dp(dpf.Session(10, seed=1))
            >>> lo, hi = priv.bounds("income", epsilon=1.0)
            >>> 1_000 < lo < 5_000 < 100_000 < hi < 300_000
            True
        """
        if accuracy is not None:
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
        frame = copy.copy(self)
        frame._bounds = {**self._bounds, column: (-float(max_abs), float(max_abs))}
        measures = [Measure("quantile", column, label=name, q=level, grid=_grid(resolution),
                            log_grid=True)
                    for name, level in zip(("lower", "upper"), levels, strict=True)]
        q = frame._query(measures, epsilon, 0.0, description=f"bounds({column})")
        r = frame._run(q, dry_run)
        if isinstance(r, dict):
            return r
        lo, hi = sorted(float(m.values[0]) for m in r.measures)
        return (DPFloat(lo, provenance=r.provenance), DPFloat(hi, provenance=r.provenance))

    def contribution_bounds(self, *, epsilon: float, by: str | Sequence[str] | None = None,
                            cap: int = 1000, release_epsilon: float = 1.0
                            ) -> ContributionBounds:
        """A DP choice of the contribution bounds T, k and R (``max_rows_per_unit``,
        ``max_groups_per_unit``, ``max_rows_per_group``) for a release grouped by ``by``
        (ungrouped: T only); ``priv.groupby(by).contribution_bounds(...)`` is the same.

        Spends ``epsilon`` once (delta 0), like any release: noisy histograms of each unit's
        rows, groups and largest group over the candidates 1, 2, 3, 5, 7, 10, 15, ... up to ``cap``
        (sensitivity 1 each: one unit is in one bin), then the bounds that minimise the
        estimated per-group RMSE of a Laplace grouped sum at ``release_epsilon`` over the
        declared keys' groups: noise against the bias of the rows the bounds drop
        (:mod:`dpframe.core.choose_bounds` has the proof). Only the bounds that lower that
        error are returned. Needs ``privacy_unit``; the frame may declare no bound yet.

        Example:
            >>> import dpframe as dpf, numpy as np, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> rng = np.random.default_rng(0)
            >>> uid = np.repeat(np.arange(2000), rng.integers(1, 11, 2000))
            >>> df = pd.DataFrame({"uid": uid, "g": rng.integers(0, 20, uid.size)})
            >>> s = dpf.Session(1.0, seed=1)
            >>> priv = df.dp(s, privacy_unit="uid", keys={"g": list(range(20))})
            >>> bounds = priv.groupby("g").contribution_bounds(epsilon=0.1, release_epsilon=0.9)
            >>> bounds
            {'max_rows_per_unit': 10}
            >>> counts = df.dp(s, privacy_unit="uid", keys={"g": list(range(20))},
            ...                **bounds).groupby("g").count(epsilon=0.9)
        """
        from ..core.choose_bounds import BoundsRequest
        from ..engine.bounds import run_bounds_choice

        eps = to_fraction(epsilon, "epsilon", positive=True)
        rel = to_fraction(release_epsilon, "release_epsilon", positive=True)
        if self._unit is None:
            raise ValidationError("contribution_bounds needs a privacy_unit: declare it in "
                                  "df.dp(..., privacy_unit=...)")
        cols = () if by is None else (by,) if isinstance(by, str) else tuple(by)
        if not all(isinstance(c, str) for c in cols):
            raise ValidationError("groupby columns are named by strings")
        schema = self._backend.schema()
        for col in cols:
            if col not in schema:
                raise UnknownColumnError(f"unknown column {col!r}{close_names(col, schema)}",
                                         col)
        keys = self._resolved_keys(cols)
        request = BoundsRequest(eps, self._unit, cols, {c: keys[c] for c in cols if c in keys},
                                cap, rel, self.session.neighbouring)
        chosen = run_bounds_choice(self.session, request, self._backend)
        return ContributionBounds(chosen.bounds, chosen.provenance)

    def _quantile(self, column: str, label: str, q: object, epsilon: float | None,
                  resolution: int, dry_run: bool, description: str, ci: float | None,
                  accuracy: float | None, mechanism: str | None, delta: float) -> Any:
        meas = _quantile_measure(column, label, q, resolution)
        r = self._run(self._query([meas], epsilon, delta, description=description,
                                  accuracy=accuracy, ci=ci, mechanism=mechanism), dry_run)
        return r if isinstance(r, dict) else self._scalar(r, False, ci)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def quantile(self, column: str, q: float = 0.5, *, epsilon: float | None = None,
                 resolution: int = DEFAULT_GRID, dry_run: Literal[True],
                 diagnostics: float | None = None, ci: float | None = None,
                 accuracy: float | None = None, mechanism: str | None = None,
                 delta: float = 0.0) -> dict[str, Any]: ...
    @overload
    def quantile(self, column: str, q: float = 0.5, *, epsilon: float | None = None,
                 resolution: int = DEFAULT_GRID, dry_run: Literal[False] = False,
                 diagnostics: float | None = None, ci: float | None = None,
                 accuracy: float | None = None, mechanism: str | None = None,
                 delta: float = 0.0) -> DPFloat: ...
    @overload
    def quantile(self, column: str, q: float = 0.5, *, epsilon: float | None = None,
                 resolution: int = DEFAULT_GRID, dry_run: bool = False,
                 diagnostics: float | None = None, ci: float | None = None,
                 accuracy: float | None = None, mechanism: str | None = None,
                 delta: float = 0.0) -> DPFloat | dict[str, Any]: ...
    @documented(RETURNS_FLOAT)
    @diagnosable
    def quantile(self, column: str, q: float = 0.5, *, epsilon: float | None = None,
                 resolution: int = DEFAULT_GRID, dry_run: bool = False,
                 diagnostics: float | None = None, ci: float | None = None,
                 accuracy: float | None = None, mechanism: str | None = None,
                 delta: float = 0.0) -> Any:
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
        return self._quantile(column, "quantile", q, epsilon, resolution, dry_run,
                              f"quantile({column}, {q})", ci, accuracy, mechanism, delta)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def max(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
            dry_run: Literal[True], diagnostics: float | None = None, ci: float | None = None,
            accuracy: float | None = None, mechanism: str | None = None,
            delta: float = 0.0) -> dict[str, Any]: ...
    @overload
    def max(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
            dry_run: Literal[False] = False, diagnostics: float | None = None,
            ci: float | None = None,
            accuracy: float | None = None, mechanism: str | None = None,
            delta: float = 0.0) -> DPFloat: ...
    @overload
    def max(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
            dry_run: bool = False, diagnostics: float | None = None, ci: float | None = None,
            accuracy: float | None = None, mechanism: str | None = None,
            delta: float = 0.0) -> DPFloat | dict[str, Any]: ...
    @documented(RETURNS_FLOAT)
    @diagnosable
    def max(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
            dry_run: bool = False, diagnostics: float | None = None, ci: float | None = None,
            accuracy: float | None = None, mechanism: str | None = None, delta: float = 0.0) -> Any:
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
        return self._quantile(column, "max", None, epsilon, resolution, dry_run,
                              f"max({column})", ci, accuracy, mechanism, delta)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def min(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
            dry_run: Literal[True], diagnostics: float | None = None, ci: float | None = None,
            accuracy: float | None = None, mechanism: str | None = None,
            delta: float = 0.0) -> dict[str, Any]: ...
    @overload
    def min(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
            dry_run: Literal[False] = False, diagnostics: float | None = None,
            ci: float | None = None,
            accuracy: float | None = None, mechanism: str | None = None,
            delta: float = 0.0) -> DPFloat: ...
    @overload
    def min(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
            dry_run: bool = False, diagnostics: float | None = None, ci: float | None = None,
            accuracy: float | None = None, mechanism: str | None = None,
            delta: float = 0.0) -> DPFloat | dict[str, Any]: ...
    @documented(RETURNS_FLOAT)
    @diagnosable
    def min(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
            dry_run: bool = False, diagnostics: float | None = None, ci: float | None = None,
            accuracy: float | None = None, mechanism: str | None = None, delta: float = 0.0) -> Any:
        """Minimum by the exponential mechanism.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> 0.0 <= priv.min("x", epsilon=1e6, resolution=6) <= 1.0  # candidates 0, 1, ..., 5
            True
        """
        return self._quantile(column, "min", None, epsilon, resolution, dry_run,
                              f"min({column})", ci, accuracy, mechanism, delta)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def median(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
               dry_run: Literal[True], diagnostics: float | None = None, ci: float | None = None,
               accuracy: float | None = None, mechanism: str | None = None,
               delta: float = 0.0) -> dict[str, Any]: ...
    @overload
    def median(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
               dry_run: Literal[False] = False, diagnostics: float | None = None,
               ci: float | None = None,
               accuracy: float | None = None, mechanism: str | None = None,
               delta: float = 0.0) -> DPFloat: ...
    @overload
    def median(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
               dry_run: bool = False, diagnostics: float | None = None, ci: float | None = None,
               accuracy: float | None = None, mechanism: str | None = None,
               delta: float = 0.0) -> DPFloat | dict[str, Any]: ...
    @documented(RETURNS_FLOAT)
    @diagnosable
    def median(self, column: str, *, epsilon: float | None = None, resolution: int = DEFAULT_GRID,
               dry_run: bool = False, diagnostics: float | None = None, ci: float | None = None,
               accuracy: float | None = None, mechanism: str | None = None,
               delta: float = 0.0) -> Any:
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
        return self.quantile(column, 0.5, epsilon=epsilon, resolution=resolution,
                             dry_run=dry_run, ci=ci, accuracy=accuracy, mechanism=mechanism,
                             delta=delta)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def histogram(self, column: str, bins: Sequence[float] | int, *, epsilon: float | None = None,
                  delta: float = 0.0, mechanism: str | None = None, right: bool = True,
                  include_lowest: bool | None = None, ci: float | None = None,
                  dry_run: Literal[True], diagnostics: float | None = None,
                  accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def histogram(self, column: str, bins: Sequence[float] | int, *, epsilon: float | None = None,
                  delta: float = 0.0, mechanism: str | None = None, right: bool = True,
                  include_lowest: bool | None = None, ci: float | None = None,
                  dry_run: Literal[False] = False, diagnostics: float | None = None,
                  accuracy: float | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def histogram(self, column: str, bins: Sequence[float] | int, *, epsilon: float | None = None,
                  delta: float = 0.0, mechanism: str | None = None, right: bool = True,
                  include_lowest: bool | None = None, ci: float | None = None,
                  dry_run: bool = False, diagnostics: float | None = None,
                  accuracy: float | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_HIST)
    @diagnosable
    def histogram(self, column: str, bins: Sequence[float] | int, *, epsilon: float | None = None,
                  delta: float = 0.0, mechanism: str | None = None, right: bool = True,
                  include_lowest: bool | None = None, ci: float | None = None,
                  dry_run: bool = False, diagnostics: float | None = None,
                  accuracy: float | None = None) -> Any:
        """Noisy counts per public bin, exactly as ``pd.cut(x, bins, right=right,
        include_lowest=include_lowest).value_counts(sort=False)`` counts them, indexed by the
        same intervals (the declared edges; with ``include_lowest`` the first interval's left
        end is lowered as pandas lowers it, so every label holds what it counts). Rows outside
        the bins are dropped. The outer edges may be ``-inf`` and ``inf``. ``bins=10`` spreads
        ten equal bins over the column's declared bounds (not the data's range, which is
        private), the lowest bound included (``include_lowest`` defaults to True then).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.histogram("x", [0, 2, 4], epsilon=1e6).tolist()
            [50, 50]
        """
        meas = self._histogram_measure(column, bins, right, include_lowest)
        edges, include_lowest = meas.edges or (), meas.include_lowest
        r = self._run(self._query([meas], epsilon, delta, mechanism=mechanism, ci=ci,
                                  description=f"histogram({column})", accuracy=accuracy),
                      dry_run)
        if isinstance(r, dict):
            return r
        m = r.measures[0]
        index = histogram_index(edges, right, include_lowest, column)
        values = m.values.reshape(-1)
        if ci is None:
            out: pd.Series | pd.DataFrame = pd.Series(values, index=index, name="count")
        else:
            assert m.lower is not None and m.upper is not None
            out = pd.DataFrame({"count": values, "lower": m.lower.reshape(-1),
                                "upper": m.upper.reshape(-1)}, index=index)
        out.attrs["dp"] = r.provenance
        return out

    def _histogram_measure(self, column: str, bins: Sequence[float] | int, right: bool,
                           include_lowest: bool | None) -> Measure:
        """The histogram measure of ``bins`` (edges, or a number of equal bins over the
        column's declared bounds, the lowest included unless ``include_lowest=False``)."""
        if isinstance(bins, int | np.integer) and not isinstance(bins, bool):
            edges = histogram_edges(int(bins), self._bounds.get(column), column)
            include_lowest = True if include_lowest is None else include_lowest
        else:
            try:
                edges = tuple(float(b) for b in bins)  # type: ignore[union-attr]
            except (TypeError, ValueError):
                raise ValidationError("bins must be a list of numbers or a number of bins"
                                      ) from None
        include_lowest = False if include_lowest is None else include_lowest
        return Measure("histogram", column, edges=edges, right=right,
                       include_lowest=include_lowest)

    def __getitem__(self, column: str) -> PrivateSelection:
        """Column selection, as in pandas: ``priv["income"].mean(epsilon=0.2)``."""
        if not isinstance(column, str):
            raise ValidationError("select one column by its name: priv['income'] (a list of "
                                  "columns is for group-bys: priv.groupby(...)[['a', 'b']])")
        return PrivateSelection(self, column)

    def __getattr__(self, name: str) -> PrivateSelection:
        """Attribute access to a column, as in pandas: ``priv.income.mean(epsilon=0.2)``."""
        return PrivateSelection(self, _column_attribute(self, name))

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *_identifiers(self._backend.schema())]

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def describe(self, *, epsilon: float, columns: Sequence[str] | None = None,
                 percentiles: Sequence[float] = (0.25, 0.5, 0.75), delta: float = 0.0,
                 resolution: int = DEFAULT_GRID, dry_run: Literal[True]) -> dict[str, Any]: ...
    @overload
    def describe(self, *, epsilon: float, columns: Sequence[str] | None = None,
                 percentiles: Sequence[float] = (0.25, 0.5, 0.75), delta: float = 0.0,
                 resolution: int = DEFAULT_GRID,
                 dry_run: Literal[False] = False) -> pd.DataFrame: ...
    @overload
    def describe(self, *, epsilon: float, columns: Sequence[str] | None = None,
                 percentiles: Sequence[float] = (0.25, 0.5, 0.75), delta: float = 0.0,
                 resolution: int = DEFAULT_GRID,
                 dry_run: bool = False) -> pd.DataFrame | dict[str, Any]: ...
    def describe(self, *, epsilon: float, columns: Sequence[str] | None = None,
                 percentiles: Sequence[float] = (0.25, 0.5, 0.75), delta: float = 0.0,
                 resolution: int = DEFAULT_GRID, dry_run: bool = False) -> Any:
        """Count, mean, std and quartiles (``percentiles``) of each numeric column with
        declared bounds (or ``columns``), like ``DataFrame.describe()``, in one release and one
        charge: ``epsilon`` is split equally over every statistic of every column, and the split
        is stated in ``.attrs["dp"]["budget_split"]``.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0] * 250})
            >>> out = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)}).describe(
            ...     epsilon=1e6)
            >>> list(out.index), round(float(out.loc["mean", "x"]), 3)
            (['count', 'mean', 'std', '25%', '50%', '75%'], 2.5)
        """
        from .idioms import describe

        return describe(self, epsilon, columns, percentiles, resolution, delta, dry_run)

    def pipe(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``, as ``DataFrame.pipe``: chains of reusable steps."""
        return _pipe(self, func, args, kwargs)

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
        return PrivateGroupBy(self, cols, keys == "private", sort)


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


def _label_index(labels: list[object], kind: str, name: str) -> pd.Index:
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


def _declared_index(declared: tuple[tuple[object, ...], ...], by: tuple[str, ...],
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


_QUANTILE_LEVELS = LEVELS  # the fixed levels of max, min and median (core/aggregates/quantile.py)


def _quantile_measure(column: str, label: str, q: object, resolution: object,
                      weight: Fraction = Fraction(1)) -> Measure:
    """An exponential-mechanism measure: ``label`` is max/min/median (its level) or quantile
    (level ``q``)."""
    level = _QUANTILE_LEVELS[label] if label in _QUANTILE_LEVELS else quantile_level(q)
    return Measure("quantile", column, label=label, q=level, grid=_grid(resolution),
                   weight=weight)


def _grid(resolution: object) -> int:
    """``resolution`` as an int (numpy integers converted); the Quantile aggregate refuses
    others (core/aggregates/quantile.py)."""
    if isinstance(resolution, np.integer):
        return int(resolution)
    return resolution  # type: ignore[return-value]


def _column_attribute(frame: PrivateFrame, name: str) -> str:
    """``name`` when it is a column of ``frame`` (attribute access as in pandas); an
    AttributeError with close names otherwise. Private names (``_x``) are never columns, so
    copying and pickling see ordinary attribute errors."""
    if name.startswith("_"):
        raise AttributeError(name)
    columns = list(frame._backend.schema())
    if name in columns:
        return name
    raise AttributeError(f"no method or column {name!r}{close_names(name, columns)}")


def _identifiers(schema: Mapping[str, object]) -> list[str]:
    return [c for c in schema if isinstance(c, str) and c.isidentifier()]


class PrivateGroupBy:
    """Grouped aggregates: one charge per release (parallel composition over disjoint groups)."""

    def __init__(self, frame: PrivateFrame, by: tuple[str, ...], private: bool,
                 sort: bool = False) -> None:
        self._frame = frame
        self._by = by
        self._private = private
        self._sort = sort

    def _release(self, measures: list[Measure], epsilon: object, delta: object, *,
                 mechanism: str | None, ci: float | None, dry_run: bool, description: str,
                 selection_share: float | None = None, accuracy: object = None,
                 min_rows: object = None) -> tuple[Query, CoreRelease | dict[str, Any]]:
        q = self._frame._query(measures, epsilon, delta, by=self._by, private=self._private,
                               mechanism=mechanism, ci=ci, description=description,
                               selection_share=selection_share, accuracy=accuracy,
                               min_rows=min_rows)
        return q, self._frame._run(q, dry_run)

    def _index(self, q: Query, r: CoreRelease) -> pd.Index:
        """Public keys: the declared labels in declared order. Private keys: canonical labels
        (already in the core's total order) in an index whose dtype follows the column's public
        kind, not the released values."""
        if not self._private:
            return _declared_index(tuple(q.keys[c] for c in self._by), self._by, r.keys)
        kinds = self._frame._backend.schema()
        levels = [_label_index([k[i] for k in r.keys], kinds[col], col)
                  for i, col in enumerate(self._by)]
        if len(levels) == 1:
            return levels[0]
        return pd.MultiIndex.from_arrays(levels, names=list(self._by))

    def _series(self, q: Query, r: CoreRelease, name: str, ci: float | None
                ) -> pd.Series | pd.DataFrame:
        m = r.measures[0]
        idx = self._index(q, r)
        out: pd.Series | pd.DataFrame
        if ci is None:
            out = pd.Series(m.values, index=idx, name=name)
        else:
            assert m.lower is not None and m.upper is not None
            out = pd.DataFrame({name: m.values, "lower": m.lower, "upper": m.upper}, index=idx)
        out.attrs["dp"] = r.provenance
        return sort_by_labels(out) if self._sort else out

    def _one(self, meas: Measure, name: str, epsilon: object, delta: object,
             mechanism: str | None, ci: float | None, dry_run: bool,
             selection_share: float | None, accuracy: object = None,
             min_rows: object = None) -> Any:
        q, r = self._release([meas], epsilon, delta, mechanism=mechanism, ci=ci,
                             dry_run=dry_run,
                             description=f"groupby({','.join(self._by)}).{meas.name}"
                                         f"({meas.column or ''})",
                             selection_share=selection_share, accuracy=accuracy,
                             min_rows=min_rows)
        return r if isinstance(r, dict) else self._series(q, r, name, ci)

    def contribution_bounds(self, *, epsilon: float, cap: int = 1000,
                            release_epsilon: float = 1.0) -> ContributionBounds:
        """A DP choice of T, k and R for a release grouped like this one:
        :meth:`PrivateFrame.contribution_bounds` with ``by`` these columns."""
        return self._frame.contribution_bounds(epsilon=epsilon, by=self._by, cap=cap,
                                               release_epsilon=release_epsilon)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def count(self, column: str | None = None, *, epsilon: float | None = None,
              delta: float = 0.0, mechanism: str | None = None, ci: float | None = None,
              dry_run: Literal[True], diagnostics: float | None = None,
              selection_share: float | None = None, accuracy: float | None = None) -> dict[str,
              Any]: ...
    @overload
    def count(self, column: str | None = None, *, epsilon: float | None = None,
              delta: float = 0.0, mechanism: str | None = None, ci: float | None = None,
              dry_run: Literal[False] = False, diagnostics: float | None = None,
              selection_share: float | None = None,
              accuracy: float | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def count(self, column: str | None = None, *, epsilon: float | None = None,
              delta: float = 0.0, mechanism: str | None = None, ci: float | None = None,
              dry_run: bool = False, diagnostics: float | None = None,
              selection_share: float | None = None,
              accuracy: float | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def count(self, column: str | None = None, *, epsilon: float | None = None,
              delta: float = 0.0, mechanism: str | None = None, ci: float | None = None,
              dry_run: bool = False, diagnostics: float | None = None,
              selection_share: float | None = None, accuracy: float | None = None) -> Any:
        """Noisy row count per group: a Series named ``count``. ``accuracy=``: the smallest
        epsilon whose per-group interval meets that half-width (see ``PrivateFrame.count``).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").count(epsilon=1e6).to_dict()
            {'a': 50, 'b': 50}
        """
        return self._one(Measure("count", column), "count", epsilon, delta, mechanism, ci,
                         dry_run, selection_share, accuracy)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def count_distinct(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
                       mechanism: str | None = None, ci: float | None = None,
                       dry_run: Literal[True], diagnostics: float | None = None,
                       selection_share: float | None = None,
                       accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def count_distinct(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
                       mechanism: str | None = None, ci: float | None = None,
                       dry_run: Literal[False] = False, diagnostics: float | None = None,
                       selection_share: float | None = None,
                       accuracy: float | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def count_distinct(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
                       mechanism: str | None = None, ci: float | None = None,
                       dry_run: bool = False, diagnostics: float | None = None,
                       selection_share: float | None = None,
                       accuracy: float | None = None) -> pd.Series | pd.DataFrame | dict[str,
                       Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def count_distinct(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
                       mechanism: str | None = None, ci: float | None = None,
                       dry_run: bool = False, diagnostics: float | None = None,
                       selection_share: float | None = None, accuracy: float | None = None) -> Any:
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
        return self._one(Measure("count_distinct", column), "count_distinct", epsilon, delta,
                         mechanism, ci, dry_run, selection_share, accuracy)

    def size(self, *, epsilon: float, **kw: Any) -> Any:
        """Alias of :meth:`count` over rows."""
        return self.count(epsilon=epsilon, **kw)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def sum(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, dry_run: Literal[True],
            diagnostics: float | None = None, selection_share: float | None = None,
            accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def sum(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, dry_run: Literal[False] = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            accuracy: float | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def sum(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, dry_run: bool = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            accuracy: float | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def sum(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, dry_run: bool = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            accuracy: float | None = None) -> Any:
        """Noisy clamped sum per group (``accuracy=``: see ``PrivateFrame.count``).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 5)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").sum("x", epsilon=1e6).to_dict()
            {'a': 50.0, 'b': 150.0}
        """
        return self._one(Measure("sum", column), column, epsilon, delta, mechanism, ci, dry_run,
                         selection_share, accuracy)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def mean(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
             mechanism: str | None = None, ci: float | None = None, dry_run: Literal[True],
             diagnostics: float | None = None, selection_share: float | None = None,
             accuracy: float | None = None, min_rows: int | None = None) -> dict[str, Any]: ...
    @overload
    def mean(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
             mechanism: str | None = None, ci: float | None = None, dry_run: Literal[False] = False,
             diagnostics: float | None = None, selection_share: float | None = None,
             accuracy: float | None = None,
             min_rows: int | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def mean(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
             mechanism: str | None = None, ci: float | None = None, dry_run: bool = False,
             diagnostics: float | None = None, selection_share: float | None = None,
             accuracy: float | None = None,
             min_rows: int | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def mean(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
             mechanism: str | None = None, ci: float | None = None, dry_run: bool = False,
             diagnostics: float | None = None, selection_share: float | None = None,
             accuracy: float | None = None, min_rows: int | None = None) -> Any:
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
        return self._one(Measure("mean", column), column, epsilon, delta, mechanism, ci,
                         dry_run, selection_share, accuracy, min_rows)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def var(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: Literal[True], diagnostics: float | None = None,
            selection_share: float | None = None, accuracy: float | None = None) -> dict[str,
            Any]: ...
    @overload
    def var(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: Literal[False] = False, diagnostics: float | None = None,
            selection_share: float | None = None,
            accuracy: float | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def var(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: bool = False, diagnostics: float | None = None,
            selection_share: float | None = None,
            accuracy: float | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def var(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: bool = False, diagnostics: float | None = None,
            selection_share: float | None = None, accuracy: float | None = None) -> Any:
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
        return self._one(Measure("var", column, ddof=_ddof(ddof)), column, epsilon, delta,
                         mechanism, ci, dry_run, selection_share, accuracy)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def std(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: Literal[True], diagnostics: float | None = None,
            selection_share: float | None = None, accuracy: float | None = None) -> dict[str,
            Any]: ...
    @overload
    def std(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: Literal[False] = False, diagnostics: float | None = None,
            selection_share: float | None = None,
            accuracy: float | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def std(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: bool = False, diagnostics: float | None = None,
            selection_share: float | None = None,
            accuracy: float | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def std(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            mechanism: str | None = None, ci: float | None = None, ddof: int = 1,
            dry_run: bool = False, diagnostics: float | None = None,
            selection_share: float | None = None, accuracy: float | None = None) -> Any:
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
        return self._one(Measure("std", column, ddof=_ddof(ddof)), column, epsilon, delta,
                         mechanism, ci, dry_run, selection_share, accuracy)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def max(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            resolution: int = DEFAULT_GRID, dry_run: Literal[True],
            diagnostics: float | None = None, selection_share: float | None = None,
            ci: float | None = None, accuracy: float | None = None,
            mechanism: str | None = None) -> dict[str, Any]: ...
    @overload
    def max(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            resolution: int = DEFAULT_GRID, dry_run: Literal[False] = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            ci: float | None = None, accuracy: float | None = None,
            mechanism: str | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def max(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            resolution: int = DEFAULT_GRID, dry_run: bool = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            ci: float | None = None, accuracy: float | None = None,
            mechanism: str | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def max(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            resolution: int = DEFAULT_GRID, dry_run: bool = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            ci: float | None = None, accuracy: float | None = None,
            mechanism: str | None = None) -> Any:
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
        meas = _quantile_measure(column, "max", None, resolution)
        return self._one(meas, column, epsilon, delta, mechanism, ci, dry_run,
                         selection_share, accuracy)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def min(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            resolution: int = DEFAULT_GRID, dry_run: Literal[True],
            diagnostics: float | None = None, selection_share: float | None = None,
            ci: float | None = None, accuracy: float | None = None,
            mechanism: str | None = None) -> dict[str, Any]: ...
    @overload
    def min(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            resolution: int = DEFAULT_GRID, dry_run: Literal[False] = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            ci: float | None = None, accuracy: float | None = None,
            mechanism: str | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def min(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            resolution: int = DEFAULT_GRID, dry_run: bool = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            ci: float | None = None, accuracy: float | None = None,
            mechanism: str | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def min(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
            resolution: int = DEFAULT_GRID, dry_run: bool = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            ci: float | None = None, accuracy: float | None = None,
            mechanism: str | None = None) -> Any:
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
        meas = _quantile_measure(column, "min", None, resolution)
        return self._one(meas, column, epsilon, delta, mechanism, ci, dry_run,
                         selection_share, accuracy)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def quantile(self, column: str, q: float = 0.5, *, epsilon: float | None = None,
                 delta: float = 0.0, resolution: int = DEFAULT_GRID, dry_run: Literal[True],
                 diagnostics: float | None = None, selection_share: float | None = None,
                 ci: float | None = None, accuracy: float | None = None,
                 mechanism: str | None = None) -> dict[str, Any]: ...
    @overload
    def quantile(self, column: str, q: float = 0.5, *, epsilon: float | None = None,
                 delta: float = 0.0, resolution: int = DEFAULT_GRID,
                 dry_run: Literal[False] = False,
                 diagnostics: float | None = None, selection_share: float | None = None,
                 ci: float | None = None, accuracy: float | None = None,
                 mechanism: str | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def quantile(self, column: str, q: float = 0.5, *, epsilon: float | None = None,
                 delta: float = 0.0, resolution: int = DEFAULT_GRID, dry_run: bool = False,
                 diagnostics: float | None = None, selection_share: float | None = None,
                 ci: float | None = None, accuracy: float | None = None,
                 mechanism: str | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def quantile(self, column: str, q: float = 0.5, *, epsilon: float | None = None,
                 delta: float = 0.0, resolution: int = DEFAULT_GRID, dry_run: bool = False,
                 diagnostics: float | None = None, selection_share: float | None = None,
                 ci: float | None = None, accuracy: float | None = None,
                 mechanism: str | None = None) -> Any:
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
        meas = _quantile_measure(column, "quantile", q, resolution)
        return self._one(meas, column, epsilon, delta, mechanism, ci, dry_run,
                         selection_share, accuracy)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def median(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
               resolution: int = DEFAULT_GRID, dry_run: Literal[True],
               diagnostics: float | None = None, selection_share: float | None = None,
               ci: float | None = None, accuracy: float | None = None,
               mechanism: str | None = None) -> dict[str, Any]: ...
    @overload
    def median(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
               resolution: int = DEFAULT_GRID, dry_run: Literal[False] = False,
               diagnostics: float | None = None, selection_share: float | None = None,
               ci: float | None = None, accuracy: float | None = None,
               mechanism: str | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def median(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
               resolution: int = DEFAULT_GRID, dry_run: bool = False,
               diagnostics: float | None = None, selection_share: float | None = None,
               ci: float | None = None, accuracy: float | None = None,
               mechanism: str | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @documented(RETURNS_SERIES)
    @diagnosable
    def median(self, column: str, *, epsilon: float | None = None, delta: float = 0.0,
               resolution: int = DEFAULT_GRID, dry_run: bool = False,
               diagnostics: float | None = None, selection_share: float | None = None,
               ci: float | None = None, accuracy: float | None = None,
               mechanism: str | None = None) -> Any:
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
        meas = _quantile_measure(column, "median", None, resolution)
        return self._one(meas, column, epsilon, delta, mechanism, ci, dry_run,
                         selection_share, accuracy)

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def histogram(self, column: str, bins: Sequence[float] | int, *, epsilon: float | None = None,
                  delta: float = 0.0, mechanism: str | None = None, right: bool = True,
                  include_lowest: bool | None = None, ci: float | None = None,
                  dry_run: Literal[True], diagnostics: float | None = None,
                  selection_share: float | None = None,
                  accuracy: float | None = None) -> dict[str, Any]: ...
    @overload
    def histogram(self, column: str, bins: Sequence[float] | int, *, epsilon: float | None = None,
                  delta: float = 0.0, mechanism: str | None = None, right: bool = True,
                  include_lowest: bool | None = None, ci: float | None = None,
                  dry_run: Literal[False] = False, diagnostics: float | None = None,
                  selection_share: float | None = None,
                  accuracy: float | None = None) -> pd.Series | pd.DataFrame: ...
    @overload
    def histogram(self, column: str, bins: Sequence[float] | int, *, epsilon: float | None = None,
                  delta: float = 0.0, mechanism: str | None = None, right: bool = True,
                  include_lowest: bool | None = None, ci: float | None = None,
                  dry_run: bool = False, diagnostics: float | None = None,
                  selection_share: float | None = None,
                  accuracy: float | None = None) -> pd.Series | pd.DataFrame | dict[str, Any]: ...
    @diagnosable
    def histogram(self, column: str, bins: Sequence[float] | int, *, epsilon: float | None = None,
                  delta: float = 0.0, mechanism: str | None = None, right: bool = True,
                  include_lowest: bool | None = None, ci: float | None = None,
                  dry_run: bool = False, diagnostics: float | None = None,
                  selection_share: float | None = None, accuracy: float | None = None) -> Any:
        """Noisy counts per group and public bin (a DP crosstab of the groups against
        ``pd.cut(column, bins)``): a Series indexed by (group keys..., interval), ``count``
        (with ``lower``/``upper`` columns under ``ci=``). Bins as for
        :meth:`PrivateFrame.histogram`; one release and one charge (the cells are disjoint).
        ``.unstack()`` gives the crosstab's shape.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> df = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})
            >>> priv = df.dp(dpf.Session(1e9, seed=1), bounds={"x": (0, 4)},
            ...              keys={"g": ["a", "b"]})
            >>> priv.groupby("g").histogram("x", [0, 2, 4], epsilon=1e6).unstack().values.tolist()
            [[50, 0], [0, 50]]
        """
        meas = self._frame._histogram_measure(column, bins, right, include_lowest)
        q, r = self._release([meas], epsilon, delta, mechanism=mechanism, ci=ci,
                             dry_run=dry_run,
                             description=f"groupby({','.join(self._by)}).histogram({column})",
                             selection_share=selection_share, accuracy=accuracy)
        if isinstance(r, dict):
            return r
        m = r.measures[0]
        groups = self._index(q, r)
        bins_index = histogram_index(meas.edges or (), right, meas.include_lowest, column)
        labels = [g if isinstance(groups, pd.MultiIndex) else (g,) for g in groups]
        index = pd.MultiIndex.from_tuples([(*g, b) for g in labels for b in bins_index],
                                          names=[*groups.names, column])
        if ci is None:
            out: pd.Series | pd.DataFrame = pd.Series(m.values.reshape(-1), index=index,
                                                      name="count")
        else:
            assert m.lower is not None and m.upper is not None
            out = pd.DataFrame({"count": m.values.reshape(-1), "lower": m.lower.reshape(-1),
                                "upper": m.upper.reshape(-1)}, index=index)
        out.attrs["dp"] = r.provenance
        return sort_by_labels(out) if self._sort else out

    # dry_run overloads: generated by tools/overloads.py, do not edit
    @overload
    def agg(self, spec: Mapping[str, str | Sequence[str]] | None = None, *,
            epsilon: float | None = None, delta: float = 0.0, mechanism: str | None = None,
            ci: float | None = None, weights: Mapping[str, float] | Sequence[float] | None = None,
            resolution: int = DEFAULT_GRID, dry_run: Literal[True],
            diagnostics: float | None = None, selection_share: float | None = None,
            accuracy: float | None = None, **named: tuple[str, str]) -> dict[str, Any]: ...
    @overload
    def agg(self, spec: Mapping[str, str | Sequence[str]] | None = None, *,
            epsilon: float | None = None, delta: float = 0.0, mechanism: str | None = None,
            ci: float | None = None, weights: Mapping[str, float] | Sequence[float] | None = None,
            resolution: int = DEFAULT_GRID, dry_run: Literal[False] = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            accuracy: float | None = None, **named: tuple[str, str]) -> pd.DataFrame: ...
    @overload
    def agg(self, spec: Mapping[str, str | Sequence[str]] | None = None, *,
            epsilon: float | None = None, delta: float = 0.0, mechanism: str | None = None,
            ci: float | None = None, weights: Mapping[str, float] | Sequence[float] | None = None,
            resolution: int = DEFAULT_GRID, dry_run: bool = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            accuracy: float | None = None, **named: tuple[str, str]) -> pd.DataFrame | dict[str,
            Any]: ...
    @documented(RETURNS_AGG)
    @diagnosable
    def agg(self, spec: Mapping[str, str | Sequence[str]] | None = None, *,
            epsilon: float | None = None, delta: float = 0.0, mechanism: str | None = None,
            ci: float | None = None, weights: Mapping[str, float] | Sequence[float] | None = None,
            resolution: int = DEFAULT_GRID, dry_run: bool = False,
            diagnostics: float | None = None, selection_share: float | None = None,
            accuracy: float | None = None, **named: tuple[str, str]) -> Any:
        """Several aggregates in one release and one charge: epsilon split by ``weights``
        (equal by default; a mapping is keyed "column.aggregate", or by output name).

        Either a ``{column: aggregate(s)}`` mapping (a DataFrame with (column, aggregate)
        columns, like pandas) or pandas' named aggregation, ``agg(total=("income", "sum"),
        avg=("income", "mean"), epsilon=0.5)`` (one column per name, in that order).

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
        measures = [_quantile_measure(col, op, None, resolution, w) if op in _QUANTILE_LEVELS
                    else Measure(op, col, label=op, weight=w)  # type: ignore[arg-type]
                    for (col, op), w in zip(pairs, ws, strict=True)]
        q, r = self._release(measures, epsilon, delta, mechanism=mechanism, ci=ci,
                             dry_run=dry_run,
                             description=f"groupby({','.join(self._by)}).agg({labels})",
                             selection_share=selection_share, accuracy=accuracy)
        if isinstance(r, dict):
            return r
        data = agg_columns(pairs, names, r, ci is not None)
        out = pd.DataFrame(data, index=self._index(q, r))
        if names is None:
            out.columns = pd.MultiIndex.from_tuples(list(data))
        out.attrs["dp"] = r.provenance
        return sort_by_labels(out) if self._sort else out

    def __getattr__(self, name: str) -> PrivateSelection:
        """Attribute access to a column, as in pandas: ``priv.groupby("g").wage.mean(...)``."""
        return PrivateSelection(self, _column_attribute(self._frame, name))

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *_identifiers(self._frame._backend.schema())]

    def __getitem__(self, columns: str | Sequence[str]) -> PrivateSelection:
        """Column selection, as in pandas: ``priv.groupby("g")["x"].sum(epsilon=...)`` (a
        Series), ``priv.groupby("g")[["x", "y"]].mean(epsilon=...)`` (a DataFrame, one
        release and one charge for all columns)."""
        return PrivateSelection(self, columns)

    def pipe(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``, as ``DataFrameGroupBy.pipe``."""
        return _pipe(self, func, args, kwargs)


class PrivateSelection:
    """Columns selected from a private frame or group-by: ``priv["x"]``,
    ``priv.groupby("g")["x"]``, ``priv.groupby("g")[["x", "y"]]``. Each method is the
    frame's or group-by's with the column filled in; with several columns, one release (and one
    charge) covers them all and the result has one column each, like pandas."""

    def __init__(self, target: PrivateFrame | PrivateGroupBy, columns: str | Sequence[str]
                 ) -> None:
        if isinstance(columns, str):
            cols: tuple[str, ...] = (columns,)
        else:
            try:
                cols = tuple(columns)
            except TypeError:
                raise ValidationError("columns are selected by name: ['x'] or [['x', 'y']]"
                                      ) from None
            if not cols or not all(isinstance(c, str) for c in cols):
                raise ValidationError("columns are selected by name: ['x'] or [['x', 'y']]")
            if len(set(cols)) != len(cols):
                raise ValidationError("a column is selected twice")
        self._target = target
        self._columns = cols
        self._single = isinstance(columns, str)

    def _each(self, op: str, kw: dict[str, Any]) -> Any:
        if self._single:
            return getattr(self._target, op)(self._columns[0], **kw)
        if not isinstance(self._target, PrivateGroupBy):  # pragma: no cover - frames take one
            raise ValidationError("select one column of a frame")
        out = self._target.agg({c: op for c in self._columns}, **kw)
        if isinstance(out, pd.DataFrame):
            pairs: list[tuple[str, str]] = list(out.columns)  # type: ignore[arg-type]
            out.columns = [c if a == op else f"{c}_{a.removeprefix(op + '_')}"
                           for c, a in pairs]
        return out

    def count(self, **kw: Any) -> Any:
        """Non-missing values per column (per group)."""
        return self._each("count", kw)

    def count_distinct(self, **kw: Any) -> Any:
        """Distinct values per column (per group)."""
        return self._each("count_distinct", kw)

    def sum(self, **kw: Any) -> Any:
        """Clamped sum (see ``PrivateFrame.sum`` / ``PrivateGroupBy.sum``)."""
        return self._each("sum", kw)

    def mean(self, **kw: Any) -> Any:
        """Mean (see ``PrivateFrame.mean`` / ``PrivateGroupBy.mean``)."""
        return self._each("mean", kw)

    def var(self, **kw: Any) -> Any:
        """Variance (see ``PrivateFrame.var``)."""
        return self._each("var", kw)

    def std(self, **kw: Any) -> Any:
        """Standard deviation (see ``PrivateFrame.std``)."""
        return self._each("std", kw)

    def max(self, **kw: Any) -> Any:
        """Maximum by the exponential mechanism."""
        return self._each("max", kw)

    def min(self, **kw: Any) -> Any:
        """Minimum by the exponential mechanism."""
        return self._each("min", kw)

    def median(self, **kw: Any) -> Any:
        """Median by the exponential mechanism."""
        return self._each("median", kw)

    def quantile(self, q: float = 0.5, **kw: Any) -> Any:
        """Quantile by the exponential mechanism (one column)."""
        if not self._single:
            raise ValidationError("quantile of several columns: select one column")
        return self._target.quantile(self._columns[0], q, **kw)

    def histogram(self, bins: Sequence[float] | int, **kw: Any) -> Any:
        """Histogram of one column (per group, for a group-by)."""
        if not self._single:
            raise ValidationError("histogram: select one column")
        return self._target.histogram(self._columns[0], bins, **kw)

    def agg(self, func: str | Sequence[str], **kw: Any) -> Any:
        """Several aggregates of the selected column(s) in one release, like pandas'
        ``SeriesGroupBy.agg(["sum", "mean"])`` (one column per aggregate)."""
        if not isinstance(self._target, PrivateGroupBy):
            raise ValidationError("agg of a selection needs a group-by")
        ops = [func] if isinstance(func, str) else list(func)
        out = self._target.agg({c: ops for c in self._columns}, **kw)
        if isinstance(out, pd.DataFrame) and self._single:
            pairs: list[tuple[str, str]] = list(out.columns)  # type: ignore[arg-type]
            out.columns = [a for _, a in pairs]
        return out

    def pipe(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``."""
        return _pipe(self, func, args, kwargs)
