"""The Dask backend: exact partial aggregates on the workers, one combine on the client.

Each partition runs the pandas backend (:class:`~dpframe.backends.pandas.PandasBackend`) on
its rows, so factorizing, clamping, fixed-point accumulation, binning and contribution
bounding keep exactly one implementation. Workers return small
:class:`~dpframe.core.plan.ExactAggregates` (numpy arrays); a tree of merges brings them to the
client, where :func:`dpframe.release.run_release` adds noise once, through the same session.
No noise, budget or sensitivity logic ever runs on a worker, and the session never leaves the
client.

Contribution bounding needs each privacy unit's rows in one block: with ``privacy_unit`` the
frame is first shuffled by a canonical hash of the unit (a full all-to-all shuffle; see
docs/dask.md for its cost). Rows of one unit then sit in one partition, partitions hold
disjoint units, and per-partition bounding is global bounding.

This module imports dask at import time: import it only when dask is installed
(``dpframe.dask`` does so lazily; ``import dpframe`` never imports dask).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.util import hash_array

from ..core.plan import ExactAggregates, ReleasePlan
from ..errors import ValidationError
from ..query import ColumnKind
from .base import sorted_keys
from .pandas import PandasBackend, column_kind

UNIT_HASH_COLUMN = "__dpframe_unit_hash__"
DEFAULT_SPLIT_EVERY = 8
_SAFE_INT = 1 << 61  # int64 partials at or above this become Python ints before a merge


# -- canonical unit hash --------------------------------------------------------------------------

def _hash_floats(values: npt.NDArray[np.float64]) -> npt.NDArray[np.uint64]:
    return np.asarray(hash_array(values + 0.0), dtype=np.uint64)  # + 0.0: -0.0 becomes 0.0


def _hash_strings(values: npt.NDArray[np.object_]) -> npt.NDArray[np.uint64]:
    return np.asarray(hash_array(values.astype(object), categorize=False), dtype=np.uint64)


def unit_hash(s: pd.Series) -> npt.NDArray[np.uint64]:
    """A hash of each unit value, deterministic across processes, such that values
    :func:`pandas.factorize` treats as equal get equal hashes, whatever dtype a partition has.

    Numbers (and booleans) hash as float64 (1, 1.0 and True are one unit, as in factorize);
    strings hash by their text; other objects in an object column share one bucket. Unequal
    units may collide: that only puts them in the same partition, where they stay distinct.
    Missing values get any hash (their rows are dropped later).
    """
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        s = s.astype(object)
        dtype = s.dtype
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        return _hash_floats(s.to_numpy(dtype=np.float64, na_value=np.nan))
    if pd.api.types.is_object_dtype(dtype):
        vals = s.to_numpy(dtype=object)
        out = np.zeros(len(vals), dtype=np.uint64)
        is_str = np.fromiter((isinstance(v, str) for v in vals), dtype=bool, count=len(vals))
        is_num = np.fromiter(
            (isinstance(v, numbers.Real) and not isinstance(v, str) for v in vals),
            dtype=bool, count=len(vals))
        is_num &= ~is_str
        if is_str.any():
            out[is_str] = _hash_strings(vals[is_str])
        if is_num.any():
            out[is_num] = _hash_floats(np.array([float(v) for v in vals[is_num]],
                                                dtype=np.float64))
        return out
    if pd.api.types.is_string_dtype(dtype):
        return _hash_strings(s.to_numpy(dtype=object, na_value=""))
    # datetimes, timedeltas, periods...: one dtype per column, pandas' own stable hash
    return np.asarray(pd.util.hash_pandas_object(s, index=False).to_numpy(), dtype=np.uint64)


def _with_unit_hash(part: pd.DataFrame, unit: str) -> pd.DataFrame:
    out = part.copy(deep=False)
    out[UNIT_HASH_COLUMN] = unit_hash(part[unit])
    return out


# -- per-partition work (runs on workers) ----------------------------------------------------------

def _partition_exact(part: pd.DataFrame, plan: ReleasePlan, seed: int) -> ExactAggregates:
    """The pandas backend on one partition, with its own contribution-bounding generator."""
    return PandasBackend(part).exact(plan, np.random.default_rng(seed))


def _widen(agg: ExactAggregates) -> ExactAggregates:
    """Python-int copies of int64 arrays that a merge could overflow (|v| >= 2**61), so that
    ``ExactAggregates.merge`` of two blocks never wraps around."""

    def widen(a: np.ndarray) -> np.ndarray:
        if a.dtype != np.int64 or a.size == 0:
            return a
        if int(a.max()) >= _SAFE_INT or int(a.min()) <= -_SAFE_INT:
            return a.astype(object)
        return a

    return ExactAggregates(agg.keys, {k: widen(v) for k, v in agg.values.items()},
                           {k: widen(v) for k, v in agg.counts.items()},
                           None if agg.unit_counts is None else widen(agg.unit_counts))


def merge_partials(*parts: ExactAggregates) -> ExactAggregates:
    """Sum of partial aggregates over blocks holding disjoint privacy units."""
    out = _widen(parts[0])
    for p in parts[1:]:
        out = _widen(out.merge(_widen(p)))
    return out


def _summary(part: pd.DataFrame, columns: Sequence[str]) -> tuple[int, tuple[bool, ...]]:
    """Rows of a partition and whether each column has a non-missing value in it."""
    return len(part), tuple(bool(part[c].notna().any()) for c in columns)


def _combine_summaries(*parts: tuple[int, tuple[bool, ...]]) -> tuple[int, tuple[bool, ...]]:
    n = sum(p[0] for p in parts)
    width = len(parts[0][1])
    return n, tuple(any(p[1][i] for p in parts) for i in range(width))


def _tree(leaves: list[Any], combine: Any, split_every: int) -> Any:
    """A delayed tree reduction of ``leaves`` with fan-in ``split_every``."""
    level = leaves
    while len(level) > 1:
        level = [dask.delayed(combine, pure=True)(*level[i:i + split_every])
                 for i in range(0, len(level), split_every)]
    return level[0]


# -- the backend ----------------------------------------------------------------------------------

class DaskBackend:
    """Exact aggregates of a ``dask.dataframe.DataFrame``: partials on workers, merged here.

    ``split_every`` is the fan-in of the merge tree; ``shuffle_method`` is passed to Dask's
    shuffle by privacy unit (None: Dask's default, P2P on a distributed cluster).
    """

    def __init__(self, ddf: dd.DataFrame, *, split_every: int = DEFAULT_SPLIT_EVERY,
                 shuffle_method: str | None = None) -> None:
        if not isinstance(ddf, dd.DataFrame):
            raise ValidationError("expected a dask DataFrame")
        if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
            raise ValidationError("split_every must be an integer >= 2")
        if UNIT_HASH_COLUMN in ddf.columns:
            raise ValidationError(f"column name {UNIT_HASH_COLUMN!r} is reserved")
        self.ddf = ddf
        self.split_every = split_every
        self.shuffle_method = shuffle_method

    def schema(self) -> dict[str, ColumnKind]:
        return {str(c): column_kind(t) for c, t in self.ddf.dtypes.items()}

    def categories(self, column: str) -> tuple[object, ...] | None:
        """Categories of a categorical column when Dask knows them (metadata, never data)."""
        dtype = self.ddf.dtypes[column]
        if not isinstance(dtype, pd.CategoricalDtype) or not self.ddf[column].cat.known:
            return None
        return tuple(dtype.categories)

    def _columns(self, plan: ReleasePlan) -> list[str]:
        q = plan.query
        cols = [*q.by, *([q.privacy_unit] if q.privacy_unit else []),
                *(r.column for r in plan.requests if r.column is not None)]
        return list(dict.fromkeys(cols))

    def check(self, plan: ReleasePlan) -> None:
        """Refuse an empty frame or an all-missing measured column before any charge.

        Cheap in the usual case: the first partition alone settles it when it has rows and a
        value in every measured column; otherwise one pass over those columns decides. Like
        the pandas backend, this reveals only emptiness, to the analyst who holds the data.
        """
        cols = list(dict.fromkeys(m.column for m in plan.query.measures
                                  if m.column is not None and m.op != "count"))
        if self.ddf.npartitions == 0:
            raise ValidationError("the frame has no rows")
        frame = self.ddf[cols] if cols else self.ddf[list(self.ddf.columns[:1])]
        first = dask.delayed(_summary, pure=True)(frame.partitions[0].to_delayed()[0], cols)
        (n, present), = dask.compute(first)
        if n == 0 or not all(present):
            parts = [dask.delayed(_summary, pure=True)(p, cols) for p in frame.to_delayed()]
            (n, present), = dask.compute(_tree(parts, _combine_summaries, self.split_every))
        if n == 0:
            raise ValidationError("the frame has no rows")
        for c, ok in zip(cols, present, strict=True):
            if not ok:
                raise ValidationError(f"column {c!r} has no non-missing value")

    def prepared(self, plan: ReleasePlan) -> dd.DataFrame:
        """The frame the partials are computed on: needed columns only, and with a privacy
        unit, shuffled so that each unit's rows sit in exactly one partition."""
        frame = self.ddf[self._columns(plan)]
        unit = plan.query.privacy_unit
        if unit:
            meta = frame._meta.assign(**{UNIT_HASH_COLUMN: np.zeros(0, dtype=np.uint64)})
            hashed = frame.map_partitions(_with_unit_hash, unit, meta=meta)
            frame = hashed.shuffle(on=UNIT_HASH_COLUMN, shuffle_method=self.shuffle_method,
                                   force=True)
        return frame

    def exact(self, plan: ReleasePlan, gen: np.random.Generator) -> ExactAggregates:
        """Partials per partition (each with its own generator seeded from ``gen``), merged by
        a tree reduction; private keys are re-sorted (never in data or partition order)."""
        parts = self.prepared(plan).to_delayed()
        seeds = gen.integers(0, 2**63, size=len(parts), dtype=np.int64)
        plan_d = dask.delayed(plan, pure=True)
        leaves = [dask.delayed(_partition_exact, pure=True)(p, plan_d, int(s))
                  for p, s in zip(parts, seeds, strict=True)]
        agg: ExactAggregates
        agg, = dask.compute(_tree(leaves, merge_partials, self.split_every))
        if plan.query.private_keys:
            order = sorted_keys(agg.keys)
            agg = ExactAggregates(
                [agg.keys[i] for i in order],
                {k: v[order] for k, v in agg.values.items()},
                {k: v[order] for k, v in agg.counts.items()},
                agg.unit_counts[order] if agg.unit_counts is not None else None)
        return agg
