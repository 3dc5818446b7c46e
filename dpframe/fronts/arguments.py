"""What a front parses before it builds a Query: declarations (bounds and public keys, from
arguments or a pandera schema: never from data), the privacy unit and its contribution bounds,
and aggregate weights. Public information only; every failure is a typed error before any
budget is spent. The rules that refuse a query live in the core (core/validate.py, the
registry), which every front, the CLI and the engine pass through; the checks here that
refuse (a privacy unit without its bound, weights) parse arguments the Query has no place for,
or repeat a core rule earlier, with the same typed error."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import pandas as pd

from ..core.aggregates import LEVELS, aggregate
from ..core.names import close_names
from ..core.numbers import to_fraction
from ..core.query import Measure, quantile_level
from ..errors import DPError, KeysError, OptionError, UnknownColumnError, ValidationError

if TYPE_CHECKING:
    from ..core.apply import CoreRelease

#: pandera checks that declare bounds: check name -> (statistic of the lower bound, of the upper)
RANGE_CHECKS: dict[str, tuple[str | None, str | None]] = {
    "in_range": ("min_value", "max_value"), "between": ("min_value", "max_value"),
    "greater_than_or_equal_to": ("min_value", None), "greater_than": ("min_value", None),
    "less_than_or_equal_to": (None, "max_value"), "less_than": (None, "max_value"),
}


def bounds_and_keys_from_schema(schema: Any) -> tuple[dict[str, tuple[Fraction, Fraction]],
                                                      dict[str, list[object]]]:
    """Bounds and public keys declared in a pandera DataFrameSchema.

    Range checks (``in_range``, ``ge``/``le``, ``gt``/``lt``, ``between``-style) give bounds,
    read by the one number rule of every bound (``to_fraction``); ``isin`` gives keys, in the
    listed order (a set has none: refused, as are two ``isin`` checks on one column). A check
    that declares neither as dpframe reads them is a typed error. Only the schema is read,
    never the data.
    """
    bounds: dict[str, tuple[Fraction, Fraction]] = {}
    keys: dict[str, list[object]] = {}
    columns = getattr(schema, "columns", None)
    if not isinstance(columns, Mapping):
        raise ValidationError("schema must be a pandera DataFrameSchema")
    for name, col in columns.items():
        lo: Fraction | None = None
        hi: Fraction | None = None
        for check in getattr(col, "checks", []) or []:
            cname = getattr(check, "name", "")
            st = getattr(check, "statistics", {}) or {}
            if cname == "isin":
                if str(name) in keys:
                    raise ValidationError(f"column {name!r} has two isin checks: keep one, "
                                          "whose list is the column's public keys")
                keys[str(name)] = _listed_keys(name, st)
            lo, hi = _narrowed(name, lo, hi, cname, st)
        if lo is not None and hi is not None:
            bounds[str(name)] = (lo, hi)
    return bounds, keys


def _listed_keys(column: object, statistics: Mapping[str, Any]) -> list[object]:
    """The keys of an ``isin`` check, in its listed order."""
    values = statistics.get("allowed_values")
    if isinstance(values, set | frozenset) or not isinstance(values, Sequence) or isinstance(
            values, str | bytes):
        raise ValidationError(f"the isin check of column {column!r} must list its keys (a "
                              "list or tuple: a set has no order, and keys are released in "
                              "the listed order)")
    return list(values)


def _narrowed(column: object, lo: Fraction | None, hi: Fraction | None, check: str,
              statistics: Mapping[str, Any]) -> tuple[Fraction | None, Fraction | None]:
    """``[lo, hi]`` (None: unbounded) narrowed by one pandera range check (unchanged by other
    checks); a range check without numbers is a typed error."""
    low, high = RANGE_CHECKS.get(check, (None, None))
    if low is None and high is None:
        return lo, hi
    try:
        new_lo = to_fraction(statistics[low], "bound", signed=True) if low else None
        new_hi = to_fraction(statistics[high], "bound", signed=True) if high else None
    except (KeyError, ValidationError):
        raise ValidationError(f"the {check} check of column {column!r} must give its bounds as "
                              "numbers (min_value / max_value)") from None
    if new_lo is not None:
        lo = new_lo if lo is None else max(lo, new_lo)
    if new_hi is not None:
        hi = new_hi if hi is None else min(hi, new_hi)
    return lo, hi


def declarations(bounds: object, keys: object, schema: Any
                  ) -> tuple[dict[str, tuple[float, float]], dict[str, Sequence[object] | str]]:
    """Bounds and keys from a pandera schema, then the explicit ones over them (a schema's
    bounds are exact Fractions, read by the one number rule like any declared bound)."""
    b: dict[str, tuple[float, float]] = {}
    k: dict[str, Sequence[object] | str] = {}
    if schema is not None:
        sb, sk = bounds_and_keys_from_schema(schema)
        b.update(cast(dict[str, tuple[float, float]], sb))
        k.update(sk)
    for name, given, into in (("bounds", bounds, b), ("keys", keys, k)):
        try:
            into.update(dict(given or {}))  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise ValidationError(f"{name} must be a mapping {{column: ...}}") from None
    return b, k


def check_declared_columns(schema: Mapping[str, object], bounds: object, keys: object) -> None:
    """Bounds or keys declared (explicitly, not by a pandera schema, which may describe a wider
    table) for a column the frame does not have: most likely a typo, which would leave the
    intended column undeclared. Refused with close names (public schema); ``strict=False``
    keeps such declarations (one dict of bounds shared by several frames)."""
    for name, given in (("bounds", bounds), ("keys", keys)):
        if not isinstance(given, Mapping):
            continue  # not a mapping: declarations() refuses it
        for col in given:
            if isinstance(col, str) and col not in schema:  # not a string: refused elsewhere
                raise ValidationError(
                    f"{name} declared for {col!r}, which is not a column of this frame"
                    f"{close_names(col, schema)}: a typo would leave the intended column "
                    "undeclared; pass strict=False to keep declarations for other columns")


def positive_int(value: object) -> bool:
    """A positive integer (Python or numpy), not a bool."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer) and int(value) >= 1


def check_unit(schema: Mapping[str, object], privacy_unit: object, rows_per_unit: object,
               groups_per_unit: object, rows_per_group: object = None) -> None:
    """The privacy unit and its contribution bounds (public declarations)."""
    if privacy_unit is not None and not isinstance(privacy_unit, str):
        raise ValidationError("privacy_unit must be a column name (a string)")
    if privacy_unit is not None and privacy_unit not in schema:  # validate_query's rule, early
        raise UnknownColumnError(f"unknown privacy_unit column {privacy_unit!r}"
                                 f"{close_names(privacy_unit, schema)}", privacy_unit)
    _check_contribution(privacy_unit, rows_per_unit, groups_per_unit, rows_per_group)


def _check_contribution(privacy_unit: object, rows_per_unit: object,
                        groups_per_unit: object, rows_per_group: object) -> None:
    """Contribution bounds: positive integers, and only with a privacy unit. A unit without a
    bound on its rows is accepted here (``priv.choose_contribution_bounds()`` chooses them); every
    aggregate release refuses it (the core's ``validate_query``), nothing charged."""
    for name, val in (("max_rows_per_unit", rows_per_unit),
                      ("max_groups_per_unit", groups_per_unit),
                      ("max_rows_per_group", rows_per_group)):
        if val is not None and not positive_int(val):
            raise ValidationError(f"{name} must be a positive integer")
    declared = (rows_per_unit, groups_per_unit, rows_per_group)
    if privacy_unit is None and any(v is not None for v in declared):
        raise ValidationError("max_rows_per_unit, max_groups_per_unit and max_rows_per_group "
                              "bound a privacy unit's rows: pass privacy_unit= too (each row "
                              "is its own unit otherwise)")


def fraction_weights(weights: Mapping[str, float] | Sequence[float] | None, n: int,
                      labels: list[str]) -> list[Fraction]:
    if weights is None:
        return [Fraction(1)] * n
    if isinstance(weights, Mapping):
        try:
            vals = [weights[label] for label in labels]
        except KeyError as exc:
            raise ValidationError(f"no weight for aggregate {exc.args[0]!r}") from None
    else:
        vals = list(weights)
    if len(vals) != n:
        raise ValidationError("one weight per aggregate is needed")
    return [to_fraction(v, "weight", positive=True) for v in vals]


def as_ddof(ddof: object) -> int:
    """``ddof`` as an int (numpy integers converted); the Variance aggregate refuses others."""
    if isinstance(ddof, np.integer):
        return int(ddof)
    return ddof  # type: ignore[return-value]


def pipe_to(obj: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """pandas' ``pipe``: ``func(obj, ...)``, or ``(func, "keyword")`` to pass obj by name."""
    if isinstance(func, tuple):
        func, target = func
        if target in kwargs:
            raise ValidationError(f"{target} is both the pipe target and a keyword argument")
        kwargs[target] = obj
        return func(*args, **kwargs)
    return func(obj, *args, **kwargs)


QUANTILE_LEVELS = LEVELS  # the fixed levels of max, min and median (core/aggregates/quantile.py)


def several_levels(q: object) -> list[object] | None:
    """``q`` as a list when it is list-like (pandas' ``quantile([...])``), else None."""
    if isinstance(q, str | bytes) or not isinstance(q, list | tuple | np.ndarray | pd.Index
                                                   | pd.Series):
        return None
    return list(np.asarray(q, dtype=object).reshape(-1))


def quantile_measure(column: str, label: str, q: object, resolution: object,
                      weight: Fraction = Fraction(1)) -> Measure:
    """An exponential-mechanism measure: ``label`` is max/min/median (its level) or quantile
    (level ``q``; a list of levels: one joint release, :mod:`dpframe.core.joint_quantiles`)."""
    qs = several_levels(q) if label not in QUANTILE_LEVELS else None
    if qs is not None:
        if not qs:
            raise ValidationError("quantile levels q: give at least one")
        levels = tuple(quantile_level(v) for v in qs)
        return aggregate("quantile").measure(column, label=label, weight=weight, q=levels[0],
                                             grid=as_grid(resolution), levels=levels)
    level = QUANTILE_LEVELS[label] if label in QUANTILE_LEVELS else quantile_level(q)
    return aggregate("quantile").measure(column, label=label, weight=weight, q=level,
                                         grid=as_grid(resolution))


def measure_levels(m: Measure) -> tuple[Fraction, ...] | None:
    """The levels of a measure released at several levels at once (a joint quantile's, in the
    order asked: :meth:`~dpframe.core.measure.Aggregate.levels`), or None."""
    return aggregate(m.op).levels(m)


def level_index(m: Measure) -> pd.Index:
    """The levels of a joint quantile as pandas indexes them (floats, in the order asked)."""
    return pd.Index([float(v) for v in (measure_levels(m) or ())], dtype="float64")


def levels_series(m: Measure, r: CoreRelease, column: str) -> pd.Series:
    """An ungrouped joint quantile as pandas' ``quantile(list)``: a Series indexed by q."""
    out = pd.Series(r.measures[0].values[0], index=level_index(m), name=column)
    out.attrs["dp"] = r.provenance
    return out


def as_grid(resolution: object) -> int:
    """``resolution`` as an int (numpy integers converted); the Quantile aggregate refuses
    others (core/aggregates/quantile.py)."""
    if isinstance(resolution, np.integer):
        return int(resolution)
    return resolution  # type: ignore[return-value]


def column_attribute(schema: Mapping[str, object], name: str) -> str:
    """``name`` when it is a column of ``schema`` (attribute access as in pandas); an
    AttributeError with close names otherwise. Private names (``_x``) are never columns, so
    copying and pickling see ordinary attribute errors."""
    if name.startswith("_"):
        raise AttributeError(name)
    columns = list(schema)
    if name in columns:
        return name
    raise AttributeError(f"no method or column {name!r}{close_names(name, columns)}")


def identifiers(schema: Mapping[str, object]) -> list[str]:
    return [c for c in schema if isinstance(c, str) and c.isidentifier()]


# --- Options: misspelled keywords as typed errors with the call's options; df.dp's help ---

C = TypeVar("C", bound=type)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def option_names(fn: Callable[..., Any] | inspect.Signature) -> list[str]:
    """The named parameters of ``fn`` (neither ``self`` nor ``*args`` / ``**kwargs``)."""
    sig = fn if isinstance(fn, inspect.Signature) else inspect.signature(fn)
    return [n for n, p in sig.parameters.items() if n != "self" and p.kind not in _VARIADIC]


def option_error(sig: inspect.Signature, name: str, args: tuple[Any, ...],
                 kwargs: Mapping[str, Any]) -> OptionError | None:
    """The OptionError for a call ``name`` of ``sig`` with ``args`` and ``kwargs`` when they
    do not bind (a misspelled keyword, a missing or extra argument), else None. Names the
    call's options and the closest to a misspelled one (public: argument names only)."""
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        problem = str(exc)
    else:
        return None
    valid = [n for n in option_names(sig) if n != "backend"]
    listed = f"; its options: {', '.join(valid)}"
    unknown = _unknown_keywords(sig, kwargs)
    if unknown:
        return OptionError(f"{name} has no option {unknown[0]!r}"
                           f"{close_names(unknown[0], valid)}{listed}")
    if "positional" in problem:
        listed += " (pass them by keyword, as in epsilon=0.1)" if "epsilon" in valid else (
            " (pass them by keyword)")
    return OptionError(f"{name}: {problem}{listed}")


def _unknown_keywords(sig: inspect.Signature, kwargs: Mapping[str, Any]) -> list[str]:
    """The keywords ``sig`` does not name (none when it takes ``**kwargs``)."""
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return []
    return [k for k in kwargs if k not in sig.parameters]


def _checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, whose calls that do not bind to its signature raise :func:`option_error`'s
    OptionError instead of Python's bare TypeError (a TypeError raised inside ``fn`` is
    re-raised as it is)."""
    name = "df.dp()" if fn.__name__ == "__init__" else f"{fn.__name__}()"

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            if isinstance(exc, DPError):
                raise
            error = option_error(inspect.signature(fn), name, args, kwargs)
            if error is None:
                raise
            raise error from None

    return call


def options_checked(cls: C) -> C:
    """Every public method of ``cls`` (and ``__init__``) refusing misspelled or missing
    options with an :class:`~dpframe.errors.OptionError` that lists them (``count(eps=0.1)``:
    "did you mean 'epsilon'?"). Signatures, docstrings and ``help()`` are the methods' own."""
    for name, fn in list(vars(cls).items()):
        if inspect.isfunction(fn) and (not name.startswith("_") or name == "__init__"):
            setattr(cls, name, _checked(fn))
    return cls


DP_OPTIONS_DOC = """Declare what is public about this frame and what one person may contribute;
returns a :class:`~dpframe.PrivateFrame` whose aggregates (``count``, ``sum``, ``mean``,
``groupby(...)``, ...) spend ``session``'s budget.

:param session: the ``dpf.Session`` to charge (default: the active ``with session:`` one).
:param bounds: ``{column: (lo, hi)}``, the declared value bounds (values are clamped to them;
    never read from the data).
:param keys: ``{column: [key, ...]}``, the public group keys (``"categories"``: a
    Categorical's declared categories).
:param schema: a pandera ``DataFrameSchema``: bounds from its range checks, keys from ``isin``.
:param privacy_unit: the column that identifies a person (default: each row is one).
:param max_rows_per_unit: T, a unit's rows in the whole release (kept at random).
:param max_groups_per_unit: k, the groups one unit may contribute to.
:param max_rows_per_group: R, a unit's rows in one group.
:param strict: refuse bounds or keys declared for columns the frame lacks (a typo; default
    True).
"""


def document_dp(call: Callable[..., Any], frame_class: type,
                engine: Callable[..., Any] | None = None, engine_doc: str = ""
                ) -> Callable[..., Any]:
    """An accessor's ``__call__`` (``df.dp(...)``) with the options it passes on: a signature
    (``help(df.dp)``, IDEs) built from ``frame_class``'s (PrivateFrame's), plus the
    keyword-only engine knobs of ``engine`` (a front's ``private_frame``), a docstring
    listing them, and an :class:`~dpframe.errors.OptionError` naming them all for a
    misspelled one."""
    frame = list(inspect.signature(frame_class).parameters.values())[1:]  # not the backend
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *frame]
    if engine is not None:
        params += [p for p in inspect.signature(engine).parameters.values()
                   if p.kind is inspect.Parameter.KEYWORD_ONLY]
    sig = inspect.Signature(params, return_annotation="PrivateFrame")

    @functools.wraps(call)
    def checked(*args: Any, **kwargs: Any) -> Any:
        error = option_error(sig, "df.dp()", args, kwargs)
        if error is not None:
            raise error
        return call(*args, **kwargs)

    checked.__signature__ = sig  # type: ignore[attr-defined]
    checked.__doc__ = DP_OPTIONS_DOC + engine_doc
    return checked


#: Declared key combinations: the columns, then the rows (``keys=`` a DataFrame).
Combos = tuple[tuple[str, ...], tuple[tuple[object, ...], ...]]


def key_frame(keys: object) -> tuple[object, Combos | None]:
    """``keys=`` a DataFrame of the declared combinations (as Tumult's
    ``KeySet.from_dataframe``; a Polars or Arrow table through its ``to_pandas()``): each
    column's keys (its distinct values, in order of first appearance) and the rows, the
    combinations a multi-column groupby releases. Anything else is returned as it is, with no
    combinations. Refused (:class:`~dpframe.errors.KeysError`): no rows, a column named by
    anything but a string or named twice, a combination declared twice; missing values are
    refused by the key lists' own check. Public: declared, never read from the data."""
    import pandas as pd

    keys = _as_pandas(keys)
    if not isinstance(keys, pd.DataFrame):
        return keys, None
    cols = list(keys.columns)
    if not _distinct_names(cols):
        raise KeysError("a DataFrame of declared keys needs columns named by distinct strings")
    if len(keys) == 0:
        raise KeysError("the DataFrame of declared keys has no rows")
    rows = _distinct_rows([tuple(r) for r in keys.itertuples(index=False, name=None)])
    per_column = {c: [r[j] for r in rows] for j, c in enumerate(cols)}
    return per_column, (tuple(cols), tuple(rows))


def _as_pandas(keys: object) -> object:
    """A Polars or Arrow table (anything with columns and ``to_pandas()``) as pandas."""
    to_pandas = getattr(keys, "to_pandas", None)
    return to_pandas() if callable(to_pandas) and hasattr(keys, "columns") else keys


def _distinct_names(cols: Sequence[object]) -> bool:
    return bool(cols) and all(isinstance(c, str) for c in cols) and len(set(cols)) == len(cols)


def _distinct_rows(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """``rows``, refused (:class:`~dpframe.errors.KeysError`) when one repeats another."""
    seen: dict[tuple[object, ...], int] = {}
    for i, r in enumerate(rows):
        try:
            first = seen.setdefault(r, i)
        except TypeError:
            raise KeysError("the declared keys must be hashable values") from None
        if first != i:
            raise KeysError(f"the DataFrame of declared keys repeats a combination (rows {first} "
                            f"and {i}): declare each combination once")
    return rows


def combinations_for(by: Sequence[str], combos: Combos | None,
                     keys: Mapping[str, Sequence[object]]) -> tuple[tuple[object, ...], ...] | None:
    """The declared combinations of the ``by`` columns: the declared rows projected on them
    (each once, in declared order) when ``by`` holds at least two of their columns; with other
    ``by`` columns beside, the product of the columns' keys (first column slowest) filtered to
    the declared projections. None: every combination (the product)."""
    if combos is None:
        return None
    cols, rows = combos
    inside = [c for c in by if c in cols]
    if len(inside) < 2 or not set(by) <= set(keys):
        return None  # a missing key list is refused by the core (validate_query)
    idx = [cols.index(c) for c in inside]
    projected = list(dict.fromkeys(tuple(r[i] for i in idx) for r in rows))
    if len(inside) == len(by):  # ``inside`` is in ``by`` order
        return tuple(projected)
    return _filtered_product(by, inside, set(projected), keys)


def _filtered_product(by: Sequence[str], inside: list[str], allowed: set[tuple[object, ...]],
                      keys: Mapping[str, Sequence[object]]) -> tuple[tuple[object, ...], ...]:
    """The product of the ``by`` columns' keys whose values on ``inside`` are ``allowed``."""
    import itertools

    at = [list(by).index(c) for c in inside]
    return tuple(t for t in itertools.product(*(keys[c] for c in by))
                 if tuple(t[i] for i in at) in allowed)


def rollup_shares(rollup: object, level_shares: object, width: int,
                  accuracy: object) -> tuple[Fraction, ...] | None:
    """``rollup=`` and ``level_shares=`` parsed: each level's share of epsilon (the grand
    total first; equal by default), or None without a rollup. The core checks the rest
    (core/hierarchy.py)."""
    for failed, message in (
            (rollup is not True and rollup is not False, "rollup must be True or False"),
            (rollup is False and level_shares is not None, "level_shares= needs rollup=True"),
            (rollup is True and accuracy is not None,
             "accuracy= is not available with rollup=True (its intervals come from the "
             "consistency step): pass epsilon=")):
        if failed:
            raise ValidationError(message)
    if not rollup:
        return None
    return _level_shares(level_shares, width)


def _level_shares(level_shares: object, width: int) -> tuple[Fraction, ...]:
    """Each level's share as an exact fraction (equal when not given)."""
    if level_shares is None:
        return (Fraction(1),) * (width + 1)
    if isinstance(level_shares, np.ndarray):
        level_shares = level_shares.tolist()
    if isinstance(level_shares, str | bytes) or not isinstance(level_shares, Sequence):
        raise ValidationError("level_shares must be a list of positive numbers, the grand "
                              "total's first")
    return tuple(to_fraction(s, "level_shares", positive=True) for s in level_shares)
