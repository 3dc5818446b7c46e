"""The exact half, one small class per primitive: what a backend computes, never noise.

Each :class:`Primitive` computes one kind of :class:`~dpframe.core.exact.compute.AggregateRequest`
on
one block of rows, on numpy (:meth:`Primitive.compute`), and says how two blocks' results
merge (:attr:`Primitive.merge`: exact addition of per-group counts and integer sums, or union
of (group, value hash) sets). :func:`compute_exact` is a loop over a request's primitives; a
new primitive is one class here plus a :class:`Columns` method per engine when it reads a new
view of a column.

Privacy: nothing here draws noise or reads the budget. Every result is an exact function of
the rows a block keeps after contribution bounding (:mod:`dpframe.core.exact.transform`), and the
merges are exact (int64 far from overflow, Python integers beyond), so the sensitivity the
core's plan assumes holds for any split of the rows into blocks holding disjoint units.

Each primitive also says which of a block's rows clamping moved (:meth:`Primitive.clamped`),
so ``diagnostics=`` (:func:`clamped_rows`) counts what every primitive clamps, a new one
included: the base class has no answer, and ``tests/core/test_primitives.py`` fails for a
primitive that gives none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from .compute import (
    AggregateRequest,
    ComputeRequest,
    ExactAggregates,
    Pairs,
    add_into,
    union_pairs,
    unique_pairs,
)
from .transform import (
    as_counts,
    bin_index,
    bounded_rows,
    cell_index,
    distinct_units_per_group,
    fixed_point,
    fixed_point_total,
    grid_index,
    grouped_bin_counts,
    grouped_count,
    grouped_fixed_point_total,
    grouped_sum_exact,
)

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
Bools = npt.NDArray[np.bool_]
F64 = npt.NDArray[np.float64]


class Columns(Protocol):
    """The column views every engine gives the exact primitives (pandas, Arrow scans, Polars
    through Arrow, Dask partitions, Spark's per-group partials). Each is a function of the
    column's public kind and of each value alone (the canonical value model, docs/privacy.md)."""

    def numbers(self, name: str) -> tuple[np.ndarray, Bools | None]:
        """The column as float64 (or int64/uint64) numbers and its non-missing mask (None:
        the missing values are exactly the NaNs); values that are not numbers are missing."""
        ...

    def words(self, name: str) -> tuple[U64, Bools]:
        """A keyed 64-bit hash of each value (equal values hash equal in every block) and
        whether the row holds a value (distinct counts)."""
        ...

    def codes(self, name: str) -> I64:
        """Dense codes of the column's values, -1 for missing (privacy units)."""
        ...


@dataclass
class Block:
    """One block's rows after sampling and bounding, as the primitives read them: ``codes``
    the group of each row left (``ng``: dropped), ``rows`` the rows they are for (None: every
    row), ``whole`` when every row is in the one group with nothing bounded."""

    codes: npt.NDArray[np.signedinteger[Any]]
    ng: int
    whole: bool
    rows: npt.NDArray[np.intp] | None
    columns: Columns
    _numbers: dict[str, tuple[np.ndarray, Bools | None]] = field(default_factory=dict)

    def take(self, a: np.ndarray) -> np.ndarray:
        """A per-row array, on the rows left."""
        return a if self.rows is None else a[self.rows]

    def raw(self, name: str) -> tuple[np.ndarray, Bools | None]:
        """The column's numbers and mask, untaken (read once per block)."""
        if name not in self._numbers:
            self._numbers[name] = self.columns.numbers(name)
        return self._numbers[name]

    def numbers(self, name: str) -> tuple[np.ndarray, Bools]:
        """The column's numbers on the rows left and their non-missing mask."""
        raw, valid = self.raw(name)
        x = self.take(raw)
        return x, (~np.isnan(x) if valid is None else self.take(valid))


#: what a primitive returns: slot ("values", "counts", "distinct") -> per-group result
Piece = dict[str, Any]
Merge = Callable[..., Any]
#: a request's column as float64 numbers on the block's rows (NaN: missing), read when called
Values = Callable[[], F64]


class Primitive:
    """One kind of exact aggregate: ``compute`` on a block, ``merge`` of two blocks."""

    kind: ClassVar[str]
    #: how two blocks' results add up: exact sums (:func:`add_into`) or set union
    merge: ClassVar[Merge] = staticmethod(add_into)

    def compute(self, req: AggregateRequest, block: Block) -> Piece:
        raise NotImplementedError

    def clamped(self, req: AggregateRequest, values: Values) -> Bools | None:
        """The rows whose value clamping moved for this request (a non-missing value outside
        what the request reads: its bounds, a histogram's edges), or None when this primitive
        clamps nothing (``values`` is then never read). Every primitive answers: the base
        class has no answer, so ``diagnostics=`` cannot silently miss a new primitive."""
        raise NotImplementedError(f"{type(self).__name__} does not say which rows it clamps")


def _outside_bounds(req: AggregateRequest, values: Values) -> Bools:
    """Non-missing values outside the request's bounds [lo, hi] (NaN compares false)."""
    x = values()
    with np.errstate(invalid="ignore"):
        return (x < req.lo) | (x > req.hi)


class Rows(Primitive):
    """Rows per group."""

    kind = "rows"

    def compute(self, req: AggregateRequest, block: Block) -> Piece:
        if block.whole:
            return {"values": np.array([block.codes.size], dtype=np.int64)}
        return {"values": grouped_count(block.codes, block.ng)}

    def clamped(self, req: AggregateRequest, values: Values) -> None:
        return None  # counts rows: no value read


class NonNull(Primitive):
    """Non-missing values of a column per group."""

    kind = "nonnull"

    def compute(self, req: AggregateRequest, block: Block) -> Piece:
        assert req.column is not None
        _, ok = block.numbers(req.column)
        return {"values": grouped_count(block.codes, block.ng, ok)}

    def clamped(self, req: AggregateRequest, values: Values) -> None:
        return None  # whether a value is missing: nothing clamped


class FixedSum(Primitive):
    """Exact integer sums of fixed-point clamped values (and their non-missing counts)."""

    kind = "fixed_sum"

    def compute(self, req: AggregateRequest, block: Block) -> Piece:
        assert req.column is not None
        raw, valid = block.raw(req.column)
        totals = fixed_point_total(raw, req) if block.whole else None
        if totals is not None:
            return self._piece(req, as_counts(totals[0]), as_counts(totals[1]))
        if valid is None:  # missing values are the NaNs: one pass, no mask
            blocked = grouped_fixed_point_total(block.codes, block.take(raw), req, block.ng)
            if blocked is not None:
                return self._piece(req, *blocked)
        x, ok = block.numbers(req.column)
        total = grouped_sum_exact(block.codes, fixed_point(x, req), block.ng,
                                  max(abs(req.ilo), abs(req.ihi)))
        return self._piece(req, total, grouped_count(block.codes, block.ng, ok)
                           if req.with_count else None)

    @staticmethod
    def _piece(req: AggregateRequest, total: np.ndarray, count: np.ndarray | None) -> Piece:
        return {"values": total, "counts": count} if req.with_count else {"values": total}

    def clamped(self, req: AggregateRequest, values: Values) -> Bools:
        return _outside_bounds(req, values)  # clamped to [lo, hi] before the fixed point


class Bins(Primitive):
    """Counts per histogram bin (exactly ``pd.cut``), per group."""

    kind = "bins"

    def compute(self, req: AggregateRequest, block: Block) -> Piece:
        assert req.column is not None
        x, ok = block.numbers(req.column)
        b = bin_index(x, req.edges, req.right, req.include_lowest)
        return {"values": grouped_bin_counts(block.codes, b, block.ng, len(req.edges) - 1, ok)}

    def clamped(self, req: AggregateRequest, values: Values) -> Bools:
        x = values()  # outside every bin: dropped, as pd.cut drops it
        with np.errstate(invalid="ignore"):
            return (bin_index(x, req.edges, req.right, req.include_lowest) < 0) & ~np.isnan(x)


class Grid(Primitive):
    """Counts per candidate cell (the first candidate >= the clamped value), per group."""

    kind = "grid"

    def compute(self, req: AggregateRequest, block: Block) -> Piece:
        assert req.column is not None
        x, ok = block.numbers(req.column)
        return {"values": grouped_bin_counts(block.codes, grid_index(x, req), block.ng,
                                             len(req.edges), ok)}

    def clamped(self, req: AggregateRequest, values: Values) -> Bools:
        return _outside_bounds(req, values)  # clamped to [lo, hi] before its cell


class Cells(Primitive):
    """Counts per equal-width cell of a quantile's public grid over [L, U] (the clamped value's
    cell), per group."""

    kind = "cells"

    def compute(self, req: AggregateRequest, block: Block) -> Piece:
        assert req.column is not None
        x, ok = block.numbers(req.column)
        return {"values": grouped_bin_counts(block.codes, cell_index(x, req), block.ng,
                                             req.ncells, ok)}

    def clamped(self, req: AggregateRequest, values: Values) -> Bools:
        return _outside_bounds(req, values)  # clamped to [lo, hi] before its cell


class Distinct(Primitive):
    """The set of (group, value hash) pairs of non-missing values; blocks unite, never add."""

    kind = "distinct"
    merge = staticmethod(union_pairs)

    def compute(self, req: AggregateRequest, block: Block) -> Piece:
        assert req.column is not None
        h, ok = (block.take(a) for a in block.columns.words(req.column))
        sel = (block.codes < block.ng) & ok
        pairs: Pairs = unique_pairs(block.codes[sel].astype(np.int64), h[sel])
        return {"distinct": pairs}

    def clamped(self, req: AggregateRequest, values: Values) -> None:
        return None  # values by their identity: nothing clamped


#: every primitive, by request kind (:data:`~dpframe.core.exact.compute.RequestKind`)
PRIMITIVES: dict[str, Primitive] = {p.kind: p for p in (Rows(), NonNull(), FixedSum(), Bins(),
                                                        Grid(), Cells(), Distinct())}


def _as_floats(column: Callable[[str], np.ndarray], name: str) -> Values:
    """The column ``name`` as float64 numbers, read when called."""
    return lambda: np.asarray(column(name), dtype=np.float64)


def clamped_rows(request: ComputeRequest, codes: npt.NDArray[np.signedinteger[Any]], ng: int,
                 column: Callable[[str], np.ndarray]) -> int:
    """Rows of the release (code < ``ng``) that clamping changed, as each request's primitive
    says (:meth:`Primitive.clamped`: a non-missing value of a bounded column outside its
    bounds, a histogram's outside its edges), counted once however many of the row's columns
    were clamped (``diagnostics=``). ``column`` gives a column's numbers on the block's rows.
    One privacy unit holds at most its kept rows of them."""
    hit = np.zeros(codes.size, dtype=bool)
    for req in request.requests:
        if req.column is None:
            continue
        moved = PRIMITIVES[req.kind].clamped(req, _as_floats(column, req.column))
        if moved is not None:
            hit |= moved
    return int(np.count_nonzero(hit & (codes < ng)))


def compute_exact(request: ComputeRequest, group_codes: npt.NDArray[np.signedinteger[Any]],
                  keys: list[tuple[object, ...]], unit_codes: I64 | None, columns: Columns,
                  gen: np.random.Generator | None, dropped_before: I64 | None = None
                  ) -> ExactAggregates:
    """Exact aggregates for one block of rows (a whole frame, a batch, or a partition).

    ``group_codes`` index ``keys`` (-1: row dropped: undeclared or missing key), in any signed
    integer type; ``unit_codes`` identify privacy units (-1: missing unit, dropped);
    ``columns`` gives the columns' views (:class:`Columns`). Results of blocks that hold
    disjoint units merge (:meth:`ExactAggregates.merge`). A release with no grouping, unit or
    sampling keeps every row in one group and takes one pass per column. ``dropped_before``
    (``diagnostics=``): per row, rows of its unit a pre-selection dropped earlier
    (:func:`~dpframe.core.exact.transform.carried_drops`), counted as bounding's own.
    """
    q = request
    ng = len(keys)
    whole = not q.by and not q.draws_at_random and ng == 1
    codes, rows, dropped = ((np.asarray(group_codes, dtype=np.int64), None, 0) if whole
                            else bounded_rows(request, group_codes, unit_codes, ng, gen,
                                              dropped_before))
    block = Block(codes, ng, whole, rows, columns)
    slots: dict[str, dict[tuple[object, ...], Any]] = {"values": {}, "counts": {},
                                                       "distinct": {}}
    for req in request.requests:
        for slot, result in PRIMITIVES[req.kind].compute(req, block).items():
            slots[slot][req.key] = result
    unit_counts = None
    if request.unit_counts:
        unit_counts = grouped_count(codes, ng)  # rows, when each row is its own unit
        if request.privacy_unit:
            assert unit_codes is not None
            unit_counts = distinct_units_per_group(block.take(unit_codes), codes, ng, codes < ng)
    diagnostics = None
    if request.diagnostics_cap is not None:  # diagnostics=: rows clamped, rows dropped
        diagnostics = (clamped_rows(request, codes, ng,
                                    lambda name: block.take(block.raw(name)[0])), dropped)
    return ExactAggregates(list(keys), slots["values"], slots["counts"], unit_counts,
                           slots["distinct"], diagnostics)
