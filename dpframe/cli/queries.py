"""A spec's query as a call of the ordinary front (``frame[.groupby(by)].<aggregate>(...)``),
and the Query that call builds.

Every query of a spec goes through the same front as ``df.dp``: the same argument checks, the
same Query, the same typed errors."""

from __future__ import annotations

import inspect
from typing import Any

from ..core.aggregates import positional
from ..core.query import Query
from ..fronts.frame import PrivateFrame
from ..fronts.groupby import PrivateGroupBy
from .schema import QueryTable
from .spec import QuerySpec

#: The spec fields that say what is released and how it is grouped; every other field of a
#: ``[[query]]`` is an option, passed when set and the front method takes it (read from its
#: signature, so the spec cannot drift from the front). An option the method does not take is
#: one that aggregate has no use for.
_STRUCTURE = frozenset({"aggregate", "epsilon", "name", "column", "by", "keys", "q", "bins",
                        "aggregates", "continual"})  # continual: its own path (cli/continual.py)
_OPTIONS = tuple(f for f in QueryTable.model_fields if f not in _STRUCTURE)


def arguments(aggregate: str) -> tuple[str, ...]:
    """The positional arguments of the front method ``aggregate``, from the registry
    (:func:`~dpframe.core.aggregates.positional`); ``agg`` takes its mapping."""
    return ("aggregates",) if aggregate == "agg" else positional(aggregate)


def front_call(q: QuerySpec) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """The front method releasing ``q``, with its positional and keyword arguments (the
    grouping aside)."""
    method, args = q.aggregate, tuple(getattr(q, f) for f in arguments(q.aggregate))
    if q.aggregate == "median" and q.by:  # grouped median: the 0.5 quantile
        method, args = "quantile", (q.column, 0.5)
    takes = inspect.signature(getattr(PrivateGroupBy if q.by else PrivateFrame,
                                      method)).parameters
    kwargs = {k: getattr(q, k) for k in _OPTIONS if k in takes and getattr(q, k) is not None}
    if kwargs.get("postprocess") == "none":  # TOML has no null: the raw counts
        kwargs["postprocess"] = None
    kwargs["epsilon"] = q.epsilon
    return method, args, kwargs


def build_query(frame: PrivateFrame, q: QuerySpec) -> Query:
    """The Query the front builds for ``q`` on ``frame``, checked against the frame's
    declarations: nothing is planned, run or spent (typed errors as from ``df.dp``)."""
    method, args, kwargs = front_call(q)
    return frame.query(method, *args, by=q.by or None,
                       keys="private" if q.private_keys else None, **kwargs)


__all__ = ["build_query", "front_call"]
