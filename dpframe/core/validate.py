"""Every refusal of a query, in one place on the one path (docs/architecture.md, "Where refusals
live").

:func:`check_query` is what :func:`~dpframe.core.plan.plan_release` runs before planning, so
the pandas, Arrow, Dask and Polars fronts, the CLI, dry runs, ``accuracy=`` and a Query built
by hand and sent to ``dpframe.engine.release`` are refused by the same rules, with the same
typed errors, before any charge. Fronts only *parse* (pandas-shaped arguments into a Query:
numbers to exact fractions, names to measures); a rule that refuses a query lives here or in
the registry (:func:`validate_query`, each aggregate's ``check``), never only in a front.

Privacy: every check reads the query's arguments and the public schema (column names and
kinds) only, never the data, so whether a query is refused reveals nothing about any person,
and a refused query is never charged. Messages name arguments and columns, never values.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..errors import KeysError, UnknownColumnError, ValidationError
from .aggregates import aggregate
from .exact.compute import MAX_CELLS
from .exact.values import NUMERIC_KINDS, ColumnKind, canonical
from .hierarchy import check_combos, check_rollup
from .names import close_names
from .numbers import to_fraction
from .query import Measure, Query


def check_query(query: Query, schema: Mapping[str, ColumnKind]) -> Query:
    """Refuse ``query`` with a typed error unless every rule holds; return it unchanged.

    Its numbers first (so nothing below compares a string or a NaN), then
    :func:`validate_query` (columns, keys, bounds, each aggregate's own ``check``), then the
    rules across fields: ``ci=`` and ``mechanism=`` need a measure that uses them, declared
    key lists are lists, the contribution bounds are integers and bound a privacy unit."""
    if not isinstance(query, Query):
        raise ValidationError(f"expected a dpframe Query, not {type(query).__name__}")
    check_numbers(query)
    validate_query(query, schema)
    check_exponential_only(query)
    check_declared_keys(query)
    return query


def validate_query(query: Query, schema: Mapping[str, ColumnKind]) -> Query:
    """Check ``query`` against the public schema; raise a typed error before any charge: the
    measures and their columns, the parameters (:meth:`Query.check_parameters`), the grouping
    columns and their declared keys, combinations and rollups, each measure's aggregate
    (:func:`validate_measure`) and the memory the release needs (:func:`check_size`)."""
    if not query.measures:
        raise ValidationError("a query needs at least one aggregate")
    for col in (*query.by, query.privacy_unit, *(m.column for m in query.measures)):
        if col is not None and not isinstance(col, str):
            raise ValidationError(f"columns are named by strings, not {type(col).__name__} "
                                  "(sum('x'), not sum(['x']))")
    query.check_parameters()
    for col in (*query.by, *([query.privacy_unit] if query.privacy_unit else [])):
        if col not in schema:
            raise UnknownColumnError(f"unknown column {col!r}{close_names(col, schema)}", col)
    if query.by and not query.private_keys:
        for col in query.by:
            query.check_public_keys(col, schema[col])
    check_combos(query)
    check_rollup(query)
    for m in query.measures:
        validate_measure(query, m, schema)
    check_size(query)
    return query


def check_size(query: Query) -> None:
    """Refuse, before any charge, a release whose output would not fit in memory: the
    declared key product times the cells each group needs (bins, candidates)."""
    groups = query.declared_groups
    cells = max(aggregate(m.op).cells(m, query.cell_groups) for m in query.measures)
    if groups * cells > MAX_CELLS:
        raise ValidationError(
            f"this release needs {groups} groups x {cells} cells per group, more than the "
            f"{MAX_CELLS} exact counters dpframe holds in memory: declare fewer keys, fewer "
            "bins or a coarser resolution")


def validate_measure(query: Query, m: Measure, schema: Mapping[str, ColumnKind]) -> None:
    """The generic checks of a measure's column, then its aggregate's own checks. Its
    parameters are of the aggregate's own type (:attr:`~dpframe.core.measure.Aggregate.
    params_type`), which checked them when built."""
    agg = aggregate(m.op)
    if m.weight <= 0:
        raise ValidationError("aggregate weights must be positive")
    if not isinstance(m.params, agg.params_type):
        raise ValidationError(
            f"{m.op} takes parameters of type {agg.params_type.__name__}, not "
            f"{type(m.params).__name__}: build the measure with its aggregate's measure(), "
            f"e.g. dpframe.core.aggregates.AGGREGATES[{m.op!r}].measure(column, ...)")
    if m.column is None:
        if agg.needs_column:
            raise ValidationError(f"{m.op} needs a column")
        return
    if m.column not in schema:
        raise UnknownColumnError(
            f"unknown column {m.column!r}{close_names(m.column, schema)}", m.column)
    if agg.numeric and schema[m.column] not in NUMERIC_KINDS:
        raise ValidationError(
            f"column {m.column!r} is not numeric (its dtype is of kind "
            f"{schema[m.column]!r}); {m.op} needs numbers: convert it first, e.g. "
            f"df[{m.column!r}] = pd.to_numeric(df[{m.column!r}], errors='coerce') (values "
            "that do not parse become missing)")
    agg.check(m, query)


def _exact(value: object, name: str, *, positive: bool = False) -> Fraction:
    """``value`` as the one number rule reads it (``to_fraction``: no bool, NaN, infinity or
    negative; ``positive``: no zero), and an exact int or Fraction as a Query holds it (fronts
    convert with ``to_fraction``; a float would make the budget split inexact)."""
    f = to_fraction(value, name, positive=positive)
    if type(value) is not Fraction and type(value) is not int:
        raise ValidationError(f"{name} must be an exact number in a Query (a Fraction or an "
                              f"int, not {type(value).__name__}): dpframe.core.numbers."
                              "to_fraction converts one")
    return f


def check_numbers(query: Query) -> None:
    """The budget (epsilon > 0, delta in [0, 1)), weights, shares and rates: exact finite
    numbers; then :func:`check_contribution`."""
    _exact(query.epsilon, "epsilon", positive=True)
    if _exact(query.delta, "delta") >= 1:
        raise ValidationError("delta must be in [0, 1)")
    _exact(query.selection_share, "selection_share", positive=True)
    if query.sample_rate is not None and _exact(query.sample_rate, "rate", positive=True) > 1:
        raise ValidationError("rate must be in (0, 1]")
    for m in query.measures:
        _exact(m.weight, "weight", positive=True)
    if query.diagnostics is not None:
        _exact(query.diagnostics, "diagnostics", positive=True)
    check_contribution(query)


def check_contribution(query: Query) -> None:
    """Contribution bounds (``max_rows_per_unit``, ``max_groups_per_unit``,
    ``max_rows_per_group``) bound a privacy unit: declared only with one (each row is its own
    unit otherwise). That they are integers >= 1, and that a unit has a bound on its rows, is
    :func:`validate_query`'s rule."""
    if query.privacy_unit is None and any(b is not None for b in query.declared_contribution):
        raise ValidationError("max_rows_per_unit, max_groups_per_unit and max_rows_per_group "
                              "bound a privacy unit's rows: pass privacy_unit= too (each row "
                              "is its own unit otherwise)")


def check_exponential_only(query: Query) -> None:
    """``mechanism=`` refused when no measure of the query uses it: aggregates of the
    exponential mechanism (quantiles, medians, maxima, minima) have no other mechanism. In an
    ``agg`` with an additive measure it applies to that measure. ``ci=`` works for quantiles
    (a rank-based interval, core/aggregates/quantile.py) but not for the log-spaced points of
    bounds estimation (the aggregate's own ``check``)."""
    if not all(aggregate(m.op).exponential for m in query.measures):
        return
    names = ", ".join(dict.fromkeys(m.name for m in query.measures))
    if query.mechanism is not None:
        raise ValidationError(f"mechanism= is not available for {names}: it is released by "
                              "the exponential mechanism only")


def check_declared_keys(query: Query) -> None:
    """The declared keys of each public grouping column: a list or tuple (released in its
    order: not a string, a set or the unresolved ``'categories'`` marker), of hashable,
    non-missing values, each once (one released row per key)."""
    if query.private_keys:
        return
    for col in query.by:
        keys = query.keys[col]
        if not isinstance(keys, tuple | list):
            raise KeysError(f"keys of {col!r} must be a list or tuple of values (resolve "
                            "'categories' with normalise_keys; a set has no order)")
        try:
            distinct = len(dict.fromkeys(keys))
        except TypeError:
            raise KeysError(f"keys of {col!r} must be a list of hashable values") from None
        if distinct != len(keys):
            raise KeysError(f"the declared keys of {col!r} hold a value twice: declare each "
                            "key once")
        if any(canonical(k, "other") is None for k in keys):
            raise KeysError(f"the declared keys of {col!r} contain a missing or unsupported "
                            "value (keys are numbers, strings, bytes or dates)")


__all__ = ["check_contribution", "check_declared_keys", "check_exponential_only",
           "check_numbers", "check_query"]
