"""pandas idioms on private frames that are compositions of the ordinary releases: ``describe``,
``sort=`` of group-bys, attribute access to columns with close-name suggestions. Nothing here
computes a sensitivity or touches data: each builds Measures and wraps released values."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pandas as pd

from ..core.aggregates import aggregate
from ..core.digest import derived_provenance
from ..core.exact.values import NUMERIC_KINDS, sorted_order
from ..core.names import close_names
from ..core.query import Measure, quantile_level
from ..errors import OptionError, ValidationError

if TYPE_CHECKING:
    from ..core.measure import MeasureRelease
    from .docs import ReleaseOptions
    from .release import Releaser

_Out = TypeVar("_Out", bound="pd.Series | pd.DataFrame")
#: What ``describe`` releases per column, in its rows' order (pandas' describe without min/max).
DESCRIBE_STATS = ("count", "mean", "std")


def sort_by_labels(out: _Out) -> _Out:
    """A grouped result sorted by its labels as ``df.groupby(sort=True)`` sorts them; labels
    pandas cannot compare (mixed types) in the core's total order instead. Post-processing of
    released (public or DP-selected) labels: it reads no data."""
    attrs = dict(out.attrs)
    try:
        result = out.sort_index()
    except TypeError:
        labels = [k if isinstance(k, tuple) else (k,) for k in out.index]
        result = out.iloc[sorted_order(labels)]
    result.attrs.update(attrs)
    return result  # type: ignore[return-value]  # the same class as out


def describe(rel: Releaser, columns: Sequence[str] | None, percentiles: Sequence[float],
             resolution: int, options: ReleaseOptions) -> pd.DataFrame:
    """Count, mean, std and the ``percentiles`` of each bounded numeric column in ONE release
    and one charge, ``epsilon`` split equally over every statistic of every column (the split
    is stated in ``attrs["dp"]["budget_split"]`` and each measure's provenance). Sequential
    composition of the measures (each is epsilon_i-DP; the release is sum epsilon_i = epsilon).
    Without ``ci=``, a column's percentiles are ONE joint release (JointExp,
    :mod:`dpframe.core.joint_quantiles`) at the share they would have had one by one (shown
    as ``<column>.percentiles`` in the split). With ``ci=``, each statistic's row is followed
    by ``<stat>_lower`` and ``<stat>_upper`` (as ``agg``'s columns are named):
    post-processing of the same release.
    """
    if options.get("epsilon") is None:
        raise OptionError("describe() needs epsilon= (accuracy= is not available for it)")
    ci = options.get("ci")
    kinds = rel.backend.schema()
    bounded = [c for c in rel.bounds if c in kinds and kinds[c] in NUMERIC_KINDS]
    cols = bounded if columns is None else list(columns)
    if not cols:
        raise ValidationError("describe needs at least one numeric column with declared "
                              "bounds (bounds={'x': (lo, hi)})")
    levels = _levels(percentiles)
    measures: list[Measure] = []
    rows: list[str] = [*DESCRIBE_STATS, *(f"{100 * q:g}%" for q in levels)]
    joint = ci is None and len(levels) > 1  # one JointExp release of a column's percentiles
    for c in cols:
        measures += _column_measures(c, levels, resolution, joint)
    r = rel.run(rel.query(measures, f"describe({cols})", **options))
    per = len(measures) // len(cols)
    data = {c: [x for m in r.measures[i * per:(i + 1) * per] for x in _cells(m, ci)]
            for i, c in enumerate(cols)}
    index = rows if ci is None else [f"{s}{e}" for s in rows for e in ("", "_lower", "_upper")]
    out = pd.DataFrame(data, index=index)
    names = [f"{c}.{stat}" for c in cols
             for stat in ([*DESCRIBE_STATS, "percentiles"] if joint else rows)]
    # a measure of a joint release states the joint's epsilon and its own share of it
    split = {n: m.description.get("epsilon_share", m.description["epsilon"])
             for n, m in zip(names, r.measures, strict=True)}
    out.attrs["dp"] = derived_provenance({**r.provenance, "budget_split": split})
    return out


def _column_measures(column: str, levels: list[float], resolution: int, joint: bool
                     ) -> list[Measure]:
    """A column's count, mean, std and percentiles (one joint measure when ``joint``, at the
    weight the levels would have one by one)."""
    out = [aggregate(op).measure(column, label=op) for op in DESCRIBE_STATS]
    fr = tuple(quantile_level(q) for q in levels)
    quantile = aggregate("quantile")
    if joint:
        return [*out, quantile.measure(column, label="quantile", weight=Fraction(len(fr)),
                                       q=fr[0], grid=resolution, levels=fr)]
    return out + [quantile.measure(column, label="quantile", q=f, grid=resolution)
                  for f in fr]


def _cells(m: MeasureRelease, ci: float | None) -> list[float]:
    """A statistic's released value and, with ``ci=``, its interval's ends (NaN where the
    release has none)."""
    if ci is None:
        return [float(v) for v in np.asarray(m.values[0]).reshape(-1)]
    value = float(m.values[0])
    ends = [float("nan") if e is None else float(e[0]) for e in (m.lower, m.upper)]
    return [value, *ends]


def _levels(percentiles: Sequence[float]) -> list[float]:
    try:
        levels = sorted({float(p) for p in percentiles})
    except (TypeError, ValueError):
        raise ValidationError("percentiles must be numbers in [0, 1]") from None
    if any(not 0 <= p <= 1 for p in levels):
        raise ValidationError("percentiles must be numbers in [0, 1]")
    return levels


__all__ = ["DESCRIBE_STATS", "close_names", "describe", "sort_by_labels"]
