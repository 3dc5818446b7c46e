"""Unit-level bounding on Dask without a shuffle of every row: each partition pre-selects the
rows that can survive contribution bounding (:func:`preselect_buckets`) and splits them into
buckets by the keyed hash of their unit; each bucket gathers its share from every partition and
selects again by the carried priorities (:func:`bucket_exact`), which is bounding over all
rows (docs/dask.md).

Privacy: the selection is :func:`dpframe.core.exact.bounding.select_by_priority` with uniform
priorities drawn once per row, as in every backend; buckets tell units apart by their exact
ids, never by hash, so colliding units stay two units. With ``diagnostics=`` each partition
ships, on a unit's first kept row, the rows of it its pre-selection dropped
(:data:`DROPPED_COLUMN`), which the bucket counts with its own drops, capped once per unit:
``rows_dropped`` is pandas' count (finding 63).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from ...core.exact.bounding import (
    DrawPriorities,
    Selection,
    pair_priorities,
    ranked_private_keys,
    select_by_priority,
    select_drawing,
)
from ...core.exact.compute import ComputeRequest, ExactAggregates
from ...core.exact.hashing import (
    scale_top_bits,
)
from ...core.exact.parallel import one_thread
from ...core.exact.primitives import compute_exact
from ...core.exact.transform import carried_drops, dropped_rows
from ...core.exact.values import ColumnKind
from ..base import (
    group_code_dtype,
    partition_order,
)
from ..blocks import UnitBlock, block_substream, exact_of_block
from ..blocks.frames import (
    PandasBackend,
    column_labels,
    unit_codes,
)
from .conform import BlockBackend, conformed, identity_columns
from .words import unit_hash_by_codes

#: Reserved (the column of the unit hash when rows were shuffled by it, before 2026-11-26).
UNIT_HASH_COLUMN = "__dpframe_unit_hash__"
#: Columns a pre-selected row carries: its unit's exact id, its group code and its row priority.
UNIT_ID_COLUMN = "__dpframe_unit__"
GROUP_COLUMN = "__dpframe_group__"
#: A shipped row's priority, where its partition drew one (nullable UInt64: missing where the
#: row's priority was never read; a partition that read none ships no such column).
ROW_PRIORITY_COLUMN = "__dpframe_row_priority__"
#: With ``diagnostics=``: on a unit's first shipped row, the rows of that unit (with a key) its
#: partition's pre-selection dropped (:func:`~dpframe.core.exact.transform.carried_drops`), which
#: the bucket counts as bounding's own; 0 on the others.
DROPPED_COLUMN = "__dpframe_dropped_before__"
RESERVED = (UNIT_HASH_COLUMN, UNIT_ID_COLUMN, GROUP_COLUMN, ROW_PRIORITY_COLUMN,
            DROPPED_COLUMN)


def preselect_buckets(part: pd.DataFrame, request: ComputeRequest, key: tuple[int, int],
                      salt: int, seed: int, buckets: int,
                      numeric: dict[Any, ColumnKind] | None = None,
                      key_kinds: dict[str, ColumnKind] | None = None) -> list[pd.DataFrame]:
    """The rows of one input partition that can survive contribution bounding,
    split into ``buckets`` by the keyed hash of their unit (a unit's rows from every partition
    meet in one bucket: the exchange moves only pre-selected rows): per unit, its
    ``groups_per_unit`` pairs of smallest keyed priority here and in each its
    ``rows_per_group`` rows of smallest fresh random priority (and its ``rows_per_unit`` of
    those when there is no group step:
    :attr:`~dpframe.core.exact.compute.ComputeRequest.preselect_total`), with the unit's exact
    id and the group code
    (:func:`~dpframe.core.exact.bounding.select_by_priority`: selecting again over every
    partition's pre-selection is bounding over all rows). Row priorities are drawn only for
    the rows of pairs holding more than ``rows_per_group`` rows here, the only ones read; the kept
    rows among them carry theirs (:data:`ROW_PRIORITY_COLUMN`, shipped only when some kept row
    has one), and the bucket draws the others' when it reads them (deferred decisions: the
    law of drawing every priority up front, see select_by_priority)."""
    with one_thread():  # one task per worker thread already
        # columns that tell rows apart travel as they are: the bucket reads their numbers
        identities = identity_columns(request)
        part, _ = conformed(part, {c: k for c, k in (numeric or {}).items()
                                   if str(c) not in identities})
        backend = BlockBackend(part, {}, key_kinds)
        # group codes in the narrow type they travel in (bounding reads any signed type);
        # private keys as ranks in the canonical order, with their words (alike everywhere)
        codes, key_words = ordered_codes(backend, request)
        unit = backend.column(str(request.privacy_unit))
        # a unit the canonical value model counts as missing (NaN, a list...) drops its rows
        local = unit_codes(unit)
        valid = (local >= 0) & (codes >= 0)
        # with every row valid (the usual case), no gather of every row
        ok = None if bool(valid.all()) else np.flatnonzero(valid)
        units = local if ok is None else local[ok]
        h = unit_hash_by_codes(unit if ok is None else unit.iloc[ok], units, key)
        g = codes if ok is None else codes[ok]
        pair = pair_priorities(h.view(np.int64), g, key_words, salt)
        # uniform 64-bit row priorities, drawn for the rows read only (full-range draws are
        # the generator's raw words)
        drawing = _drawing(np.random.default_rng(seed))
        chosen = select_drawing(units, g, pair, drawing, request.groups_per_unit,
                                request.rows_per_group, request.preselect_total)
        keep = np.flatnonzero(chosen.keep)
        carried = _carried(keep, chosen)  # in the order of keep
        # the kept rows in bucket order, each column gathered once; a bucket is a slice
        order, bounds = partition_order(scale_top_bits(h[keep], buckets), buckets)
        keep = keep[order]
        rows = keep if ok is None else ok[keep]
        labels = column_labels(part.columns)
        # each column as the backend reads it, in that dtype (an object column of text is not
        # inferred as strings: a conversion that a lone surrogate would fail)
        # the measured columns, and the key columns as they are where the bucket runs the
        # backend (private keys, sampling), each gathered once (a key may be measured too)
        shipped = dict.fromkeys([*request.measure_columns,
                                 *(request.by if general(request) else ())])
        columns: dict[Any, Any] = {labels[c]: _taken(backend.column(c), rows) for c in shipped}
        # they travel on with the unit's exact id: buckets tell units apart by their ids,
        # never by hash (two units whose hashes collide stay two units; docs/dask.md); the
        # pair priority is not shipped: the bucket recomputes it
        columns[UNIT_ID_COLUMN] = _taken(unit, rows)
        if not general(request):
            columns[GROUP_COLUMN] = g[keep].astype(group_code_dtype(request), copy=False)
        if carried is not None:  # some kept row's priority was read here: it travels on
            columns[ROW_PRIORITY_COLUMN] = carried[order]
        if request.diagnostics_cap is not None:  # the rows dropped here, per unit, travel on
            columns[DROPPED_COLUMN] = carried_drops(units, g, chosen.keep)[order]
        out = pd.DataFrame(columns, copy=False)  # one frame built at once, no column inserts
    return [out.iloc[bounds[j]:bounds[j + 1]] for j in range(buckets)]


def general(request: ComputeRequest) -> bool:
    """Whether a bucket runs the whole pandas backend on the rows it keeps (private keys,
    sampling), rather than only the aggregates of public keys' group codes."""
    return request.private_keys or request.sample_rate is not None


def ordered_codes(backend: PandasBackend, request: ComputeRequest
                  ) -> tuple[npt.NDArray[np.signedinteger[Any]], npt.NDArray[np.int64] | None]:
    """Each row's group code, ordered alike in every partition and bucket, and the words of
    private keys (None: public keys, or none, whose codes index the declared keys): private
    keys as ranks in the canonical order of the block's keys
    (:func:`~dpframe.core.exact.bounding.ranked_private_keys`)."""
    if not (request.by and request.private_keys):
        return backend.group_codes(request, group_code_dtype(request))[0], None
    codes, keys = backend.group_codes(request)
    return ranked_private_keys(codes.astype(np.int64, copy=False), keys)


def _drawing(gen: np.random.Generator) -> DrawPriorities:
    """Uniform 64-bit priorities from ``gen``, for the rows asked."""
    return lambda rows: gen.integers(0, 2**64, rows.size, dtype=np.uint64)


def _carried(keep: npt.NDArray[np.intp], chosen: Selection) -> pd.arrays.IntegerArray | None:
    """The priorities read by the selection ``chosen`` of the kept rows ``keep`` (ascending),
    in their order: UInt64, missing where a row's priority was not read. None when no kept
    row's was (no column to ship)."""
    if not chosen.examined.size:
        return None
    read = chosen.keep[chosen.examined]  # examined rows that were kept
    values = np.zeros(keep.size, dtype=np.uint64)
    missing = np.ones(keep.size, dtype=bool)
    at = np.searchsorted(keep, chosen.examined[read])
    values[at] = chosen.priority[read]
    missing[at] = False
    return pd.arrays.IntegerArray(values, missing)


def _taken(s: pd.Series, rows: npt.NDArray[np.intp]) -> pd.Series:
    """The rows ``rows`` of ``s``, in its dtype, with a fresh default index."""
    return pd.Series(s.array.take(rows), dtype=s.dtype, copy=False)


@dataclasses.dataclass(frozen=True)
class Bucket:
    """A bucket's rows gathered in one frame (:func:`gathered`), and the columns whose numbers
    are read apart (:class:`conform.BlockBackend`)."""

    rows: pd.DataFrame
    apart: dict[str, str]


def bucket_exact(frames: list[pd.DataFrame], request: ComputeRequest,
                 keys: list[tuple[object, ...]], key: tuple[int, int], salt: int, seed: int,
                 numeric: dict[Any, ColumnKind] | None = None,
                 key_kinds: dict[str, ColumnKind] | None = None) -> ExactAggregates:
    """One bucket, a block of whole units on the block engine
    (:func:`~dpframe.backends.blocks.exact_of_block`): its rows are every partition's
    pre-selected rows of its units (:func:`gathered`), its generator is seeded with ``seed``,
    and its exact aggregates are those of the final selection by the carried priorities (rows
    that carry none get theirs drawn from the block's generator when read), bounded already
    (:func:`_select_and_aggregate`)."""
    def compute(bucket: Bucket, gen: np.random.Generator | None) -> ExactAggregates:
        assert gen is not None, "a bucket bounds units at random: it has a seed"
        with one_thread():  # one task per worker thread already
            return _select_and_aggregate(bucket, request, keys, key, salt, gen, key_kinds)

    return exact_of_block(UnitBlock(lambda: gathered(frames, request, numeric), seed), compute)


def gathered(frames: list[pd.DataFrame], request: ComputeRequest,
             numeric: dict[Any, ColumnKind] | None = None) -> Bucket:
    """A bucket's rows, from every partition's share, in one frame. Columns that tell rows
    apart (the unit's id, keys, a distinct count's values) are gathered exactly
    (:func:`concat_exact`); where that leaves one the public schema says is numeric typed
    otherwise, its numbers are read apart (:func:`conform.conformed`)."""
    if any(ROW_PRIORITY_COLUMN in f.columns for f in frames):
        # every frame with the column, missing where none was drawn: the concatenation keeps
        # it UInt64 (exact), never filled with NaN in a float column
        frames = [f if ROW_PRIORITY_COLUMN in f.columns else
                  f.assign(**{ROW_PRIORITY_COLUMN: pd.arrays.IntegerArray(
                      np.zeros(len(f), dtype=np.uint64), np.ones(len(f), dtype=bool))})
                  for f in frames]
    # the unit, the keys (shipped as they are with private keys or sampling) and the values
    # whose hashes a distinct count reads, also where they are measured as numbers
    named = identity_columns(request)
    identities = [UNIT_ID_COLUMN, *(c for c in column_labels(frames[0].columns).values()
                                    if str(c) in named)]
    # each partition's numbers of a measured identity read by its own dtype, before the
    # concatenation converts that (other columns were conformed in their partitions)
    measured = {c: k for c, k in (numeric or {}).items() if str(c) in named}
    apart: dict[str, str] = {}
    if measured:
        typed = [conformed(f, measured, named) for f in frames]
        frames, apart = [f for f, _ in typed], typed[0][1]
    numbers = [*(c for c in (numeric or {}) if str(c) not in named), *apart.values()]
    with one_thread():  # one task per worker thread already
        return Bucket(concat_exact(frames, identities, numbers), apart)


def concat_exact(frames: list[pd.DataFrame], identities: Sequence[Any],
                 numbers: Sequence[Any] = ()) -> pd.DataFrame:
    """The frames' rows in one frame, the columns that identify rows (``identities``: the unit
    column, private key columns) with every value as it was. Where partitions gave such a
    column different dtypes, pandas would convert them to a common one (int64 beside float64,
    even an empty float64 frame, gives float64: ids 2**53 and 2**53 + 1 become one unit, so one
    person's odd id in a partition could merge two others; findings 20 and 21 of
    docs/audit.md); it travels as Python objects instead, which the value model compares
    exactly. Measured columns keep pandas' common dtype: their values are read as numbers
    (int64 beside float64 is float64), and an object column would not be. The columns read
    as numbers (``numbers``, numeric in every frame), where frames type one differently, are
    float64 in each first: pandas makes bool beside float64 an object column, whose numbers
    would not be read at all."""
    if len(frames) > 1:
        def mixed(columns: Sequence[Any]) -> list[Any]:
            return [c for c in columns if len({str(f[c].dtype) for f in frames}) > 1]

        objects, floats = mixed(identities), mixed(numbers)

        def typed(f: pd.DataFrame) -> pd.DataFrame:
            if floats:
                f = f.copy(deep=False)
                for c in floats:
                    f[c] = f[c].to_numpy(dtype=np.float64, na_value=np.nan)
            return f.astype(dict.fromkeys(objects, object)) if objects else f

        if objects or floats:
            frames = [typed(f) for f in frames]
    return pd.concat(frames, ignore_index=True)


def _select_and_aggregate(bucket: Bucket, request: ComputeRequest,
                          keys: list[tuple[object, ...]], key: tuple[int, int], salt: int,
                          gen: np.random.Generator, key_kinds: dict[str, ColumnKind] | None = None
                          ) -> ExactAggregates:
    """The body of :func:`bucket_exact` on the bucket's rows, with the bucket's generator
    ``gen`` (the row priorities no partition drew; the pandas backend, when it runs, draws from
    the block's second stream, :func:`~dpframe.backends.blocks.block_substream`): units are
    told apart by their
    exact ids under the canonical value model (:func:`~dpframe.backends.blocks.frames.unit_codes`),
    as in pandas and scans. With public keys and no sampling, the aggregates of the kept rows
    by their group codes; else the pandas backend on the kept rows (whole bounded units:
    its own bounding keeps them all; it samples units and observes private keys)."""
    part, apart = bucket.rows, bucket.apart
    dense = unit_codes(part[UNIT_ID_COLUMN])
    carried = (part[ROW_PRIORITY_COLUMN].array if ROW_PRIORITY_COLUMN in part.columns
               else None)
    if general(request):
        codes, key_words = ordered_codes(BlockBackend(part, apart, key_kinds), request)
    else:  # narrow, as it travelled: bounding reads any signed type
        codes, key_words = part[GROUP_COLUMN].to_numpy(), None
    valid = (dense >= 0) & (codes >= 0)
    if not bool(valid.all()):  # the value model is per value: an id kept in its partition
        rows = np.flatnonzero(valid)  # stays an id here (a guard); a key too
        part, dense, codes = part.iloc[rows], dense[rows], codes[rows]
        carried = None if carried is None else carried[rows]
    before = _dropped_before(part)
    h = unit_hash_by_codes(part[UNIT_ID_COLUMN], dense, key)
    pair = pair_priorities(h.view(np.int64), codes, key_words, salt)
    keep = select_by_priority(dense, codes, pair, drawing_for(carried, gen),
                              request.groups_per_unit, request.rows_per_group,
                              request.rows_per_unit)
    # the columns the aggregation reads, of the kept rows only (the carried priorities and
    # group codes are done; so are the ids, unless the pandas backend reads them next)
    done = [GROUP_COLUMN, ROW_PRIORITY_COLUMN, DROPPED_COLUMN,
            *(() if general(request) else (UNIT_ID_COLUMN,))]
    kept = part.drop(columns=done, errors="ignore").iloc[np.flatnonzero(keep)]
    if general(request):  # the rows dropped so far ride on the kept ones, counted per unit
        by_id = dataclasses.replace(request, privacy_unit=UNIT_ID_COLUMN)  # there (diagnostics=)
        drops = None if before is None else carried_drops(dense, codes, keep, before)
        return BlockBackend(kept, apart, key_kinds, drops).exact(
            by_id, block_substream(gen, 1))
    rows_backend = BlockBackend(kept, apart)
    bounded = dataclasses.replace(request, privacy_unit=None)
    out = compute_exact(bounded, codes[keep], keys, None, rows_backend,
                        np.random.default_rng(0))
    if out.diagnostics is not None and request.diagnostics_cap is not None:  # (counting only)
        out.diagnostics = (out.diagnostics[0],  # with the partitions' drops (before)
                           dropped_rows(dense, codes, keep, request.diagnostics_cap, before))
    return out


def _dropped_before(part: pd.DataFrame) -> npt.NDArray[np.int64] | None:
    """The rows each partition's pre-selection dropped, on the units' first shipped rows
    (:data:`DROPPED_COLUMN`); None without ``diagnostics=``."""
    if DROPPED_COLUMN not in part.columns:
        return None
    return part[DROPPED_COLUMN].to_numpy(dtype=np.int64, na_value=0)


def drawing_for(carried: Any, gen: np.random.Generator) -> DrawPriorities:
    """The priorities of the rows asked: the one a row carries (drawn and read in its
    partition: it must not be drawn again), else a fresh draw from ``gen`` (read here for the
    first time). ``carried``: the bucket's UInt64 priorities, or None when no row carries
    one."""
    draw = _drawing(gen)
    if carried is None:
        return draw

    def read(rows: npt.NDArray[np.intp]) -> npt.NDArray[np.uint64]:
        mine = carried[rows]
        out: npt.NDArray[np.uint64] = mine.to_numpy(dtype=np.uint64, na_value=0)
        fresh = np.asarray(mine.isna())
        out[fresh] = draw(np.flatnonzero(fresh))
        return out
    return read


