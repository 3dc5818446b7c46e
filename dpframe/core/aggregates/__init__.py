"""The aggregate registry: one module per aggregate, each an
:class:`~dpframe.core.measure.Aggregate`.

To add an aggregate: write its module here (checks, plan with the sensitivity and its proof
sketch, release, description), add it to :data:`AGGREGATES`, add the Query's op name to
:data:`dpframe.core.query.Op`, a front method on ``PrivateFrame`` / ``PrivateGroupBy``, a spec
entry and a docs page; ``tests/core/test_registry.py`` fails until all of them exist
(CONTRIBUTING.md has the checklist).
"""

from __future__ import annotations

from ...errors import ValidationError
from ..measure import Aggregate
from .count import COUNT
from .count_distinct import COUNT_DISTINCT
from .histogram import HISTOGRAM
from .mean import MEAN
from .quantile import LOG_GRID_RANGE, MAX_LEVEL_DENOMINATOR, QUANTILE, log_candidates
from .sum import SUM
from .variance import STD, VAR

#: Every aggregate, by the Query's op name.
AGGREGATES: dict[str, Aggregate] = {a.op: a for a in (
    COUNT, COUNT_DISTINCT, SUM, MEAN, VAR, STD, QUANTILE, HISTOGRAM)}

#: The names front methods and release specs use, each mapped to its aggregate.
NAMES: dict[str, Aggregate] = {name: a for a in AGGREGATES.values() for name in a.names}


def aggregate(op: str) -> Aggregate:
    """The aggregate of a Query op name (``ValidationError`` when there is none)."""
    try:
        return AGGREGATES[op]
    except (KeyError, TypeError):
        raise ValidationError(f"unknown aggregate {op!r}") from None


__all__ = ["AGGREGATES", "LOG_GRID_RANGE", "MAX_LEVEL_DENOMINATOR", "NAMES", "Aggregate",
           "aggregate", "log_candidates"]
