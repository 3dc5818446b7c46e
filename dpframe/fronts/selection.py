"""Column selections: :class:`PrivateSelection` (``priv["x"]``, ``priv.groupby("g")[["x", "y"]]``),
each method the frame's or group-by's with the column(s) filled in. Post-processing of their
releases only (column labels), no privacy logic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..core.aggregates import NAMES
from ..errors import ValidationError
from .arguments import pipe_to


def _grouped(target: Any) -> bool:
    """Whether ``target`` is a group-by, by its class's ``_grouped`` mark (the fronts build
    selections, so this module imports none of them: no import cycle)."""
    return bool(type(target)._grouped)


class PrivateSelection:
    """Columns selected from a private frame or group-by: ``priv["x"]``,
    ``priv.groupby("g")["x"]``, ``priv.groupby("g")[["x", "y"]]``. Each method is the
    frame's or group-by's with the column filled in; with several columns, one release (and one
    charge) covers them all and the result has one column each, like pandas."""

    def __init__(self, target: Any, columns: str | Sequence[str]) -> None:
        """``target``: the ``PrivateFrame`` or ``PrivateGroupBy`` the columns are selected
        from, whose methods this selection calls (by name: it imports neither class)."""
        if isinstance(columns, str):
            cols: tuple[str, ...] = (columns,)
        else:
            try:
                cols = tuple(columns)
            except TypeError:
                raise ValidationError("columns are selected by name: ['x'] or [['x', 'y']]"
                                      ) from None
            if not cols or not all(isinstance(c, str) for c in cols):
                raise ValidationError("columns are selected by name: ['x'] or [['x', 'y']]")
            if len(set(cols)) != len(cols):
                raise ValidationError("a column is selected twice")
        self._target = target
        self._columns = cols
        self._single = isinstance(columns, str)

    def _each(self, op: str, kw: dict[str, Any]) -> Any:
        if self._single:
            return getattr(self._target, op)(self._columns[0], **kw)
        if not _grouped(self._target):  # pragma: no cover - frames take one
            raise ValidationError("select one column of a frame")
        out = self._target.agg({c: op for c in self._columns}, **kw)
        if isinstance(out, pd.DataFrame):
            pairs: list[tuple[str, str]] = list(out.columns)  # type: ignore[arg-type]
            out.columns = [c if a == op else f"{c}_{a.removeprefix(op + '_')}"
                           for c, a in pairs]
        return out

    def __getattr__(self, name: str) -> Any:
        """The methods generated from the registry (``fronts/registered.py``: an aggregate
        that takes only a column), the column(s) filled in: ``priv["x"].nunique(...)``."""
        agg = NAMES.get(name)
        if agg is None or name.startswith("_") or not agg.needs_column or agg.arguments(name):
            raise AttributeError(name)
        return lambda **kw: self._each(name, kw)

    def count(self, **kw: Any) -> Any:
        """Non-missing values per column (per group)."""
        return self._each("count", kw)

    def count_distinct(self, **kw: Any) -> Any:
        """Distinct values per column (per group)."""
        return self._each("count_distinct", kw)

    def sum(self, **kw: Any) -> Any:
        """Clamped sum (see ``PrivateFrame.sum`` / ``PrivateGroupBy.sum``)."""
        return self._each("sum", kw)

    def mean(self, **kw: Any) -> Any:
        """Mean (see ``PrivateFrame.mean`` / ``PrivateGroupBy.mean``)."""
        return self._each("mean", kw)

    def var(self, **kw: Any) -> Any:
        """Variance (see ``PrivateFrame.var``)."""
        return self._each("var", kw)

    def std(self, **kw: Any) -> Any:
        """Standard deviation (see ``PrivateFrame.std``)."""
        return self._each("std", kw)

    def max(self, **kw: Any) -> Any:
        """Maximum by the exponential mechanism."""
        return self._each("max", kw)

    def min(self, **kw: Any) -> Any:
        """Minimum by the exponential mechanism."""
        return self._each("min", kw)

    def median(self, **kw: Any) -> Any:
        """Median by the exponential mechanism."""
        return self._each("median", kw)

    def quantile(self, q: float = 0.5, **kw: Any) -> Any:
        """Quantile by the exponential mechanism (one column)."""
        if not self._single:
            raise ValidationError("quantile of several columns: select one column")
        return self._target.quantile(self._columns[0], q, **kw)

    def histogram(self, bins: Sequence[float] | int, **kw: Any) -> Any:
        """Histogram of one column (per group, for a group-by)."""
        if not self._single:
            raise ValidationError("histogram: select one column")
        return self._target.histogram(self._columns[0], bins, **kw)

    def agg(self, func: str | Sequence[str], **kw: Any) -> Any:
        """Several aggregates of the selected column(s) in one release, like pandas'
        ``SeriesGroupBy.agg(["sum", "mean"])`` (one column per aggregate)."""
        if not _grouped(self._target):
            raise ValidationError("agg of a selection needs a group-by")
        ops = [func] if isinstance(func, str) else list(func)
        out = self._target.agg({c: ops for c in self._columns}, **kw)
        if isinstance(out, pd.DataFrame) and self._single:
            pairs: list[tuple[str, str]] = list(out.columns)  # type: ignore[arg-type]
            out.columns = [a for _, a in pairs]
        return out

    def pipe(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``."""
        return pipe_to(self, func, args, kwargs)
