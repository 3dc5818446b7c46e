"""Conforming Arrow data to the public schema, never raising on a value.

Files of one dataset may disagree with its schema (text in a numeric column of one file, a
column another file lacks, a fraction in an integer column). A value that does not conform is
missing, never silently another number and never an error that could quote it (PRIVACY.md).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .columns import Column, decoded, flat, is_number, value_type

_NUMBER_TEXT = (r"^\s*[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)\s*$")
_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError)


def _null(n: int, t: pa.DataType) -> pa.Array:
    return pa.nulls(n, type=t)


def conform_array(arr: Column, t: pa.DataType) -> pa.Array:
    """``arr`` in the type ``t`` of the public schema, never raising on values: a value that
    does not conform (text in a numeric column, a fraction in an integer column, a number out
    of the type's range) is missing, never silently another number (PRIVACY.md)."""
    a = flat(arr)
    want = value_type(t)
    if value_type(a.type) == want or pa.types.is_null(want):
        return a
    a = decoded(a)
    if pa.types.is_null(a.type):
        return _null(len(a), want)
    if is_number(want):
        return _to_number(a, want)
    try:
        return pc.cast(a, want)  # numbers to text, timestamps between units: exact
    except (*_CAST_ERRORS, pa.ArrowTypeError):
        return _null(len(a), want)


def _is_plain_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _to_number(a: pa.Array, want: pa.DataType) -> pa.Array:
    """``a`` (text or numbers) as the number type ``want``; what does not conform is missing."""
    if _is_plain_text(a.type):
        if pa.types.is_boolean(want):
            return _text_to_bool(a)
        a = _text_to_float(a)
    elif not is_number(a.type):
        return _null(len(a), want)
    try:
        return pc.cast(a, want)  # safe: raises instead of truncating or wrapping
    except _CAST_ERRORS:
        return _float_to(a, want)


def _text_to_bool(a: pa.Array) -> pa.Array:
    """``true``/``1`` and ``false``/``0`` (any case, spaces around) as booleans, else missing."""
    word = pc.utf8_trim_whitespace(pc.utf8_lower(a))
    true = pc.is_in(word, value_set=pa.array(["true", "1"]))
    false = pc.is_in(word, value_set=pa.array(["false", "0"]))
    return pc.if_else(true, True, pc.if_else(false, pa.scalar(False),
                                             pa.scalar(None, pa.bool_())))


def _text_to_float(a: pa.Array) -> pa.Array:
    """Text as float64; text that does not spell a number is missing."""
    try:
        return pc.cast(a, pa.float64())
    except _CAST_ERRORS:
        text = pc.utf8_lower(a)
        ok = pc.fill_null(pc.match_substring_regex(text, _NUMBER_TEXT), False)
        return pc.cast(pc.if_else(ok, pc.utf8_trim_whitespace(text), pa.scalar(None, a.type)),
                       pa.float64())


def _float_to(a: pa.Array, want: pa.DataType) -> pa.Array:
    """Numbers that a safe cast refused, as ``want``: floats as they are; for integers and
    booleans, the values that are not integers in range (or 0 / 1) are missing."""
    x = np.asarray(pc.cast(a, pa.float64(), safe=False).to_numpy(zero_copy_only=False),
                   dtype=np.float64)
    if pa.types.is_floating(want):
        return pa.array(x, type=want, from_pandas=True)
    ok = np.isfinite(x) & (x == np.floor(x))
    if pa.types.is_integer(want):
        info = np.iinfo(want.to_pandas_dtype())
        ok &= (x >= info.min) & (x <= info.max)
    else:
        ok &= (x == 0) | (x == 1)
    return pa.array(np.where(ok, x, 0), mask=~ok).cast(want)


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly the columns of ``schema``, each conformed by
    :func:`conform_array`; a column the batch lacks is all missing."""
    if batch.schema.names == schema.names and all(
            value_type(batch.schema.field(i).type) == value_type(f.type)
            for i, f in enumerate(schema)):
        return batch
    n = batch.num_rows
    names = batch.schema.names
    arrays = [conform_array(batch.column(names.index(f.name)), f.type) if f.name in names
              else _null(n, value_type(f.type))
              for f in schema]
    return pa.RecordBatch.from_arrays(arrays, names=schema.names)
