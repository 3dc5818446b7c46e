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
from ..core.aggregates import NAMES, histogram_edges
from ..core.apply import CoreRelease
from ..core.names import close_names
from ..core.numbers import to_fraction
from ..core.query import (
    DEFAULT_GRID,
    Measure,
    Query,
    normalise_keys,
    quantile_level,
)
from ..core.validate import check_query
from ..errors import KeysError, UnknownColumnError, ValidationError
from .arguments import (
    as_ddof,
    as_grid,
    check_declared_columns,
    check_unit,
    column_attribute,
    declarations,
    diagnosable,
    identifiers,
    pipe_to,
    quantile_measure,
    requested_diagnostics,
)
from .docs import (
    RETURNS_BOUNDS,
    RETURNS_COUNT,
    RETURNS_FLOAT,
    RETURNS_HIST,
    RETURNS_SUM,
    documented,
)
from .groupby import PrivateGroupBy
from .results import ContributionBounds, DPFloat, DPInt, diagnostics_as_numbers, histogram_index
from .selection import PrivateSelection

if TYPE_CHECKING:
    from ..engine.session import Session


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
        meas = Measure(op, column, ddof=as_ddof(ddof))  # type: ignore[arg-type]
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
        measures = [Measure("quantile", column, label=name, q=level, grid=as_grid(resolution),
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
        meas = quantile_measure(column, label, q, resolution)
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
        return PrivateSelection(self, column_attribute(self, name))

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *identifiers(self._backend.schema())]

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
        return PrivateGroupBy(self, cols, keys == "private", sort)
