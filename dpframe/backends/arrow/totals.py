"""Adding the exact aggregates of blocks that hold disjoint privacy units, exactly.

A scan computes each block's aggregates alone and adds them here with the primitives' own merge
(:func:`~dpframe.core.exact.compute.add_into`: sums stay int64 while far from overflow and become
Python integers beyond); observed private keys get one global position
however many blocks saw them; distinct-value sets are united, never added.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ...core.exact.compute import ExactAggregates, add_diagnostics, add_into, union_pairs

I64 = npt.NDArray[np.int64]


class KeyIndex:
    """Observed private keys across blocks: a growing key -> global position dictionary."""

    def __init__(self) -> None:
        self.keys: list[tuple[object, ...]] = []
        self._pos: dict[tuple[object, ...], int] = {}

    def index(self, keys: list[tuple[object, ...]]) -> I64:
        """The global position of each key, new keys appended."""
        out = np.empty(len(keys), dtype=np.int64)
        for i, k in enumerate(keys):
            j = self._pos.get(k)
            if j is None:
                j = self._pos[k] = len(self.keys)
                self.keys.append(k)
            out[i] = j
        return out


class Totals:
    """Sum of the exact aggregates of blocks holding disjoint units (a streaming ``merge``)."""

    def __init__(self) -> None:
        self.values: dict[tuple[object, ...], np.ndarray] = {}
        self.counts: dict[tuple[object, ...], np.ndarray] = {}
        self.unit_counts: np.ndarray | None = None
        self.distinct: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}
        self.diagnostics: tuple[int, int] | None = None
        self.blocks = 0

    def add(self, agg: ExactAggregates, index: I64 | None, size: int) -> None:
        """Add one block's aggregates; ``index`` maps its keys to global positions (None: they
        are the global keys), ``size`` is the number of global keys so far."""
        for k, pairs in agg.distinct.items():  # sets: united, never added
            self.distinct[k] = union_pairs(self.distinct.get(k), None, pairs, index)
        for k, v in agg.values.items():
            self.values[k] = add_into(self.values.get(k), v, index, size)
        for k, v in agg.counts.items():
            self.counts[k] = add_into(self.counts.get(k), v, index, size)
        if agg.unit_counts is not None:
            self.unit_counts = add_into(self.unit_counts, agg.unit_counts, index, size)
        self.diagnostics = add_diagnostics(self.diagnostics, agg.diagnostics)
        self.blocks += 1

    def result(self, keys: list[tuple[object, ...]]) -> ExactAggregates:
        """The totals over ``keys`` (keys no block saw count zero)."""
        n = len(keys)

        def fit(a: np.ndarray) -> np.ndarray:
            if a.shape[0] == n:
                return a
            out = np.zeros((n, *a.shape[1:]), dtype=a.dtype)
            out[: a.shape[0]] = a
            return out

        return ExactAggregates(list(keys), {k: fit(v) for k, v in self.values.items()},
                               {k: fit(v) for k, v in self.counts.items()},
                               None if self.unit_counts is None else fit(self.unit_counts),
                               dict(self.distinct), self.diagnostics)
