"""Exact aggregates of one plan on two backends, compared (the scan tests' oracle: a scan's
exact aggregates must equal the pandas backend's for the same query)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import dpframe as dpf
from dpframe.core.exact.compute import ExactAggregates
from dpframe.core.exact.values import sorted_order
from dpframe.core.query import Query
from dpframe.engine.release import prepare
from dpframe.fronts.frame import PrivateFrame

Call = Callable[[PrivateFrame], Any]


def plan(backend: Any, session: dpf.Session, opts: dict[str, Any], call: Call) -> Any:
    """The prepared plan of the query ``call`` makes on ``backend`` (nothing charged): the
    frame's ``query`` preview of that call."""
    f = PrivateFrame(backend, session, **{"strict": False, **opts})  # opts shared by frames
    query: Query = f._preview("query", call)
    return prepare(session, query, backend)


def _normal(a: ExactAggregates, drop_unitless: bool) -> ExactAggregates:
    """Keys sorted (backends return observed private keys in any order; the core sorts the
    released ones); with ``drop_unitless``, private keys no unit has are dropped (pandas lists a
    key seen only on rows without a unit, a scan's pass 1 drops those rows; neither is ever
    released)."""
    keep = np.arange(len(a.keys))
    if drop_unitless and a.unit_counts is not None and a.keys != [()]:
        keep = np.flatnonzero(np.asarray(a.unit_counts) > 0)
    keys = [a.keys[i] for i in keep]
    order = keep[sorted_order(keys)]
    return ExactAggregates([a.keys[i] for i in order],
                           {k: v[order] for k, v in a.values.items()},
                           {k: v[order] for k, v in a.counts.items()},
                           None if a.unit_counts is None else a.unit_counts[order])


def _distinct_counts(a: ExactAggregates) -> dict[Any, dict[Any, int]]:
    """Distinct values per group of each count_distinct request (the hashes themselves may
    differ between backends)."""
    out: dict[Any, dict[Any, int]] = {}
    for k, (groups, hashes) in a.distinct.items():
        per: dict[Any, int] = {}
        for g, _ in set(zip(np.asarray(groups).tolist(), np.asarray(hashes).tolist(),
                            strict=True)):
            per[a.keys[g]] = per.get(a.keys[g], 0) + 1
        out[k] = per
    return out


def same_exact(a: ExactAggregates, b: ExactAggregates, drop_unitless: bool = False) -> None:
    """Assert equal exact aggregates: keys, values, counts, unit counts, distinct counts."""
    assert _distinct_counts(a) == _distinct_counts(b)
    a, b = _normal(a, drop_unitless), _normal(b, drop_unitless)
    assert a.keys == b.keys
    assert a.values.keys() == b.values.keys()
    for k in a.values:
        np.testing.assert_array_equal(np.asarray(a.values[k], dtype=object),
                                      np.asarray(b.values[k], dtype=object))
    for k in a.counts:
        np.testing.assert_array_equal(a.counts[k], b.counts[k])
    assert (a.unit_counts is None) == (b.unit_counts is None)
    if a.unit_counts is not None:
        np.testing.assert_array_equal(a.unit_counts, b.unit_counts)
