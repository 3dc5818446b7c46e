"""The Dask backend's face: :class:`DaskBackend` (partials on the workers, merged in a tree
on the client) and the per-partition computation of row-level releases.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import numpy.typing as npt
import pandas as pd

from ...core.exact.compute import ComputeRequest, ExactAggregates
from ...core.exact.parallel import one_thread
from ...core.exact.values import NUMERIC_KINDS, ColumnKind
from ...errors import DPError, ValidationError
from ..base import (
    only_columns,
    public_key_list,
)
from ..blocks import UnitBlock, exact_of_block, merge_exact
from ..blocks.frames import (
    column_kind,
    column_labels,
)
from .conform import NUMBERS_PREFIX, BlockBackend, conformed, identity_columns
from .exchange import RESERVED, bucket_exact, preselect_buckets

DEFAULT_SPLIT_EVERY = 8
#: Input partitions per bucket of pre-selected rows: fewer buckets, fewer pieces to move
#: (partitions x buckets). A bucket holds the survivors of about this many partitions, most
#: often under half their rows, of the needed columns only (docs/benchmarks/dask.md).
PARTITIONS_PER_BUCKET = 5


# -- per-partition work (runs on workers) ----------------------------------------------------------

def partition_exact(part: pd.DataFrame, request: ComputeRequest,
                    seeds: npt.NDArray[np.int64] | None, numeric: dict[Any, ColumnKind],
                    key_kinds: dict[str, ColumnKind] | None = None,
                    partition_info: dict[str, Any] | None = None) -> pd.Series:
    """The pandas backend on one partition, with its own contribution-bounding generator
    (``seeds[partition number]``; None when the request draws nothing at random); the
    partial aggregates travel in a one-cell Series."""
    number = 0 if partition_info is None else int(partition_info["number"])

    def compute(frame: pd.DataFrame, gen: np.random.Generator | None) -> ExactAggregates:
        with one_thread():  # one task per worker thread already
            block, apart = conformed(frame, numeric, identity_columns(request))
            return BlockBackend(block, apart, key_kinds).exact(request, gen)

    agg = exact_of_block(UnitBlock(lambda: part, None if seeds is None else int(seeds[number])),
                         compute)
    out = pd.Series([None], dtype=object)
    out.iloc[0] = agg
    return out


def _unwrap(cell: pd.Series) -> ExactAggregates:
    agg = cell.iloc[0]
    assert isinstance(agg, ExactAggregates)
    return agg


def merge_partials(*parts: ExactAggregates | pd.Series) -> ExactAggregates:
    """Sum of partial aggregates over blocks holding disjoint privacy units (exact: the core
    merge widens sums near the int64 limit to Python integers)."""
    out = merge_exact([_unwrap(p) if isinstance(p, pd.Series) else p for p in parts])
    assert out is not None, "a merge of the tree has at least one leaf"
    return out


def _tree(leaves: list[Any], combine: Any, split_every: int) -> Any:
    """A delayed tree reduction of ``leaves`` with fan-in ``split_every`` (``combine`` runs at
    least once, also over a single leaf)."""
    level = leaves
    while True:
        level = [dask.delayed(combine, pure=True)(*level[i:i + split_every])
                 for i in range(0, len(level), split_every)]
        if len(level) == 1:
            return level[0]


# -- the backend ----------------------------------------------------------------------------------

class DaskBackend:
    """Exact aggregates of a ``dask.dataframe.DataFrame``: partials on workers, merged here.

    ``split_every`` is the fan-in of the merge tree. ``shuffle_method`` is accepted for
    compatibility and has no effect (a DeprecationWarning when given): rows of a unit meet
    through dpframe's own exchange, never Dask's shuffle, whose common dtypes (tasks) and
    Arrow conversion (P2P) could merge or refuse unit ids (finding 20 of docs/audit.md).
    """

    def __init__(self, ddf: dd.DataFrame, *, split_every: int = DEFAULT_SPLIT_EVERY,
                 shuffle_method: str | None = None) -> None:
        if not isinstance(ddf, dd.DataFrame):
            raise ValidationError("expected a dask DataFrame")
        if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
            raise ValidationError("split_every must be an integer >= 2")
        for reserved in RESERVED:
            if reserved in ddf.columns:
                raise ValidationError(f"column name {reserved!r} is reserved")
        if any(str(c).startswith(NUMBERS_PREFIX) for c in ddf.columns):
            raise ValidationError(f"column names starting {NUMBERS_PREFIX!r} are reserved")
        self._labels = column_labels(ddf.columns)
        self.ddf = ddf
        self.split_every = split_every
        if shuffle_method is not None:
            warnings.warn("shuffle_method has no effect: the rows of a unit "
                          "meet through dpframe's own exchange, not Dask's shuffle",
                          DeprecationWarning, stacklevel=3)
        self.shuffle_method = shuffle_method

    def bind(self, columns: Sequence[str]) -> DaskBackend:
        """Itself: the partitions are read when the release computes."""
        return self

    def schema(self, columns: Sequence[str] | None = None) -> dict[str, ColumnKind]:
        kinds = {str(c): column_kind(t) for c, t in self.ddf.dtypes.items()}
        return kinds if columns is None else only_columns(kinds, columns)

    def categories(self, column: str) -> tuple[object, ...] | None:
        """Categories of a categorical column when Dask knows them (metadata, never data)."""
        label = self._labels[column]
        dtype = self.ddf.dtypes[label]
        if not isinstance(dtype, pd.CategoricalDtype) or not self.ddf[label].cat.known:
            return None
        return tuple(dtype.categories)

    def _numeric(self, request: ComputeRequest) -> dict[Any, ColumnKind]:
        """Measured columns the public schema (the frame's meta) says are numeric, by label,
        with their kind: blocks that type them otherwise read their numbers by value
        (:func:`conform.conformed`; keys and units keep their values as they are)."""
        kinds = self.schema(request.measure_columns)
        return {self._labels[c]: k for c, k in kinds.items() if k in NUMERIC_KINDS}

    def _key_kinds(self, request: ComputeRequest) -> dict[str, ColumnKind]:
        """The public kinds of private key columns, by query name: every block labels their
        values by these (:class:`conform.BlockBackend`), so a released key's label never depends
        on the dtype of the block that saw it first."""
        return self.schema(request.by) if request.private_keys else {}

    def exact(self, request: ComputeRequest, gen: np.random.Generator | None) -> ExactAggregates:
        """Partials per partition (each with its own generator seeded from ``gen``), merged by
        a tree reduction; private keys are re-sorted (never in data or partition order).

        The frame's own graph is built and run here, after the charge, and may fail on its
        data (a ``read_csv`` whose inferred dtypes a later block contradicts, a string
        conversion meeting a lone surrogate): such a failure is a typed error naming only the
        exception's type, as for a Polars LazyFrame, since its message may quote a value. The
        charge stands (docs/dask.md)."""
        try:
            return self._exact(request, gen)
        except DPError:
            raise
        except Exception as exc:
            failed = type(exc).__name__
        # raised outside the handler: the original exception (and its message, which may
        # quote a value) is not even kept as this error's context
        raise ValidationError(f"the Dask computation failed ({failed}); its message is not "
                              "shown: it may quote a value of the data")

    def _exact(self, request: ComputeRequest, gen: np.random.Generator | None
               ) -> ExactAggregates:
        frame = self.ddf[[self._labels[c] for c in request.columns]]
        seeds = None
        if gen is not None:
            k0, k1 = (int(k) for k in gen.integers(0, 2**63, size=2, dtype=np.int64))
            if request.privacy_unit:
                return self._preselected_exact(request, gen, (k0, k1))
            seeds = gen.integers(0, 2**63, size=frame.npartitions, dtype=np.int64)
        # map_partitions fuses with the read: each partition is read and reduced in one task
        partials = frame.map_partitions(partition_exact, request, seeds, self._numeric(request),
                                        self._key_kinds(request), meta=pd.Series([], dtype=object),
                                        enforce_metadata=False, align_dataframes=False)
        agg: ExactAggregates
        agg, = dask.compute(_tree(partials.to_delayed(), merge_partials, self.split_every))
        return agg  # the core sorts the released private keys (never data or partition order)

    def _preselected_exact(self, request: ComputeRequest, gen: np.random.Generator,
                           key: tuple[int, int]) -> ExactAggregates:
        """Unit-level bounding without shuffling every row: each partition keeps only the rows
        that can survive bounding (:func:`exchange.preselect_buckets`) and splits them by unit hash
        into one bucket per :data:`PARTITIONS_PER_BUCKET` partitions; each bucket gathers its
        share from every partition (an exchange of pre-selected rows only, no Dask shuffle),
        and the final selection by the carried priorities is exactly bounding over all rows.
        Every unit-level release takes this path: public or private keys, sampled or not."""
        frame = self.ddf[[self._labels[c] for c in request.columns]]
        salt = int(gen.integers(0, 2**63))
        seeds = gen.integers(0, 2**63, size=frame.npartitions, dtype=np.int64)
        nb = math.ceil(frame.npartitions / PARTITIONS_PER_BUCKET)
        # each bucket's own generator, for the row priorities no partition drew
        bucket_seeds = gen.integers(0, 2**63, size=nb, dtype=np.int64)
        keys = ([] if request.private_keys else  # private keys: each bucket observes them
                public_key_list([tuple(request.keys[c]) for c in request.by]) if request.by
                else [()])
        numeric, key_kinds = self._numeric(request), self._key_kinds(request)
        split = [dask.delayed(preselect_buckets, pure=True, nout=nb)(
                     part, request, key, salt, int(seed), nb, numeric, key_kinds)
                 for part, seed in zip(frame.to_delayed(), seeds, strict=True)]
        finals = [dask.delayed(bucket_exact, pure=True)([s[j] for s in split], request, keys,
                                                         key, salt, int(bucket_seeds[j]),
                                                         numeric, key_kinds)
                  for j in range(nb)]
        agg: ExactAggregates
        agg, = dask.compute(_tree(finals, merge_partials, self.split_every))
        return agg
