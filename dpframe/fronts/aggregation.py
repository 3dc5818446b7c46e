"""``agg``'s arguments and result: the (column, aggregate) pairs of a mapping or of pandas'
named aggregation, weights keyed by output name, and the result's columns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np

from ..core.aggregates import agg_names
from ..core.apply import CoreRelease
from ..core.names import close_names
from ..errors import OptionError, ValidationError

#: What ``agg`` takes, from the registry: every name of an ``in_agg`` aggregate that needs
#: nothing beyond a column (not a level, not bins)
#: pandas' ``size`` in ``agg``: the group's rows, whatever the column holds (missing values
#: included), released as ``count()``; its column must exist but is not read.
SIZE = "size"
AGG_NAMES = agg_names() | {SIZE}
#: ``agg``'s own options (a test keeps them equal to its signature's): a keyword close to one
#: of them that is not a (column, aggregate) pair is a misspelled option, not an aggregation.
AGG_OPTIONS = ("spec", "epsilon", "delta", "mechanism", "ci", "weights", "resolution",
               "diagnostics", "selection_share", "accuracy", "postprocess", "dry_run")


def agg_name(op: object) -> str:
    if callable(op):
        name = getattr(op, "__name__", "")
        hint = f" (did you mean {name!r}?)" if name in AGG_NAMES else ""
        raise ValidationError(
            f"custom functions cannot be released: agg takes the names of dpframe's "
            f"aggregates{hint}, {sorted(AGG_NAMES)}; each has a known sensitivity, which "
            "sets its noise, and a function's is unknown")
    if not isinstance(op, str) or op not in AGG_NAMES:
        raise ValidationError(f"unknown aggregate {op!r}; use one of {sorted(AGG_NAMES)}")
    return op


def size_columns(pairs: Sequence[tuple[str, str]], schema: Mapping[str, object]) -> None:
    """Refuse (before any charge, from the public schema) a ``size`` pair whose column the
    frame does not have, as pandas does."""
    for col, op in pairs:
        if op == SIZE and col not in schema:
            raise ValidationError(f"agg: {col!r} is not a column of this frame"
                                  f"{close_names(col, schema)}")


def _is_pair(value: object) -> TypeGuard[tuple[str, object]]:
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)


def agg_pairs(spec: object, named: Mapping[str, object]
               ) -> tuple[list[tuple[str, str]], list[str] | None]:
    """The (column, aggregate) pairs of ``agg``, and their output names for named
    aggregation (None for a ``{column: aggregate(s)}`` mapping)."""
    for name, value in named.items():
        if not _is_pair(value) and close_names(name, AGG_OPTIONS):
            raise OptionError(f"agg() has no option {name!r}{close_names(name, AGG_OPTIONS)}; "
                              f"its options: {', '.join(AGG_OPTIONS)}, and named "
                              "aggregations name=(column, aggregate)")
    if named and spec is not None:
        raise ValidationError("agg takes a {column: aggregate(s)} mapping or named "
                              "aggregations (name=(column, aggregate)), not both")
    if named:
        return named_pairs(named)
    if not isinstance(spec, Mapping) or not spec:
        raise ValidationError("agg takes a non-empty {column: aggregate(s)} mapping or "
                              "named aggregations: agg(total=('income', 'sum'), ...)")
    return [(col, agg_name(op)) for col, ops in spec.items()
            for op in ([ops] if isinstance(ops, str) or callable(ops)
                       else list(ops))], None


def weights_by_label(weights: Mapping[str, float] | Sequence[float] | None,
                      pairs: list[tuple[str, str]], names: list[str] | None
                      ) -> Mapping[str, float] | Sequence[float] | None:
    """Weights keyed by output name (named aggregation) re-keyed "column.aggregate"."""
    if names is not None and isinstance(weights, Mapping) and set(weights) <= set(names):
        return {f"{c}.{o}": weights[n] for (c, o), n in zip(pairs, names, strict=True)
                if n in weights}
    return weights


def agg_columns(pairs: list[tuple[str, str]], names: list[str] | None, r: CoreRelease,
                 with_ci: bool) -> dict[Any, np.ndarray]:
    """The columns of ``agg``'s result: each value, then its interval when asked for."""
    data: dict[Any, np.ndarray] = {}
    for i, ((col, op), m) in enumerate(zip(pairs, r.measures, strict=True)):
        name: Any = (col, op) if names is None else names[i]
        data[name] = m.values
        if with_ci and m.lower is not None and m.upper is not None:
            low = (col, f"{op}_lower") if names is None else f"{names[i]}_lower"
            up = (col, f"{op}_upper") if names is None else f"{names[i]}_upper"
            data[low], data[up] = m.lower, m.upper
    return data


def named_pairs(named: Mapping[str, object]) -> tuple[list[tuple[str, str]], list[str]]:
    """``name=(column, aggregate)`` arguments: the pairs and their output names."""
    pairs: list[tuple[str, str]] = []
    for name, value in named.items():
        if not _is_pair(value):
            raise ValidationError(
                f"named aggregation {name}= takes a (column, aggregate) pair, e.g. "
                f"{name}=('income', 'sum')")
        pair = (value[0], agg_name(value[1]))
        if pair in pairs:
            raise ValidationError(f"{pair[1]}({pair[0]}) is asked twice: one release per "
                                  "aggregate (use it under one name)")
        pairs.append(pair)
    return pairs, list(named)
