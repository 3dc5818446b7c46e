"""The aggregate registry: one module per aggregate, each an
:class:`~dpframe.core.measure.Aggregate`.

To add an aggregate: write its module here (its measures' own params type, checked when
built, as ``params_type``; checks, plan with the sensitivity and its proof sketch, its
mechanisms by name and its plans' params type, release, description), add it to
:data:`AGGREGATES` and a docs row. An aggregate that takes only a column gets its front methods
generated from the registry (``dpframe/fronts/registered.py``); one with arguments of its own
(a level, bins) needs a front method on ``PrivateFrame`` / ``PrivateGroupBy``. The CLI's
tables and ``agg``'s names are derived from the registry (:func:`agg_names`,
:func:`positional`), and
``tests/core/test_registry.py`` and the shared contract (``tests/core/aggregate_contract.py``)
fail until the rest exists (CONTRIBUTING.md has the checklist).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import ValidationError
from ..measure import Aggregate
from .count import COUNT
from .count_distinct import COUNT_DISTINCT
from .histogram import HISTOGRAM, histogram_edges
from .mean import MEAN
from .mode import MODE
from .quantile import LEVELS, LOG_GRID_RANGE, MAX_LEVEL_DENOMINATOR, QUANTILE, log_candidates
from .sum import SUM
from .variance import STD, VAR

#: Every aggregate, by the Query's op name.
AGGREGATES: dict[str, Aggregate] = {a.op: a for a in (
    COUNT, COUNT_DISTINCT, SUM, MEAN, VAR, STD, QUANTILE, HISTOGRAM, MODE)}

#: The names front methods and release specs use, each mapped to its aggregate.
NAMES: dict[str, Aggregate] = {name: a for a in AGGREGATES.values() for name in a.names}


def agg_names(names: Mapping[str, Aggregate] | None = None) -> frozenset[str]:
    """The names ``agg`` takes: those of aggregates with ``in_agg`` that need nothing beyond a
    column (a level or bins cannot be given per column)."""
    names = NAMES if names is None else names
    return frozenset(n for n, a in names.items() if a.in_agg and not a.arguments(n))


def positional(name: str, names: Mapping[str, Aggregate] | None = None) -> tuple[str, ...]:
    """The positional arguments of the front method ``name``: the column, then what the
    aggregate needs (:meth:`Aggregate.arguments`)."""
    return ("column", *(NAMES if names is None else names)[name].arguments(name))


def released_as(name: object) -> Aggregate | None:
    """The aggregate of ``name`` when it is an op (a release's provenance names its measures'
    op or label as ``"aggregate"``), else None (a label, anything else): never raises."""
    return AGGREGATES.get(name) if isinstance(name, str) else None


def aggregate(op: str) -> Aggregate:
    """The aggregate of a Query op name (``ValidationError`` when there is none)."""
    try:
        return AGGREGATES[op]
    except (KeyError, TypeError):
        raise ValidationError(f"unknown aggregate {op!r}") from None


__all__ = ["AGGREGATES", "LEVELS", "LOG_GRID_RANGE", "MAX_LEVEL_DENOMINATOR", "NAMES",
           "Aggregate", "agg_names", "aggregate", "histogram_edges", "log_candidates",
           "positional", "released_as"]
