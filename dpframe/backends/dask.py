"""The Dask backend: exact partial aggregates on the workers, one combine on the client.

Each partition runs the pandas backend (:class:`~dpframe.backends.pandas.PandasBackend`) on
its rows, so factorizing, clamping, fixed-point accumulation, binning and contribution
bounding keep exactly one implementation. Workers return small
:class:`~dpframe.core.compute.ExactAggregates` (numpy arrays); a tree of merges brings them to the
client, where :func:`dpframe.engine.release.run_release` adds noise once, through the same session.
No noise, budget or sensitivity logic ever runs on a worker, and the session never leaves the
client.

Contribution bounding needs each privacy unit's rows in one block. Each partition pre-selects
the rows that can survive bounding and sends them to buckets by a canonical, keyed hash of the
unit (no Dask shuffle); a bucket tells units apart by their exact ids and selects again, which
is bounding over all rows (docs/dask.md). With private keys, pairs are ordered by the key's
rank in the canonical order and priorities keyed on its word, alike in every block. With
private keys or sampling, a bucket then runs the pandas backend on the rows it keeps. Buckets
gather identifying columns without converting a value (:func:`_concat_exact`).

This module imports dask: only ``dpframe.fronts.dask`` imports it (``import dpframe`` never imports
dask).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import math
import numbers
import warnings
from collections.abc import Collection, Sequence
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from ..core.bounding import (
    DrawPriorities,
    Selection,
    pair_priorities,
    ranked_private_keys,
    select_by_priority,
    select_drawing,
)
from ..core.compute import ComputeRequest, ExactAggregates
from ..core.hashing import (
    keyed,
    number_words,
    scale_top_bits,
    time_words,
    value_words,
)
from ..core.parallel import one_thread
from ..core.primitives import compute_exact
from ..core.transform import dropped_rows
from ..core.values import NUMERIC_KINDS, ColumnKind, canonical, canonicalize
from ..errors import DPError, ValidationError
from .arrow.words import column_words
from .base import (
    group_code_dtype,
    observed_key_codes,
    one_time_spelling,
    only_columns,
    partition_order,
    public_key_list,
    remap_codes,
)
from .pandas import (
    PandasBackend,
    column_kind,
    column_labels,
    factorize,
    unit_codes,
)

#: Reserved (the column of the unit hash when rows were shuffled by it, before 2026-11-26).
UNIT_HASH_COLUMN = "__dpframe_unit_hash__"
#: Columns a pre-selected row carries: its unit's exact id, its group code and its row priority.
UNIT_ID_COLUMN = "__dpframe_unit__"
GROUP_COLUMN = "__dpframe_group__"
#: A shipped row's priority, where its partition drew one (nullable UInt64: missing where the
#: row's priority was never read; a partition that read none ships no such column).
ROW_PRIORITY_COLUMN = "__dpframe_row_priority__"
RESERVED = (UNIT_HASH_COLUMN, UNIT_ID_COLUMN, GROUP_COLUMN, ROW_PRIORITY_COLUMN)
#: Prefix of the columns holding the numbers of a column that also tells rows apart (a key, the
#: unit, a distinct count's values) where a block typed it apart from the public schema
#: (:func:`_conformed`): the numbers are read from there, the identities from the column itself.
NUMBERS_PREFIX = "__dpframe_numbers_"
DEFAULT_SPLIT_EVERY = 8
#: Input partitions per bucket of pre-selected rows: fewer buckets, fewer pieces to move
#: (partitions x buckets). A bucket holds the survivors of about this many partitions, most
#: often under half their rows, of the needed columns only (docs/benchmarks/dask.md).
PARTITIONS_PER_BUCKET = 5


# -- canonical, keyed unit hash ------------------------------------------------------------------

def _numeric_words(s: pd.Series) -> npt.NDArray[np.uint64]:
    """Words of a bool or numeric column, read without loss (missing values as 0 or NaN)."""
    dtype = s.dtype
    if pd.api.types.is_float_dtype(dtype):
        return number_words(s.to_numpy(dtype=np.float64, na_value=np.nan))
    if pd.api.types.is_unsigned_integer_dtype(dtype):
        return number_words(s.to_numpy(dtype=np.uint64, na_value=0))
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype):
        return number_words(s.to_numpy(dtype=np.int64, na_value=0))
    return number_words(s.to_numpy(dtype=np.float64, na_value=np.nan))


def unit_words(s: pd.Series) -> npt.NDArray[np.uint64]:
    """The word (:mod:`dpframe.core.hashing`) of each unit value, such that values
    :func:`pandas.factorize` treats as equal get equal words whatever dtype a partition has
    (Dask partitions need not share one).

    Numbers by their value (1, 1.0 and True are one unit, as in factorize); strings by their
    text; dates and times by their nanoseconds, in a typed column as in an object one
    (:func:`_time_word`); any other object in an object column shares one bucket. Missing
    values get a word anyhow (their rows are dropped later).
    """
    if isinstance(s.dtype, pd.CategoricalDtype):  # the categories' words, by code (-1: 0)
        words = unit_words(pd.Series(s.cat.categories, dtype=s.cat.categories.dtype))
        return np.append(words, np.uint64(0))[s.cat.codes.to_numpy()]
    dtype = s.dtype
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        return _numeric_words(s)
    ints = getattr(s.array, "asi8", None)  # datetimes, timedeltas, periods
    if ints is not None:
        return time_words(ints, getattr(s.array, "unit", None))
    if isinstance(dtype, pd.ArrowDtype):
        return column_words(pa.array(s.array))
    if isinstance(dtype, pd.StringDtype) or pd.api.types.infer_dtype(s, skipna=True) == "string":
        try:
            return column_words(pa.array(s, type=pa.large_string(), from_pandas=True))
        except (UnicodeError, pa.ArrowException):  # a lone surrogate: no UTF-8, no Arrow
            pass  # the object path gives every other string the same word (tested)
    return _object_words(s.to_numpy(dtype=object))


#: Date, time and time-span types of Python, numpy and pandas (pandas' are subclasses).
_TEMPORAL = (datetime.date, datetime.time, datetime.timedelta, np.datetime64, np.timedelta64)
_EPOCH_DAY = datetime.date(1970, 1, 1).toordinal()


def _object_words(values: npt.NDArray[np.object_]) -> npt.NDArray[np.uint64]:
    """:func:`unit_words` of an object column's values: :func:`~dpframe.core.hashing.value_words`
    (numbers by value, text by its bytes, other objects 0), dates, times and spans by
    :func:`_time_word`, the word a typed column gives the same value."""
    words = value_words(values, exact=False)
    for i, v in enumerate(values):
        if isinstance(v, _TEMPORAL):
            words[i] = _time_word(v)
    return words


def _time_word(v: object) -> int:
    """The word of a date, time or span in an object column, computed as a typed column's
    (:func:`~dpframe.core.hashing.time_words` of its integer count and unit): a date-time or a
    span in its one spelling (:func:`~dpframe.backends.base.one_time_spelling`: a
    ``Timestamp``, aware ones in UTC as a zoned column stores them, or a ``Timedelta``) by its
    nanoseconds, a date by its days since the epoch (an Arrow ``date32``), a time of day by
    its microseconds since midnight (an Arrow ``time64``). Equal values get one word in every
    dtype; 0 for what has none (missing: its rows are dropped). Never raises."""
    try:
        if isinstance(v, datetime.datetime | datetime.timedelta | np.datetime64 | np.timedelta64):
            one = one_time_spelling(v)
            if not isinstance(one, pd.Timestamp | pd.Timedelta):
                return 0
            stored = one.asm8  # the count in its unit (a Timestamp's in UTC when aware)
            count, unit = int(stored.view(np.int64)), np.datetime_data(stored.dtype)[0]
        elif isinstance(v, datetime.date):
            count, unit = v.toordinal() - _EPOCH_DAY, "D"
        elif isinstance(v, datetime.time):  # in its one spelling: an aware one in UTC
            t = one_time_spelling(v)
            if not isinstance(t, datetime.time):
                return 0
            count = ((t.hour * 60 + t.minute) * 60 + t.second) * 10**6 + t.microsecond
            unit = "us"
        else:
            return 0
        return int(time_words(np.array([count], dtype=np.int64), unit)[0])
    except Exception:  # a value of the data's own making: missing, never an error
        return 0


def unit_hash(s: pd.Series, key: tuple[int, int] = (0, 0)) -> npt.NDArray[np.uint64]:
    """A keyed 64-bit hash of each unit value (:func:`unit_words` keyed by
    :func:`dpframe.core.hashing.keyed`), the same in every process and partition. Unequal units
    may collide: that only puts them in one partition, where they stay distinct units. ``key``
    (fresh randomness per release) makes the partition of a unit unpredictable, so nobody can
    aim many units at one partition."""
    return keyed(unit_words(s), key)


def unit_hash_by_codes(s: pd.Series, codes: npt.NDArray[np.int64], key: tuple[int, int]
                       ) -> npt.NDArray[np.uint64]:
    """:func:`unit_hash` of ``s``, whose values have the unit codes ``codes``
    (:func:`~dpframe.backends.pandas.unit_codes`, all >= 0). Text and object ids, whose words
    cost most, are hashed once per unit, through one row of each: values the value model counts
    as one unit have one word (:func:`unit_words`), so any row of a unit gives its hash."""
    if codes.size == 0 or not (column_kind(s.dtype) == "str" or s.dtype == object):
        return unit_hash(s, key)
    # one row of each unit; a code no row has (its rows were dropped) reads row 0, unused
    row_of = np.zeros(int(codes.max()) + 1, dtype=np.intp)
    row_of[codes] = np.arange(codes.size)
    return unit_hash(s.iloc[row_of], key)[codes]


#: The integers some typed int partition holds (int64 and uint64): a column of the int kind
#: reads these, exactly up to float64's rounding (bounds lie well inside 2**53, so they clamp
#: alike), and no other number.
_INT_LOW, _INT_END = -(2**63), 2**64


def _numbers_only(s: pd.Series, kind: ColumnKind) -> pd.Series:
    """A column the public schema (the frame's meta) says holds ``kind`` numbers that one partition
    typed otherwise (an object column, because of one person's text): its values of that kind as
    float64, every other value missing (a value that does not conform counts as missing, never as
    another number: docs/privacy.md#behaviour-that-does-not-depend-on-the-data). Read as it was,
    such a column would not be numeric at all, and every other value of the partition would vanish
    with it. One Python step per value: only non-conforming partitions take it.

    A value reads as the number a typed partition of the kind reads it as: an integer of the
    int kind by the float nearest it, however large, if an int64 or uint64 partition could hold
    it; dates, times and spans (``np.timedelta64`` is a numpy integer too) are no numbers,
    and a value whose conversion raises is missing: never an error, which would come after
    the charge."""
    if column_kind(s.dtype) in NUMERIC_KINDS:  # numbers of another kind: vectorized
        x = s.to_numpy(dtype=np.float64, na_value=np.nan)
        ok = ((x == 0) | (x == 1) if kind == "bool" else
              np.isfinite(x) & (x == np.floor(x)) & (x >= _INT_LOW) & (x < _INT_END)
              if kind == "int" else ~np.isnan(x))
        return pd.Series(np.where(ok, x, np.nan), index=s.index, name=s.name)
    out = np.full(len(s), np.nan)
    for i, v in enumerate(s.to_numpy(dtype=object)):
        with contextlib.suppress(Exception):  # a value that will not convert is missing
            out[i] = _number_of_kind(v, kind)
    return pd.Series(out, index=s.index, name=s.name)


def _number_of_kind(v: object, kind: ColumnKind) -> float:
    """One value of an object column as a number of ``kind`` (:func:`_numbers_only`); NaN when
    it is none."""
    if isinstance(v, _TEMPORAL):  # before the integers: np.timedelta64 is one
        return math.nan
    if isinstance(v, bool | np.bool_):
        return float(v)  # True is 1 in every numeric kind, as in the value model
    if kind == "bool":  # 0 and 1 of any number type, as a typed partition reads them
        return float(v) if isinstance(v, numbers.Real) and v in (0, 1) else math.nan
    if isinstance(v, numbers.Integral):  # Python's and numpy's integers, exactly
        i = int(v)
        return float(i) if _INT_LOW <= i < _INT_END else math.nan
    if isinstance(v, float | np.floating):
        f = float(v)
        if kind == "float" or (f.is_integer() and _INT_LOW <= f < _INT_END):
            return f
    return math.nan


def _conformed(part: pd.DataFrame, numeric: dict[Any, ColumnKind],
               identities: Collection[str] = ()) -> tuple[pd.DataFrame, dict[str, str]]:
    """``part`` with each measured column the public schema says is numeric (``numeric``:
    label -> kind) read by value (:func:`_numbers_only`) where this block typed it
    otherwise: not numeric at all, or a float column where the schema says int or bool (a
    fraction there is missing, as in scans, not rounded to another number). An int column
    where the schema says float needs nothing: its numbers are read as they are. The same
    frame when every such column conforms (the usual case).

    A measured column that also tells rows apart (``identities``, by name: a key, the unit, a
    distinct count's values) keeps its values, which the value model reads exactly; its
    numbers go to a column of their own (:data:`NUMBERS_PREFIX`; a copy when they conform),
    named in the map returned (query name -> column), which :class:`_BlockBackend` reads them
    from. Replacing it would change the keys or units one person's odd value sees (a text key
    in a float column, ids merged in a float column). Every block gets that column, so blocks
    concatenate (:func:`_concat_exact`): numbers by pandas' common dtype, identities exactly."""

    def conforms(have: ColumnKind, want: ColumnKind) -> bool:
        return have == want or (have in NUMERIC_KINDS and want == "float")

    apart = {str(c): f"{NUMBERS_PREFIX}{i}__" for i, c in enumerate(numeric)
             if str(c) in identities}
    odd = {c: k for c, k in numeric.items() if not conforms(column_kind(part[c].dtype), k)}
    if not odd and not apart:
        return part, {}
    out = part.copy(deep=False)
    for c, k in numeric.items():
        numbers = _numbers_only(part[c], k) if c in odd else part[c]
        if str(c) in apart:
            out[apart[str(c)]] = numbers
        elif c in odd:
            out[c] = numbers
    return out, apart


class _BlockBackend(PandasBackend):
    """The pandas backend on a partition's or a bucket's rows, reading the numbers of the
    columns ``apart`` names from the columns it maps them to (:func:`_conformed`), and
    everything else (keys, units, value hashes) from the columns themselves. Private keys are
    labelled by the public kind of their column (``key_kinds``: the frame's meta), never by
    the block's own dtype (:func:`_schema_labels`)."""

    def __init__(self, df: pd.DataFrame, apart: dict[str, str],
                 key_kinds: dict[str, ColumnKind] | None = None) -> None:
        super().__init__(df)
        self._apart = apart
        self._key_kinds = key_kinds or {}

    def numbers(self, name: str) -> tuple[np.ndarray, npt.NDArray[np.bool_] | None]:
        return super().numbers(self._apart.get(name, name))

    def words(self, name: str) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
        """The value hashes of a distinct count's column, where the public schema says it is
        numeric (its numbers read apart): only of the values that are numbers of its kind, the
        rows :meth:`numbers` reads (a value that does not conform to the schema is missing, for
        every aggregate: docs/privacy.md#behaviour-that-does-not-depend-on-the-data).
        Text typing one partition object under a float64 meta
        was one more distinct value there, while ``count`` of the column, sums and the keys
        read it as missing (finding 55). Values keep their identity: only which rows count
        follows the numbers (ints past 2**53 stay apart, finding 45)."""
        hashes, present = super().words(name)
        if name not in self._apart:  # not numeric in the schema: every value it holds counts
            return hashes, present
        x, valid = self.numbers(name)
        conform = ~np.isnan(x) if valid is None else valid
        if bool(conform.all()):
            return hashes, present
        present = present & conform
        return np.where(present, hashes, np.uint64(0)), present

    def group_codes(self, request: ComputeRequest, dtype: npt.DTypeLike = np.int64
                    ) -> tuple[npt.NDArray[np.signedinteger[Any]], list[tuple[object, ...]]]:
        if not (request.by and request.private_keys and self._key_kinds):
            return super().group_codes(request, dtype)
        found = [self._schema_factorize(c) for c in request.by]
        return observed_key_codes([c for c, _ in found], [u for _, u in found])

    def _schema_factorize(self, name: str) -> tuple[npt.NDArray[np.int64], list[object]]:
        """Codes and labels of a private key column, labelled by its public kind."""
        s = self.column(name)
        codes, labels = factorize(s)
        kind, have = self._key_kinds.get(name), column_kind(s.dtype)
        if kind is None or have == kind or (kind not in NUMERIC_KINDS
                                            and have not in NUMERIC_KINDS):
            return codes, labels  # already the labels of that kind (text, objects alike)
        remap, relabelled = _schema_labels(labels, kind)
        return remap_codes(codes, remap), relabelled


def _schema_label(label: object, kind: ColumnKind) -> object:
    """The label of a key value (a canonical label of its block's dtype) in a column of the
    public kind ``kind``, a function of the value and the schema alone: numbers as in an
    object column (:func:`~dpframe.core.values.canonical`: ``True`` is ``1``, ``1.0`` is ``1``),
    floats where the schema says float, ``True`` / ``False`` for 1 and 0 where it says bool;
    any other value (text in a numeric column) as it is."""
    c = canonical(label, "other")
    if c is None:
        return label
    if isinstance(c, numbers.Number):
        if kind == "float":
            with contextlib.suppress(ArithmeticError, TypeError, ValueError):
                return float(c) + 0.0  # type: ignore[arg-type]
        elif kind == "bool" and isinstance(c, int) and c in (0, 1):
            return bool(c)
    return c


def _schema_labels(labels: Sequence[object], kind: ColumnKind
                   ) -> tuple[npt.NDArray[np.int64], list[object]]:
    """Each label's position among the labels of the public kind ``kind``
    (:func:`_schema_label`; values one label there merge) and those labels."""
    return canonicalize(labels, kind, lambda label: _schema_label(label, kind))


def _identities(request: ComputeRequest) -> set[str]:
    """The columns whose values tell rows apart in a block: the keys, the unit and the values
    a distinct count counts (by their value model, exactly: never replaced by their numbers,
    which would make ints past 2**53 missing or one value in a partition one person typed
    otherwise)."""
    return {*request.by, *([request.privacy_unit] if request.privacy_unit else []),
            *(r.column for r in request.requests if r.kind == "distinct" and r.column)}


# -- per-partition work (runs on workers) ----------------------------------------------------------

def _partition_exact(part: pd.DataFrame, request: ComputeRequest,
                     seeds: npt.NDArray[np.int64] | None, numeric: dict[Any, ColumnKind],
                     key_kinds: dict[str, ColumnKind] | None = None,
                     partition_info: dict[str, Any] | None = None) -> pd.Series:
    """The pandas backend on one partition, with its own contribution-bounding generator
    (``seeds[partition number]``; None when the request draws nothing at random); the
    partial aggregates travel in a one-cell Series."""
    number = 0 if partition_info is None else int(partition_info["number"])
    gen = None if seeds is None else np.random.default_rng(int(seeds[number]))
    with one_thread():  # one task per worker thread already
        conformed, apart = _conformed(part, numeric, _identities(request))
        agg = _BlockBackend(conformed, apart, key_kinds).exact(request, gen)
    out = pd.Series([None], dtype=object)
    out.iloc[0] = agg
    return out


def _preselect_buckets(part: pd.DataFrame, request: ComputeRequest, key: tuple[int, int],
                       salt: int, seed: int, buckets: int,
                       numeric: dict[Any, ColumnKind] | None = None,
                       key_kinds: dict[str, ColumnKind] | None = None) -> list[pd.DataFrame]:
    """The rows of one input partition that can survive contribution bounding,
    split into ``buckets`` by the keyed hash of their unit (a unit's rows from every partition
    meet in one bucket: the exchange moves only pre-selected rows): per unit, its
    ``max_groups`` pairs of smallest keyed priority here and in each its ``max_rows`` rows of
    smallest fresh random priority (and its ``max_total`` of those when there is no group
    step: :attr:`~dpframe.core.compute.ComputeRequest.preselect_total`), with the unit's
    exact id and the group code
    (:func:`~dpframe.core.bounding.select_by_priority`: selecting again over every
    partition's pre-selection is bounding over all rows). Row priorities are drawn only for
    the rows of pairs holding more than ``max_rows`` rows here, the only ones read; the kept
    rows among them carry theirs (:data:`ROW_PRIORITY_COLUMN`, shipped only when some kept row
    has one), and the bucket draws the others' when it reads them (deferred decisions: the
    law of drawing every priority up front, see select_by_priority)."""
    with one_thread():  # one task per worker thread already
        # columns that tell rows apart travel as they are: the bucket reads their numbers
        identities = _identities(request)
        part, _ = _conformed(part, {c: k for c, k in (numeric or {}).items()
                                    if str(c) not in identities})
        backend = _BlockBackend(part, {}, key_kinds)
        # group codes in the narrow type they travel in (bounding reads any signed type);
        # private keys as ranks in the canonical order, with their words (alike everywhere)
        codes, key_words = _ordered_codes(backend, request)
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
        chosen = select_drawing(units, g, pair, _drawing(seed), request.max_groups,
                                request.max_rows, request.preselect_total)
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
                                 *(request.by if _general(request) else ())])
        columns: dict[Any, Any] = {labels[c]: _taken(backend.column(c), rows) for c in shipped}
        # they travel on with the unit's exact id: buckets tell units apart by their ids,
        # never by hash (two units whose hashes collide stay two units; docs/dask.md); the
        # pair priority is not shipped: the bucket recomputes it
        columns[UNIT_ID_COLUMN] = _taken(unit, rows)
        if not _general(request):
            columns[GROUP_COLUMN] = g[keep].astype(group_code_dtype(request), copy=False)
        if carried is not None:  # some kept row's priority was read here: it travels on
            columns[ROW_PRIORITY_COLUMN] = carried[order]
        out = pd.DataFrame(columns, copy=False)  # one frame built at once, no column inserts
    return [out.iloc[bounds[j]:bounds[j + 1]] for j in range(buckets)]


def _general(request: ComputeRequest) -> bool:
    """Whether a bucket runs the whole pandas backend on the rows it keeps (private keys,
    sampling), rather than only the aggregates of public keys' group codes."""
    return request.private_keys or request.sample_rate is not None


def _ordered_codes(backend: PandasBackend, request: ComputeRequest
                   ) -> tuple[npt.NDArray[np.signedinteger[Any]], npt.NDArray[np.int64] | None]:
    """Each row's group code, ordered alike in every partition and bucket, and the words of
    private keys (None: public keys, or none, whose codes index the declared keys): private
    keys as ranks in the canonical order of the block's keys
    (:func:`~dpframe.core.bounding.ranked_private_keys`)."""
    if not (request.by and request.private_keys):
        return backend.group_codes(request, group_code_dtype(request))[0], None
    codes, keys = backend.group_codes(request)
    return ranked_private_keys(codes.astype(np.int64, copy=False), keys)


def _drawing(seed: int) -> DrawPriorities:
    """Uniform 64-bit priorities from a generator seeded with ``seed``, for the rows asked."""
    gen = np.random.default_rng(seed)
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


def _bucket_exact(frames: list[pd.DataFrame], request: ComputeRequest,
                  keys: list[tuple[object, ...]], key: tuple[int, int], salt: int, seed: int,
                  numeric: dict[Any, ColumnKind] | None = None,
                  key_kinds: dict[str, ColumnKind] | None = None) -> ExactAggregates:
    """One bucket: every partition's pre-selected rows of its units. The final selection by
    the carried priorities (rows that carry none get theirs drawn from a generator seeded with
    ``seed`` when read), then the exact aggregates of the selected rows (bounded already: no
    unit step left). Columns that tell rows apart (the unit's id, keys, a distinct count's
    values) are gathered exactly (:func:`_concat_exact`); where that leaves one the public
    schema says is numeric typed otherwise, its numbers are read apart (:func:`_conformed`)."""
    if any(ROW_PRIORITY_COLUMN in f.columns for f in frames):
        # every frame with the column, missing where none was drawn: the concatenation keeps
        # it UInt64 (exact), never filled with NaN in a float column
        frames = [f if ROW_PRIORITY_COLUMN in f.columns else
                  f.assign(**{ROW_PRIORITY_COLUMN: pd.arrays.IntegerArray(
                      np.zeros(len(f), dtype=np.uint64), np.ones(len(f), dtype=bool))})
                  for f in frames]
    # the unit, the keys (shipped as they are with private keys or sampling) and the values
    # whose hashes a distinct count reads, also where they are measured as numbers
    named = _identities(request)
    identities = [UNIT_ID_COLUMN, *(c for c in column_labels(frames[0].columns).values()
                                    if str(c) in named)]
    # each partition's numbers of a measured identity read by its own dtype, before the
    # concatenation converts that (other columns were conformed in their partitions)
    measured = {c: k for c, k in (numeric or {}).items() if str(c) in named}
    apart: dict[str, str] = {}
    if measured:
        conformed = [_conformed(f, measured, named) for f in frames]
        frames, apart = [f for f, _ in conformed], conformed[0][1]
    numbers = [*(c for c in (numeric or {}) if str(c) not in named), *apart.values()]
    with one_thread():  # one task per worker thread already
        part = _concat_exact(frames, identities, numbers)
        return _select_and_aggregate(part, apart, request, keys, key, salt, seed, key_kinds)


def _concat_exact(frames: list[pd.DataFrame], identities: Sequence[Any],
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


def _select_and_aggregate(part: pd.DataFrame, apart: dict[str, str], request: ComputeRequest,
                          keys: list[tuple[object, ...]], key: tuple[int, int], salt: int,
                          seed: int, key_kinds: dict[str, ColumnKind] | None = None
                          ) -> ExactAggregates:
    """The body of :func:`_bucket_exact` on the bucket's rows (numbers of the columns
    ``apart`` names read apart, :class:`_BlockBackend`): units are told apart by their
    exact ids under the canonical value model (:func:`~dpframe.backends.pandas.unit_codes`),
    as in pandas and scans. With public keys and no sampling, the aggregates of the kept rows
    by their group codes; else the pandas backend on the kept rows (whole bounded units:
    its own bounding keeps them all; it samples units and observes private keys)."""
    dense = unit_codes(part[UNIT_ID_COLUMN])
    carried = (part[ROW_PRIORITY_COLUMN].array if ROW_PRIORITY_COLUMN in part.columns
               else None)
    if _general(request):
        codes, key_words = _ordered_codes(_BlockBackend(part, apart, key_kinds), request)
    else:  # narrow, as it travelled: bounding reads any signed type
        codes, key_words = part[GROUP_COLUMN].to_numpy(), None
    valid = (dense >= 0) & (codes >= 0)
    if not bool(valid.all()):  # the value model is per value: an id kept in its partition
        rows = np.flatnonzero(valid)  # stays an id here (a guard); a key too
        part, dense, codes = part.iloc[rows], dense[rows], codes[rows]
        carried = None if carried is None else carried[rows]
    h = unit_hash_by_codes(part[UNIT_ID_COLUMN], dense, key)
    pair = pair_priorities(h.view(np.int64), codes, key_words, salt)
    keep = select_by_priority(dense, codes, pair, _drawing_for(carried, seed),
                              request.max_groups, request.max_rows, request.max_total)
    # the columns the aggregation reads, of the kept rows only (the carried priorities and
    # group codes are done; so are the ids, unless the pandas backend reads them next)
    done = [GROUP_COLUMN, ROW_PRIORITY_COLUMN, *(() if _general(request) else (UNIT_ID_COLUMN,))]
    kept = part.drop(columns=done, errors="ignore").iloc[np.flatnonzero(keep)]
    if _general(request):
        by_id = dataclasses.replace(request, privacy_unit=UNIT_ID_COLUMN)
        return _BlockBackend(kept, apart, key_kinds).exact(by_id,
                                                           np.random.default_rng([seed, 1]))
    rows_backend = _BlockBackend(kept, apart)
    bounded = dataclasses.replace(request, privacy_unit=None)
    out = compute_exact(bounded, codes[keep], keys, None, rows_backend,
                        np.random.default_rng(0))
    if out.diagnostics is not None and request.diagnostics_cap is not None:  # (counting only)
        out.diagnostics = (out.diagnostics[0],
                           dropped_rows(dense, codes, keep, request.diagnostics_cap))
    return out


def _drawing_for(carried: Any, seed: int) -> DrawPriorities:
    """The priorities of the rows asked: the one a row carries (drawn and read in its
    partition: it must not be drawn again), else a fresh draw (read here for the first
    time). ``carried``: the bucket's UInt64 priorities, or None when no row carries one."""
    draw = _drawing(seed)
    if carried is None:
        return draw

    def read(rows: npt.NDArray[np.intp]) -> npt.NDArray[np.uint64]:
        mine = carried[rows]
        out: npt.NDArray[np.uint64] = mine.to_numpy(dtype=np.uint64, na_value=0)
        fresh = np.asarray(mine.isna())
        out[fresh] = draw(np.flatnonzero(fresh))
        return out
    return read


def _unwrap(cell: pd.Series) -> ExactAggregates:
    agg = cell.iloc[0]
    assert isinstance(agg, ExactAggregates)
    return agg


def merge_partials(*parts: ExactAggregates | pd.Series) -> ExactAggregates:
    """Sum of partial aggregates over blocks holding disjoint privacy units (exact: the core
    merge widens sums near the int64 limit to Python integers)."""
    aggs = [_unwrap(p) if isinstance(p, pd.Series) else p for p in parts]
    out = aggs[0]
    for p in aggs[1:]:
        out = out.merge(p)
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
        (:func:`_conformed`; keys and units keep their values as they are)."""
        kinds = self.schema(request.measure_columns)
        return {self._labels[c]: k for c, k in kinds.items() if k in NUMERIC_KINDS}

    def _key_kinds(self, request: ComputeRequest) -> dict[str, ColumnKind]:
        """The public kinds of private key columns, by query name: every block labels their
        values by these (:class:`_BlockBackend`), so a released key's label never depends
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
        partials = frame.map_partitions(_partition_exact, request, seeds, self._numeric(request),
                                        self._key_kinds(request), meta=pd.Series([], dtype=object),
                                        enforce_metadata=False, align_dataframes=False)
        agg: ExactAggregates
        agg, = dask.compute(_tree(partials.to_delayed(), merge_partials, self.split_every))
        return agg  # the core sorts the released private keys (never data or partition order)

    def _preselected_exact(self, request: ComputeRequest, gen: np.random.Generator,
                           key: tuple[int, int]) -> ExactAggregates:
        """Unit-level bounding without shuffling every row: each partition keeps only the rows
        that can survive bounding (:func:`_preselect_buckets`) and splits them by unit hash
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
        split = [dask.delayed(_preselect_buckets, pure=True, nout=nb)(
                     part, request, key, salt, int(seed), nb, numeric, key_kinds)
                 for part, seed in zip(frame.to_delayed(), seeds, strict=True)]
        finals = [dask.delayed(_bucket_exact, pure=True)([s[j] for s in split], request, keys,
                                                          key, salt, int(bucket_seeds[j]),
                                                          numeric, key_kinds)
                  for j in range(nb)]
        agg: ExactAggregates
        agg, = dask.compute(_tree(finals, merge_partials, self.split_every))
        return agg
