"""A spec's query as a call of the ordinary front (``frame[.groupby(by)].<aggregate>(...)``),
and the Query that call builds.

Every query of a spec goes through the same front as ``df.dp``: the same argument checks, the
same Query, the same typed errors."""

from __future__ import annotations

from typing import Any

from ..core.query import Query
from ..fronts.frame import PrivateFrame
from .spec import QuerySpec

#: The spec options each aggregate's front method takes (passed when set; others are ignored).
_TAKES: dict[str, frozenset[str]] = {
    "count": frozenset({"delta", "mechanism", "ci"}),
    "count_distinct": frozenset({"delta", "mechanism"}),
    "sum": frozenset({"delta", "mechanism", "ci"}),
    "mean": frozenset({"delta", "mechanism", "ci"}),
    "var": frozenset({"delta", "mechanism"}),
    "std": frozenset({"delta", "mechanism"}),
    "max": frozenset({"resolution"}),
    "min": frozenset({"resolution"}),
    "median": frozenset({"resolution"}),
    "quantile": frozenset({"resolution"}),
    "histogram": frozenset({"delta", "mechanism", "ci", "right", "include_lowest"}),
    "agg": frozenset({"delta", "mechanism", "ci", "resolution", "weights"}),
}
#: What grouped queries take besides (private keys: the share of epsilon for key selection).
_GROUPED = frozenset({"delta", "selection_share"})
#: The positional arguments of each front method (default: the column).
_ARGUMENTS = {"quantile": ("column", "q"), "histogram": ("column", "bins"),
              "agg": ("aggregates",)}


def front_call(q: QuerySpec) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """The front method releasing ``q``, with its positional and keyword arguments (the
    grouping aside)."""
    options = _TAKES[q.aggregate] | (_GROUPED if q.by else frozenset())
    kwargs = {k: getattr(q, k) for k in sorted(options) if getattr(q, k) is not None}
    kwargs["epsilon"] = q.epsilon
    if q.aggregate == "median" and q.by:  # grouped median: the 0.5 quantile
        return "quantile", (q.column, 0.5), kwargs
    return q.aggregate, tuple(getattr(q, f) for f in _ARGUMENTS.get(q.aggregate, ("column",))), \
        kwargs


def build_query(frame: PrivateFrame, q: QuerySpec) -> Query:
    """The Query the front builds for ``q`` on ``frame``, checked against the frame's
    declarations: nothing is planned, run or spent (typed errors as from ``df.dp``)."""
    method, args, kwargs = front_call(q)
    return frame.query(method, *args, by=q.by or None,
                       keys="private" if q.private_keys else None, **kwargs)


__all__ = ["build_query", "front_call"]
