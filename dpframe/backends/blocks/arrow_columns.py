"""Arrow columns as the core sees them: public kinds, numbers, codes of keys and units.

Every function here reads values without raising on them: nested values (lists, structs,
maps) count as missing, and equality is the canonical value model's
(:mod:`dpframe.core.exact.values`), so ``0.0`` and ``-0.0`` are one key or unit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...core.exact.values import NUMERIC_KINDS, ColumnKind, canonicalize
from ..base import (
    OUT_OF_PYTHON_RANGE,
    declared_positions,
    offset_codes,
    one_time_spellings,
    python_objects,
)

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
Column: TypeAlias = pa.Array | pa.ChunkedArray


def arrow_kind(t: pa.DataType) -> ColumnKind:
    """Public kind of an Arrow type (dictionary columns take their values' kind)."""
    if pa.types.is_dictionary(t):
        return arrow_kind(t.value_type)
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if is_text(t):
        return "str"
    return "other"


def is_text(t: pa.DataType) -> bool:
    """Whether ``t`` is one of Arrow's string types."""
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_string_view(t))


def is_bytes(t: pa.DataType) -> bool:
    """Whether ``t`` is one of Arrow's binary types (a view aside: public types have none)."""
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t))


def is_number(t: pa.DataType) -> bool:
    """Whether ``t`` is an integer, floating-point or boolean type."""
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t))


def value_type(t: pa.DataType) -> pa.DataType:
    """The type of a column's values: a dictionary's value type, else ``t``."""
    return t.value_type if pa.types.is_dictionary(t) else t


def _nested(t: pa.DataType) -> bool:
    return bool(pa.types.is_nested(value_type(t)))


def flat(arr: Column) -> pa.Array:
    """One array; a nested one (lists, structs, maps) as all null: such values conform to no
    key or unit kind, so they count as missing, like lists in a pandas object column. A
    run-end encoded array is its values (Arrow counts it as nested)."""
    if pa.types.is_run_end_encoded(arr.type):
        arr = pc.run_end_decode(arr)
    if _nested(arr.type):
        return pa.nulls(len(arr))
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            return arr.chunk(0)
        if arr.num_chunks == 0:
            return pa.array([], type=arr.type)
        if pa.types.is_dictionary(arr.type):
            arr = arr.unify_dictionaries()
        return arr.combine_chunks()
    return arr


def decoded(arr: pa.Array) -> pa.Array:
    """A dictionary array's values; any other array as it is."""
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def numeric_array(col: Column) -> tuple[np.ndarray, Bools | None]:
    """A column as numpy and its non-missing mask, like the pandas backend's ``numeric_column``:
    int64 for integer/bool columns without missing values, float64 with NaN otherwise (mask
    None: the missing values are exactly the NaNs, found only where needed, on the rows
    bounding kept); columns that are not numeric give zeros and the non-null mask (enough for
    ``count(column)``)."""
    arr = decoded(flat(col))
    kind = arrow_kind(arr.type)
    n = len(arr)
    if kind not in NUMERIC_KINDS:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        return np.zeros(n), np.asarray(valid, dtype=bool)
    if kind in ("int", "bool") and arr.null_count == 0 and arr.type != pa.uint64():
        return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False), np.ones(n, bool)
    if arr.type != pa.float64():
        arr = pc.cast(arr, pa.float64(), safe=False)  # exact below 2**53; larger are clamped
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64), None


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def python_values(arr: pa.Array) -> list[object]:
    """The values of ``arr`` as Python objects, a value Python cannot hold as None (missing):
    a date past the year 9999, a timestamp its time zone cannot convert (:func:`python_objects`).
    Date-times and spans in their one spelling (:func:`~dpframe.backends.base.one_time_spelling`:
    ``pd.Timestamp``, aware ones in UTC, and ``pd.Timedelta``), as the pandas backend labels
    them: Arrow makes an aware ``datetime`` whose equality ignores ``fold``."""
    values = python_objects(len(arr), arr.to_pylist, lambda i: arr[i].as_py(),
                            (*OUT_OF_PYTHON_RANGE, pa.ArrowException))
    return one_time_spellings(values) if pa.types.is_temporal(arr.type) else values


def dictionary_codes(col: Column, labels: bool = True
                     ) -> tuple[npt.NDArray[np.integer[Any]], list[object]]:
    """Dictionary indices (-1 for null) and the dictionary's values, without re-hashing when
    the column is already dictionary-encoded (Parquet string columns read as dictionaries).
    Entries may be unused or missing values (None, NaN): callers map or drop them. Without
    ``labels`` (privacy units: only equality matters) the values are not listed."""
    arr = flat(col)
    d = arr if pa.types.is_dictionary(arr.type) else pc.dictionary_encode(arr)
    idx = d.indices
    if not pa.types.is_signed_integer(idx.type):  # Polars' indices are unsigned: room for -1
        idx = idx.cast(pa.int64())
    if idx.null_count:
        idx = pc.fill_null(idx, -1)
    codes = np.asarray(idx.to_numpy(zero_copy_only=False))
    return codes, python_values(d.dictionary) if labels else []


def factorize(col: Column) -> tuple[I64, list[object]]:
    """Codes (-1 for missing) and canonical labels of the distinct values, via Arrow
    dictionaries and the core's canonical value model (:mod:`dpframe.core.exact.values`).

    Repeated dictionary entries (``["a", "a", "b"]``), ``0.0`` and ``-0.0``, unused entries and
    missing values (null, NaN) are handled once, on the dictionary: equal entries share one code
    (their rows add up, never overwrite), unused and missing ones get none.
    """
    raw, uniques = dictionary_codes(col)
    codes = raw.astype(np.int64)
    n_u = len(uniques)
    if n_u == 0:
        return np.full(codes.size, -1, dtype=np.int64), []
    kind = arrow_kind(flat(col).type)
    remap, labels = canonicalize(uniques, kind)
    present = np.bincount(codes[codes >= 0], minlength=n_u) > 0
    remap = np.where(present, remap, -1)
    used = np.unique(remap[remap >= 0])
    if used.size < len(labels):  # drop classes no row holds
        dense = np.full(len(labels), -1, dtype=np.int64)
        dense[used] = np.arange(used.size)
        remap = np.where(remap >= 0, dense[np.maximum(remap, 0)], -1)
        labels = [labels[i] for i in used]
    return np.append(remap, -1)[codes], labels


def unit_codes(col: Column) -> I64:
    """An integer per distinct privacy unit (-1 for a missing one), without listing the units:
    only equality matters, so no Python object is made per unit. Equality is the canonical
    value model's: ``0.0`` and ``-0.0`` are one unit, as the unit hash says too."""
    arr = decoded(flat(col))
    if pa.types.is_integer(arr.type) and arr.null_count == 0:
        ids = arr.to_numpy(zero_copy_only=False)
        offsets = offset_codes(ids)  # ids in a narrow range: no hashing at all
        if offsets is not None:
            return offsets
        codes, _ = pd.factorize(ids, sort=False)  # pandas hashes ints faster than Arrow
        return np.asarray(codes, dtype=np.int64)
    if pa.types.is_floating(arr.type):
        arr = pc.add(arr, pa.scalar(0.0, arr.type))  # -0.0 + 0.0 is 0.0
        arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
    raw, _ = dictionary_codes(pc.dictionary_encode(arr), labels=False)
    return raw.astype(np.int64)


def public_codes(col: Column, declared: Sequence[object],
                 dtype: npt.DTypeLike = np.int64) -> npt.NDArray[np.signedinteger[Any]]:
    """Position of each row's value in the declared keys; -1 when missing or undeclared; in
    ``dtype``, a signed type holding every position (a narrow one is written directly, not
    cast from int64).

    A plain (not dictionary-encoded) string column is looked up in the declared set directly
    (``index_in``: one hash probe per row, no dictionary built); string equality is the
    canonical value model's for text. Other columns go through their dictionary."""
    arr = flat(col)
    if ((pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type))
            and all(isinstance(k, str) for k in declared) and len(set(declared)) == len(declared)):
        idx = pc.index_in(arr, value_set=pa.array(list(declared), type=arr.type))
        return np.asarray(pc.fill_null(idx, -1).to_numpy(zero_copy_only=False), dtype=dtype)
    raw, uniques = dictionary_codes(arr)
    lut = np.append(declared_positions(uniques, declared), -1)  # lut[-1]: null rows
    for i, u in enumerate(uniques):
        if _missing(u):
            lut[i] = -1
    return lut.astype(dtype)[raw]
