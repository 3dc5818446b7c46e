"""Conforming Arrow data to the public schema, never raising on a value.

Files of one dataset may disagree with its schema (text in a numeric column of one file, a
column another file lacks, a fraction in an integer column). A value that does not conform is
missing, never silently another number and never an error that could quote it (PRIVACY.md).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .columns import Column, decoded, flat, is_bytes, is_number, is_text, value_type

_NUMBER_TEXT = (r"^\s*[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)\s*$")
_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError)


def _null(n: int, t: pa.DataType) -> pa.Array:
    return pa.nulls(n, type=t)


def public_type(t: pa.DataType) -> pa.DataType:
    """The type the backend reads a column of type ``t`` as: the same values in the type every
    reader handles (Arrow kernels lack some for the others: a take of a view, a hash of a
    32- or 64-bit decimal, a sum of half floats). Run-end encoded columns are their values;
    string and binary views are large strings and binaries; 32- and 64-bit decimals are
    128-bit; half floats are single. Each conversion is exact. A dictionary keeps its
    indices, its values converted alike."""
    if pa.types.is_run_end_encoded(t):
        return public_type(t.value_type)
    if pa.types.is_dictionary(t):
        values = public_type(t.value_type)
        return t if values == t.value_type else pa.dictionary(t.index_type, values, t.ordered)
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    if pa.types.is_decimal32(t) or pa.types.is_decimal64(t):
        return pa.decimal128(t.precision, t.scale)
    if pa.types.is_float16(t):
        return pa.float32()
    return t


def public_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each field in its :func:`public_type`."""
    if all(public_type(f.type) == f.type for f in schema):
        return schema
    return pa.schema([f.with_type(public_type(f.type)) for f in schema])


def conform_array(arr: Column, t: pa.DataType) -> pa.Array:
    """``arr`` in the type ``t`` of the public schema, never raising on values: a value that
    does not conform (text in a numeric column, a fraction in an integer column, a number out
    of the type's range) is missing, never silently another number (PRIVACY.md)."""
    a = flat(arr)
    want = value_type(t)
    if value_type(a.type) == want or pa.types.is_null(want):
        return a
    a = decoded(a)
    if is_bytes(a.type) and not is_bytes(want):  # text read as bytes (CSV): bytes that are
        # not UTF-8 are missing, value by value
        a = _cast_each(a, want if is_text(want) else pa.large_string())
        if a.type == want:
            return a
    if pa.types.is_null(a.type):
        return _null(len(a), want)
    if is_number(want):
        return _to_number(a, want)
    if _is_plain_text(a.type) and pa.types.is_temporal(want):
        return _text_to_time(a, want)
    return _cast_each(a, want)


#: Text Arrow's ISO 8601 parser may read as a date or timestamp: a date, then optionally a time
#: (hours, minutes, seconds, a fraction) and a zone. Text that does not match cannot convert.
_ISO_TEXT = (r"^\s*[+-]?\d{4,}-\d{2}-\d{2}([T ]\d{2}(:?\d{2}(:?\d{2}([.,]\d+)?)?)?)?"
             r"(Z|[+-]\d{2}(:?\d{2})?)?\s*$")


def _text_to_time(a: pa.Array, want: pa.DataType) -> pa.Array:
    """Text as a date or timestamp; blank text, spellings of a missing value and text that is
    no ISO 8601 date are missing at once (a file in another date format costs one pass, not a
    cast per value), and :func:`_cast_each` settles the rest (a 13th month)."""
    try:
        return pc.cast(a, want)
    except (*_CAST_ERRORS, pa.ArrowTypeError):
        pass
    a = _missing_spellings_to_null(a)
    iso = pc.fill_null(pc.match_substring_regex(a, _ISO_TEXT), False)
    return _cast_each(pc.if_else(iso, a, pa.scalar(None, a.type)), want)


#: How CSV files spell a missing value (Arrow's CSV defaults), blank text aside: text read for a
#: date or timestamp column that spells one is missing before the cast, which would refuse it.
_MISSING_SPELLINGS = pa.array(pacsv.ConvertOptions().null_values)


def _missing_spellings_to_null(a: pa.Array) -> pa.Array:
    """Text with blank values and the usual spellings of a missing value (``NA``, ``null``)
    as null: the cheap way to the values a cast refuses most often in dates read as text."""
    trimmed = pc.utf8_trim_whitespace(a)
    missing = pc.or_(pc.equal(trimmed, ""), pc.is_in(trimmed, value_set=_MISSING_SPELLINGS))
    return pc.if_else(pc.fill_null(missing, False), pa.scalar(None, a.type), a)


def _cast_each(a: pa.Array, want: pa.DataType) -> pa.Array:
    """``a`` cast to ``want`` (numbers to text, timestamps between units, decimals between
    precisions, text to dates: exact, or refused), where only the values that do not convert
    are missing: a refused cast is split in halves until the values it refused stand alone
    (one value can never make its neighbours missing; ``k`` refused values cost about
    ``2 k log2(n)`` casts)."""
    try:
        return pc.cast(a, want)
    except (*_CAST_ERRORS, pa.ArrowTypeError, OverflowError):
        if len(a) <= 1 or not _castable(a.type, want):
            return _null(len(a), want)
    half = len(a) // 2
    return pa.concat_arrays([_cast_each(a.slice(0, half), want),
                             _cast_each(a.slice(half), want)])


def _castable(source: pa.DataType, want: pa.DataType) -> bool:
    """Whether Arrow casts ``source`` to ``want`` at all (an empty array: no value decides)."""
    try:
        pc.cast(pa.array([], type=source), want)
    except (*_CAST_ERRORS, pa.ArrowTypeError):
        return False
    return True


def _is_plain_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _to_number(a: pa.Array, want: pa.DataType) -> pa.Array:
    """``a`` (text or numbers) as the number type ``want``; what does not conform is missing."""
    if _is_plain_text(a.type):
        if pa.types.is_boolean(want):
            return _text_to_bool(a)
        if pa.types.is_integer(want):
            return _text_to_integer(a, want)
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


#: Text spelling a whole number in decimal digits, with the spaces :data:`_NUMBER_TEXT` allows
#: around it; and plain digits, which Arrow's integer parser reads as this module does (it
#: also reads hexadecimal, which no other path does: it must never decide a value).
_WHOLE_TEXT = r"^\s*[+-]?[0-9]+\s*$"
_PLAIN_DIGITS = r"^-?[0-9]+$"
#: Digits past which no integer type holds a value (uint64's largest has 20).
_MAX_DIGITS = 20


def _text_to_integer(a: pa.Array, want: pa.DataType) -> pa.Array:
    """Text as the integer type ``want``: whole numbers exactly (through float64, ids past
    2**53 would round into each other and ids next to the int64 limits fall out of range),
    any other number text through float64 (``1.0`` is 1, ``1.5`` missing); what does not
    convert is missing. Every value converts alone, whatever its neighbours: whole numbers
    are read as 38-digit decimals and range-checked in one vectorized pass."""
    plain = pc.match_substring_regex(a, _PLAIN_DIGITS)
    if pc.all(plain).as_py() is not False:  # plain digits (or missing): one exact pass
        try:
            return pc.cast(a, want)
        except _CAST_ERRORS:  # a value out of the type's range: value by value below
            pass
    whole = pc.fill_null(pc.match_substring_regex(a, _WHOLE_TEXT), False)
    digits = pc.replace_substring_regex(a, pattern=r"^\s*\+?|\s*$", replacement="")
    digits = pc.replace_substring_regex(digits, pattern=r"^(-?)0+([0-9])", replacement=r"\1\2")
    digits = pc.replace_substring_regex(digits, pattern=r"^-0$", replacement="0")  # -0 is 0
    fits = pc.and_(whole, pc.less_equal(pc.utf8_length(digits), _MAX_DIGITS + 1))  # a sign
    decimals = pa.decimal128(38, 0)
    number = pc.cast(pc.if_else(fits, digits, pa.scalar(None, a.type)), decimals)
    info = np.iinfo(want.to_pandas_dtype())
    inside = pc.and_(pc.greater_equal(number, pa.scalar(int(info.min), decimals)),
                     pc.less_equal(number, pa.scalar(int(info.max), decimals)))
    exact = pc.cast(pc.if_else(pc.fill_null(inside, False), number,
                               pa.scalar(None, decimals)), want)
    floats = _text_to_float(pc.if_else(whole, pa.scalar(None, a.type), a))
    try:
        other = pc.cast(floats, want)
    except _CAST_ERRORS:
        other = _float_to(floats, want)
    return pc.coalesce(exact, other)


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
        # the largest integer + 1 is a power of two, exact in float64; the largest integer
        # itself may not be (2**63 - 1 rounds up to 2**63, which int64 cannot hold)
        ok &= (x >= info.min) & (x < float(int(info.max) + 1))
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
