"""Heavy units in a two-pass scan: pre-selection in pass 1, by priorities carried to pass 2.

Pass 2 loads each spill partition whole, so a unit with tens of millions of rows would load
them all: contribution bounding makes such a unit harmless to privacy, not to memory, and
running out of memory after the charge depends on one person's rows. Pass 1 therefore watches
how many rows each batch sends to each partition. A slice past :func:`heavy_limit` (about twice
its expected share) is pre-selected before it is spilled (:func:`preselect`): each unit keeps
at most ``groups_per_unit`` pairs and ``rows_per_group`` rows in each, chosen by

* a **pair priority**, a keyed pseudo-random function of (unit word, group, release salt)
  (:class:`~dpframe.core.exact.bounding.KeyedPairs`): the same for every row of a pair, in every
  batch and in pass 2;
* a **row priority**, a fresh uniform 64-bit draw, written beside the kept rows into the
  partition's *carried* file (:data:`ROW_PRIORITY`).

Pass 2 reduces a partition without carried rows as before. One with carried rows selects over
all its rows by the same rule (:func:`bound_by_priority`), the rows spilled plainly drawing
their row priority then. Two facts make this exactly the uniform bounding of pass 2:

1. *Pre-selection*: a row kept over a union of blocks is kept in its own block (its ranks
   there are no larger), so selecting again over the union of the blocks' selections is
   selecting over all rows (:func:`~dpframe.core.exact.bounding.select_by_priority`).
2. *Deferred decisions*: a plainly spilled row's priority was never looked at in pass 1, so
   drawing it in pass 2 gives every row of the partition one independent uniform priority,
   drawn once. (Drawing the carried rows' priorities afresh in pass 2 would not: a light row
   beside 100 carried rows of its pair, ``rows_per_group=1``, must be kept with probability 1/101,
   not 1/2; tested.)

A unit's groups are then a uniform choice among its distinct groups and its rows a uniform
choice within each, as in :func:`~dpframe.core.exact.bounding.bound_contributions`; a unit's
selection depends on its own rows, the salt and fresh draws only, so the transformation stays
stable. Which slices are pre-selected depends on the data, but the released distribution does
not.

With ``diagnostics=`` the rows a pre-selection drops are not lost to ``rows_dropped``: each
unit's count of them rides on its first kept row (:data:`DROPPED_BEFORE`), pass 2's selection
hands them on with its own drops, and the aggregation counts them with bounding's, capped once
per unit (:func:`~dpframe.core.exact.transform.carried_drops`): a unit's term is the rows it had
less
the rows it kept, as when bounding sees every row at once (finding 63).

Private keys have no code shared by the batches: a pair's priority is then keyed on the word of
its key's canonical labels (:func:`~dpframe.core.exact.hashing.value_words`), and ties (equal top
bits, or words that collide: text words are a public digest) are broken by the key's rank in
the canonical order of keys (:func:`~dpframe.core.exact.values.sorted_order`), which orders any two
keys alike in every batch and in pass 2. So every block orders a unit's pairs by one total
order, which is all fact 1 needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...core.exact.bounding import (
    KeyedPairs,
    pair_priorities,
    ranked_private_keys,
    select_by_priority,
)
from ...core.exact.compute import ComputeRequest
from ...core.exact.transform import carried_drops
from ..base import observed_key_codes
from ..blocks.arrow_columns import I64, factorize, unit_codes
from ..blocks.arrow_words import column_words

#: The row priority of a pre-selected row (uint64; null: the row was spilled plainly and its
#: priority is drawn in pass 2).
ROW_PRIORITY = "__dpframe_row_priority__"
#: With ``diagnostics=``: on a unit's first pre-selected row, the rows of that unit (with a
#: key) the pre-selection dropped, so that pass 2 counts them as bounding's own drops
#: (:func:`~dpframe.core.exact.transform.carried_drops`); null or 0 elsewhere.
DROPPED_BEFORE = "__dpframe_dropped_before__"
#: Rows a partition may receive from one batch beyond twice its expected share before the
#: batch's slice for it is pre-selected.
HEAVY_MARGIN = 256


def heavy_limit(rows: int, parts: int) -> int:
    """The most rows of a ``rows``-row batch that go to one of ``parts`` partitions unselected:
    twice the expected share plus :data:`HEAVY_MARGIN`. A partition thus holds at most about
    twice its expected rows, plus ``groups_per_unit * rows_per_group`` rows per unit and batch."""
    return 2 * -(-rows // parts) + HEAVY_MARGIN


@dataclass(frozen=True)
class _Pairs:
    """A block's rows as bounding sees them: dense unit codes, group codes (ordered alike in
    every block) and the pair priorities (or the inputs of their keyed hash), restricted to
    ``rows``, the rows some query could keep (a unit and a key)."""

    rows: npt.NDArray[np.intp]
    units: I64
    groups: npt.NDArray[np.signedinteger[Any]]
    priority: KeyedPairs | npt.NDArray[np.uint64]


def _pairs(block: pa.RecordBatch | pa.Table, request: ComputeRequest, unit_column: str,
           group_column: str | None, salt: int) -> _Pairs:
    """:class:`_Pairs` of ``block``. ``unit_column`` tells units apart (ids, or their blocks);
    ``group_column`` holds public group codes (None: none, or private keys, read from the
    key columns)."""
    ids = block.column(unit_column)
    units = unit_codes(ids)
    words = (ids.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
             if pa.types.is_integer(ids.type) else column_words(ids).view(np.int64))
    key_words = None
    if request.by and request.private_keys:  # ranks and words: the same order in every block
        groups, key_words = _private_pairs(block, request.by)
        rows = np.flatnonzero((units >= 0) & (groups >= 0))
    else:
        groups = (np.zeros(block.num_rows, dtype=np.int8) if group_column is None
                  else block.column(group_column).to_numpy(zero_copy_only=False))
        rows = np.flatnonzero(units >= 0)  # a missing unit's rows are dropped by every query
    return _Pairs(rows, units[rows], groups[rows],
                  pair_priorities(words[rows], groups[rows], key_words, salt))


def _private_pairs(block: pa.RecordBatch | pa.Table, by: tuple[str, ...]
                   ) -> tuple[I64, npt.NDArray[np.int64]]:
    """Each row's private key as its rank in the canonical order of the block's keys (-1:
    missing) and each rank's word (:func:`~dpframe.core.exact.bounding.ranked_private_keys`)."""
    found = [factorize(block.column(c)) for c in by]
    codes, keys = observed_key_codes([c for c, _ in found], [u for _, u in found])
    return ranked_private_keys(codes, keys)


def preselect(block: pa.RecordBatch, request: ComputeRequest, unit_column: str,
              group_column: str | None, salt: int, gen: np.random.Generator
              ) -> pa.RecordBatch:
    """The rows of ``block`` (one batch's slice of one partition) that can survive bounding,
    each with a fresh uniform row priority (:data:`ROW_PRIORITY`): per unit its ``groups_per_unit``
    pairs of least keyed priority here, and in each its ``rows_per_group`` rows of smallest row
    priority, and its ``rows_per_unit`` of those when there is no group step
    (:attr:`~dpframe.core.exact.compute.ComputeRequest.preselect_total`: T is otherwise applied in
    pass 2 only) (:func:`_pairs` gives the units, groups and pair priorities)."""
    p = _pairs(block, request, unit_column, group_column, salt)
    row = gen.integers(0, 2**64, p.rows.size, dtype=np.uint64)
    keep = select_by_priority(p.units, p.groups, p.priority, row, request.groups_per_unit,
                              request.rows_per_group, request.preselect_total)
    kept = np.flatnonzero(keep)
    rows = block.take(pa.array(p.rows[kept]))
    rows = rows.append_column(ROW_PRIORITY, pa.array(row[kept], pa.uint64()))
    if request.diagnostics_cap is None:
        return rows
    return rows.append_column(DROPPED_BEFORE, pa.array(carried_drops(p.units, p.groups, keep),
                                                       pa.int64()))


def bound_by_priority(block: pa.Table, request: ComputeRequest, unit_column: str,
                      group_column: str | None, salt: int, gen: np.random.Generator
                      ) -> tuple[npt.NDArray[np.intp], I64 | None]:
    """The rows of a pass-2 partition holding carried rows that bounding keeps: the selection
    of :func:`preselect` over all of them, by the carried row priorities and, for the rows
    spilled plainly (a null priority), fresh ones. Every kept unit is then within its bounds,
    so bounding the kept rows again keeps them all. Second, with ``diagnostics=``
    (:data:`DROPPED_BEFORE`), each kept row's count of its unit's rows dropped so far, by
    pass 1 and here (:func:`~dpframe.core.exact.transform.carried_drops`); else None."""
    p = _pairs(block, request, unit_column, group_column, salt)
    carried = block.column(ROW_PRIORITY)
    row = carried.fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
    if carried.null_count:
        fresh = np.flatnonzero(carried.is_null().to_numpy(zero_copy_only=False))
        row = row.copy()  # (a view of the table's buffer is read-only)
        row[fresh] = gen.integers(0, 2**64, fresh.size, dtype=np.uint64)
    keep = select_by_priority(p.units, p.groups, p.priority, row[p.rows], request.groups_per_unit,
                              request.rows_per_group, request.rows_per_unit)
    if DROPPED_BEFORE not in block.schema.names:
        return p.rows[keep], None
    before = block.column(DROPPED_BEFORE).fill_null(0).to_numpy(zero_copy_only=False)
    return p.rows[keep], carried_drops(p.units, p.groups, keep,
                                       np.asarray(before, dtype=np.int64)[p.rows])
