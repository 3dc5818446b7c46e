"""Front methods generated from the aggregate registry: one method table for every front.

Every name of :data:`~dpframe.core.aggregates.NAMES` that needs a column and nothing else
(``Aggregate.arguments(name) == ()``) and that a front does not define by hand gets a method
``name(column, **options)`` on :class:`~dpframe.PrivateFrame` and
:class:`~dpframe.PrivateGroupBy` (and on column selections, ``PrivateSelection.__getattr__``),
built here from the aggregate's metadata: its op, the label ``name`` (the provenance's
``aggregate``), ``integer_result`` and ``front_doc``. So a new aggregate that takes a column
is its module and its registry line, with no front edit (docs/architecture.md). Building
measures only: no sensitivity, noise or budget logic lives here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, Unpack

from ..core.aggregates import NAMES
from ..core.measure import Aggregate
from ..core.query import Measure
from .docs import BASIC, RETURNS_COUNT, RETURNS_FLOAT, RETURNS_SERIES, ReleaseOptions, releases

C = TypeVar("C", bound=type)

#: The options of a generated grouped method (a frame's take :data:`BASIC`).
GROUPED = (*BASIC, "selection_share")


def generated_names() -> dict[str, Aggregate]:
    """The names whose methods can be generated: a column and the release options only."""
    return {n: a for n, a in NAMES.items() if a.needs_column and not a.arguments(n)}


def measure_of(name: str, column: str) -> Measure:
    """The measure a call ``name(column)`` releases: its aggregate's op, labelled ``name``
    when the name is not the op (``nunique`` is ``count_distinct``'s release)."""
    agg = NAMES[name]
    return agg.measure(column, label="" if name == agg.op else name)


def _method(name: str, agg: Aggregate, grouped: bool) -> Callable[..., Any]:
    def method(self: Any, column: str, **options: Unpack[ReleaseOptions]) -> Any:
        return self._registered(measure_of(name, column), options)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = agg.front_doc(name)
    if grouped:
        return releases(RETURNS_SERIES, *GROUPED)(method)
    return releases(RETURNS_COUNT if agg.integer_result else RETURNS_FLOAT, *BASIC)(method)


def registered(grouped: bool) -> Callable[[C], C]:
    """A class decorator giving a front the generated method of every name it lacks (apply
    it below ``options_checked``, which then checks their calls as the others')."""

    def deco(cls: C) -> C:
        for name, agg in generated_names().items():
            if name not in vars(cls):
                method = _method(name, agg, grouped)
                method.__qualname__ = f"{cls.__name__}.{name}"
                setattr(cls, name, method)
        return cls

    return deco


__all__ = ["generated_names", "measure_of", "registered"]
