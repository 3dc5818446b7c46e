"""Conforming Arrow data to the public schema, never raising on a value.

Files of one dataset may disagree with its schema (text in a numeric column of one file, a
column another file lacks, a fraction in an integer column). A value that does not conform is
missing, never silently another number and never an error that could quote it
(docs/privacy.md#behaviour-that-does-not-depend-on-the-data).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .arrow_columns import Column, decoded, flat, is_bytes, is_number, is_text, value_type

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


#: Arrow's CSV spellings of booleans (``ConvertOptions`` defaults): a format that keeps them
#: reads booleans as :func:`_text_to_bool` does, in any case.
_ARROW_TRUE = tuple(pacsv.ConvertOptions().true_values)
_ARROW_FALSE = tuple(pacsv.ConvertOptions().false_values)


@dataclass(frozen=True)
class TextOptions:
    """How a CSV format spells values (its ``ConvertOptions``), honoured when text read as bytes
    is conformed: the words of booleans (empty: ``true``/``1``, ``false``/``0`` in any case), the
    decimal point of numbers, and the formats of timestamps (``None`` for ISO 8601; empty:
    ISO 8601 only)."""

    true_values: tuple[str, ...] = ()
    false_values: tuple[str, ...] = ()
    decimal_point: str = "."
    timestamp_parsers: tuple[str | None, ...] = ()
    #: spellings of a missing value (``null_values``), in every column but text, and in text
    #: too when ``strings_can_be_null`` (as Arrow's CSV reader applies them)
    null_values: tuple[str, ...] = ()
    strings_can_be_null: bool = False

    @classmethod
    def of(cls, convert: pacsv.ConvertOptions) -> TextOptions:
        """The spellings of ``convert`` (Arrow's defaults as the empty defaults here)."""
        true, false = tuple(convert.true_values), tuple(convert.false_values)
        words = (true, false) != (_ARROW_TRUE, _ARROW_FALSE)
        return cls(true_values=true if words else (), false_values=false if words else (),
                   decimal_point=str(convert.decimal_point),
                   timestamp_parsers=tuple(p if isinstance(p, str) else None
                                           for p in convert.timestamp_parsers),
                   null_values=tuple(convert.null_values),
                   strings_can_be_null=bool(convert.strings_can_be_null))


_PLAIN_TEXT = TextOptions()


def conform_array(arr: Column, t: pa.DataType, text: TextOptions = _PLAIN_TEXT) -> pa.Array:
    """``arr`` in the type ``t`` of the public schema, never raising on values: a value that
    does not conform (text in a numeric column, a fraction in an integer column, a number out
    of the type's range or one its type cannot hold exactly, anything in a column of the null
    type) is missing, never silently another number
    (docs/privacy.md#behaviour-that-does-not-depend-on-the-data). ``text``: how text spells
    values (a CSV format's options)."""
    a = utf8_or_missing(flat(arr))
    want = value_type(t)
    if value_type(a.type) == want:
        return a
    if pa.types.is_null(want):  # a column all missing where the public schema was read
        return _null(len(a), want)
    a = decoded(a)
    if is_bytes(a.type) and not is_bytes(want):  # text read as bytes (CSV): bytes that are
        # not UTF-8 are missing, value by value
        a = _cast_each(a, want if is_text(want) else pa.large_string())
        if a.type == want:  # text: its null spellings only where the format says so
            return _null_spellings(a, text) if text.strings_can_be_null else a
    if pa.types.is_null(a.type):
        return _null(len(a), want)
    if _is_plain_text(a.type):
        return _text_to(a, want, text)
    if is_number(want):
        return _to_number(a, want)
    return _cast_each(a, want)


def _text_to(a: pa.Array, want: pa.DataType, text: TextOptions) -> pa.Array:
    """Text as ``want``, spelled as ``text`` says; what does not spell a value is missing."""
    if not is_text(want):
        a = _null_spellings(a, text)
    if pa.types.is_boolean(want):
        return _text_to_bool(a, text)
    if (pa.types.is_integer(want) or pa.types.is_floating(want)
            or pa.types.is_decimal(want)):
        a = _decimal_point(a, text.decimal_point)
    if is_number(want):
        return _to_number(a, want)
    if pa.types.is_decimal(want):
        return _text_to_decimal(a, want)
    if pa.types.is_time(want):
        return _text_to_time_of_day(a, want)
    if pa.types.is_duration(want):
        return pc.cast(_text_to_integer(a, pa.int64()), want)  # as Arrow's CSV reads them
    if pa.types.is_timestamp(want) and text.timestamp_parsers:
        return _parsed_timestamps(a, want, text.timestamp_parsers)
    if pa.types.is_temporal(want):
        return _text_to_time(a, want)
    return _cast_each(a, want)


def _null_spellings(a: pa.Array, text: TextOptions) -> pa.Array:
    """Text with the format's spellings of a missing value (``null_values``) as null."""
    if not text.null_values:
        return a
    spelled = pc.fill_null(pc.is_in(a, value_set=pa.array(text.null_values, a.type)), False)
    return pc.if_else(spelled, pa.scalar(None, a.type), a)


def _decimal_point(a: pa.Array, point: str) -> pa.Array:
    """Number text with the decimal point ``point`` in the ``.`` spelling (text holding a
    ``.`` is then no number: missing)."""
    if point == ".":
        return a
    dotted = pc.fill_null(pc.match_substring(a, "."), False)
    a = pc.if_else(dotted, pa.scalar(None, a.type), a)
    return pc.replace_substring(a, pattern=point, replacement=".")


#: Text a decimal cast may read: a number in digits with an optional point and exponent
#: (anything else is missing at once, without costing a cast).
_DECIMAL_TEXT = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"


def _text_to_decimal(a: pa.Array, want: pa.DataType) -> pa.Array:
    """Text as the decimal type ``want``: numbers it holds exactly; text that spells no number,
    or a number with more digits than the type holds, missing."""
    ok = pc.fill_null(pc.match_substring_regex(a, _DECIMAL_TEXT), False)
    return _cast_each(pc.if_else(ok, pc.utf8_trim_whitespace(a), pa.scalar(None, a.type)), want)


#: A time of day as Arrow's CSV parser reads one: ``HH:MM``, ``HH:MM:SS`` or with a fraction.
_TIME_OF_DAY_TEXT = r"^\s*\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?\s*$"


def _text_to_time_of_day(a: pa.Array, want: pa.DataType) -> pa.Array:
    """Text as the time type ``want`` (Arrow has no cast from text to a time of day): text of
    the form ``HH:MM[:SS[.f]]`` is read as that time on 1970-01-01 and cast to ``want``; other
    text, an hour past 23 and a fraction finer than the type's unit are missing."""
    ok = pc.fill_null(pc.match_substring_regex(a, _TIME_OF_DAY_TEXT), False)
    stamps = pc.binary_join_element_wise(pa.scalar("1970-01-01T", a.type),
                                         pc.utf8_trim_whitespace(a), pa.scalar("", a.type))
    stamps = _cast_each(pc.if_else(ok, stamps, pa.scalar(None, a.type)), pa.timestamp("ns"))
    return _cast_each(stamps, want)


def _parsed_timestamps(a: pa.Array, want: pa.DataType,
                       parsers: tuple[str | None, ...]) -> pa.Array:
    """Text as timestamps by the first of ``parsers`` (``strptime`` formats; ``None``: ISO
    8601) that reads it, as Arrow's CSV reader tries them; text none reads is missing."""
    read = [_text_to_time(a, want) if p is None else
            _cast_each(pc.strptime(a, format=p, unit=want.unit, error_is_null=True), want)
            for p in parsers]
    return pc.coalesce(*read) if len(read) > 1 else read[0]


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
    """``a`` (text, numbers or decimals) as the number type ``want``; what does not conform
    is missing. Integers go to integers exactly (only those out of the target's range are
    missing: never through float64, where ids past 2**53 merge), and to floats when the float
    type holds them exactly; only 0 and 1 are booleans."""
    if _is_plain_text(a.type):
        if pa.types.is_boolean(want):
            return _text_to_bool(a)
        if pa.types.is_integer(want):
            return _text_to_integer(a, want)
        a = _text_to_float(a)
    elif pa.types.is_decimal(a.type):
        return _decimal_to_number(a, want)
    elif not is_number(a.type):
        return _null(len(a), want)
    if pa.types.is_boolean(want):
        return _number_to_bool(a)
    try:
        return pc.cast(a, want)  # safe: raises instead of truncating, wrapping or rounding
    except _CAST_ERRORS:
        pass
    if pa.types.is_integer(a.type) and pa.types.is_integer(want):
        return _integer_to_integer(a, want)
    if pa.types.is_integer(a.type):
        return _integer_to_float(a, want)
    return _float_to(a, want)


def _number_to_bool(a: pa.Array) -> pa.Array:
    """Numbers (or decimals) as booleans: 0 is False, 1 is True, any other value missing."""
    zero, one = pc.equal(a, 0), pc.equal(a, 1)
    return pc.if_else(one, True, pc.if_else(zero, pa.scalar(False),
                                            pa.scalar(None, pa.bool_())))


def _integer_range(t: pa.DataType) -> tuple[int, int]:
    info = np.iinfo(t.to_pandas_dtype())
    return int(info.min), int(info.max)


def _integer_to_integer(a: pa.Array, want: pa.DataType) -> pa.Array:
    """Integers as the integer type ``want``, exactly: the values outside its range (compared
    in the source type) are missing, each alone."""
    low, high = _integer_range(a.type)
    want_low, want_high = _integer_range(want)
    inside = pc.and_(pc.greater_equal(a, pa.scalar(max(low, want_low), a.type)),
                     pc.less_equal(a, pa.scalar(min(high, want_high), a.type)))
    return pc.cast(pc.if_else(inside, a, pa.scalar(None, a.type)), want)


def _integer_to_float(a: pa.Array, want: pa.DataType) -> pa.Array:
    """Integers as the float type ``want``: the values it holds exactly (2**60 among them);
    the others missing, as rounding would make two integers one number."""
    source = a.type.to_pandas_dtype()
    ints = np.asarray(pc.fill_null(a, 0).to_numpy(zero_copy_only=False), dtype=source)
    floats = ints.astype(want.to_pandas_dtype())
    wide = floats.astype(np.float64)  # exact
    low, high = _integer_range(a.type)
    ok = np.isfinite(wide) & (wide >= low) & (wide < float(high + 1))  # high + 1: 2**k, exact
    ok[ok] &= wide[ok].astype(source) == ints[ok]
    ok &= np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(np.where(ok, floats, 0), mask=~ok, type=want)


def _decimal_to_number(a: pa.Array, want: pa.DataType) -> pa.Array:
    """Decimals as the number type ``want``: floats by value; integers when whole and in
    range, booleans when 0 or 1; other values missing."""
    if pa.types.is_boolean(want):
        return _number_to_bool(a)
    if pa.types.is_floating(want):
        return _cast_each(a, want)
    low, high = _integer_range(want)
    ok = pc.and_(pc.equal(pc.floor(a), a),
                 pc.and_(pc.greater_equal(a, pa.scalar(low, pa.int64())),
                         pc.less_equal(a, pa.scalar(high, pa.uint64() if high > 2**63
                                                    else pa.int64()))))
    return _cast_each(pc.if_else(ok, a, pa.scalar(None, a.type)), want)


def _text_to_bool(a: pa.Array, text: TextOptions = _PLAIN_TEXT) -> pa.Array:
    """``true``/``1`` and ``false``/``0`` (any case, spaces around) as booleans, else missing;
    with the words of ``text`` (a CSV format's ``true_values``/``false_values``), exactly
    those words (spaces around allowed)."""
    if text.true_values or text.false_values:
        word = pc.utf8_trim_whitespace(a)
        trues, falses = list(text.true_values), list(text.false_values)
    else:
        word = pc.utf8_trim_whitespace(pc.utf8_lower(a))
        trues, falses = ["true", "1"], ["false", "0"]
    true = pc.is_in(word, value_set=pa.array(trues, pa.string()))
    false = pc.is_in(word, value_set=pa.array(falses, pa.string()))
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
    """Floats that a safe cast refused, as ``want``: floats as they are; for integers and
    booleans, the values that are not integers in range (or 0 / 1) are missing. Only floats
    come here (float64 holds every float32 exactly): integers never go through float64."""
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


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema,
                  text: TextOptions = _PLAIN_TEXT) -> pa.RecordBatch:
    """``batch`` with exactly the columns of ``schema``, each conformed by
    :func:`conform_array` (text spelled as ``text`` says); a column the batch lacks is all
    missing."""
    if batch.schema.names == schema.names and all(
            value_type(batch.schema.field(i).type) == value_type(f.type)
            for i, f in enumerate(schema)):
        columns = batch.columns
        checked = [utf8_or_missing(c) for c in columns]  # text whose bytes are not UTF-8
        if all(c is d for c, d in zip(checked, columns, strict=True)):
            return batch
        return pa.RecordBatch.from_arrays(checked, names=schema.names)
    n = batch.num_rows
    names = batch.schema.names
    arrays = [conform_array(batch.column(names.index(f.name)), f.type, text)
              if f.name in names
              else _null(n, value_type(f.type))
              for f in schema]
    return pa.RecordBatch.from_arrays(arrays, names=schema.names)


# -- text whose bytes are not UTF-8 ----------------------------------------------------------------

#: Values at most this many are checked one by one when a slice of text holds bytes that are not
#: UTF-8 (:func:`_not_utf8_in`); as many bytes past ASCII, or one a thousand values, are
#: always checked value by value (:func:`_past_ascii`).
_UTF8_LEAF = 64


def utf8_or_missing(arr: Column) -> Column:
    """``arr`` with each text value whose bytes are not UTF-8 missing; any other column (and
    text that is all UTF-8, the usual case: the very array) as it is.

    Arrow's string types promise UTF-8 but do not enforce it: a Parquet file, an IPC stream or
    a buffer built by hand may hold any bytes (Parquet readers do not check them:
    ``pd.read_parquet`` hands them on as pandas' ``str`` dtype). Such a value is no text at
    all: it conforms to no key, unit or counted value of a text column and is missing, as the
    bytes of a CSV field that are not UTF-8 are (:func:`conform_array`), never an error (Python
    cannot make a ``str`` of it: reading it raised after the charge) and never a value of its
    own (docs/privacy.md#behaviour-that-does-not-depend-on-the-data). A dictionary's entries are
    checked (the rows pointing to one that is not UTF-8 are missing), a chunked array's chunks
    one by one, a string view as the large string it is read as (:func:`public_type`). Cost:
    one pass over the bytes when they are (nearly) all ASCII, else Arrow's UTF-8 check; only
    text holding such a value is cut down to find it (:func:`_not_utf8`)."""
    if isinstance(arr, pa.ChunkedArray):
        return _utf8_chunks(arr)
    t = arr.type
    if pa.types.is_string_view(t):  # the cast does not check the bytes: checked below
        return utf8_or_missing(arr.cast(pa.large_string()))
    if pa.types.is_dictionary(t) and _is_plain_text(t.value_type):
        return _utf8_dictionary(arr)
    if not _is_plain_text(t):
        return arr
    bad = _not_utf8(arr)
    return arr if bad is None else _nulled(arr, bad)


def _utf8_chunks(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    """:func:`utf8_or_missing` of each chunk (the very array when no chunk changed)."""
    original = arr.chunks  # the wrappers, once: each read of ``chunks`` makes new ones
    chunks = [utf8_or_missing(c) for c in original]
    if all(c is d for c, d in zip(chunks, original, strict=True)):
        return arr
    return pa.chunked_array(chunks, type=chunks[0].type if chunks else arr.type)


def _utf8_dictionary(arr: pa.DictionaryArray) -> pa.DictionaryArray:
    """A dictionary array of text with its entries that are not UTF-8 missing, and the rows
    that point to them."""
    bad = _not_utf8(arr.dictionary)
    if bad is None:
        return arr
    hit = pc.is_in(arr.indices, value_set=pa.array(bad, arr.indices.type))
    indices = pc.if_else(hit, pa.scalar(None, arr.indices.type), arr.indices)
    return pa.DictionaryArray.from_arrays(indices, _nulled(arr.dictionary, bad))


def _nulled(a: pa.Array, positions: npt.NDArray[np.intp]) -> pa.Array:
    """The text array ``a`` with the values at ``positions`` missing: a new validity bitmap
    over the same offsets and bytes (no copy of the text)."""
    valid = np.ones(a.offset + len(a), dtype=bool)
    if a.null_count:
        valid[a.offset:] = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    valid[a.offset + positions] = False
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    _, offsets, data = a.buffers()
    return pa.Array.from_buffers(a.type, len(a), [bitmap, offsets, data], offset=a.offset)


def _not_utf8(a: pa.Array) -> npt.NDArray[np.intp] | None:
    """Positions of the values of the text array ``a`` whose bytes are not UTF-8 (a missing
    value's bytes are not read), or None when there is none. Text all ASCII, or nearly (one
    person's bytes among ASCII keys), costs one pass over the bytes, and the few values holding
    a byte past ASCII are checked one by one (:func:`_past_ascii`); other text costs Arrow's
    UTF-8 check, and only when that fails is it cut down to the values that are not UTF-8
    (:func:`_not_utf8_in`, about one more check of the whole)."""
    few = _past_ascii(a)
    if few is not None:
        bad = [i for i in few.tolist() if not _utf8(a.slice(i, 1))]
    elif _utf8(a):
        return None
    else:
        bad = _not_utf8_in(a, 0, len(a))
    return np.array(bad, dtype=np.intp) if bad else None


def _past_ascii(a: pa.Array) -> npt.NDArray[np.intp] | None:
    """Positions of the values of the text array ``a`` holding a byte past ASCII (the only
    ones that may not be UTF-8), or None when there are more such bytes than about one a
    thousand values (Arrow's check of the whole array then costs less than checking them one
    by one)."""
    buffers = a.buffers()
    if len(a) == 0 or buffers[2] is None:
        return np.zeros(0, dtype=np.intp)
    width = np.int64 if pa.types.is_large_string(a.type) else np.int32
    offsets = np.frombuffer(buffers[1], dtype=width, count=a.offset + len(a) + 1)[a.offset:]
    high = np.frombuffer(buffers[2], dtype=np.uint8)[offsets[0]:offsets[-1]] >= 0x80
    if int(np.count_nonzero(high)) > max(_UTF8_LEAF, len(a) >> 10):
        return None
    where = np.flatnonzero(high) + offsets[0]
    return np.unique(np.searchsorted(offsets, where, side="right") - 1).astype(np.intp)


def _utf8(a: pa.Array) -> bool:
    """Whether every present value of the text array ``a`` is UTF-8 (Arrow's check, which
    refuses what Python's strict decoder refuses: overlong forms, surrogates)."""
    binary = pa.large_binary() if pa.types.is_large_string(a.type) else pa.binary()
    try:
        a.view(binary).cast(a.type)
    except pa.ArrowInvalid:
        return False
    return True


#: A slice of text that fails Arrow's UTF-8 check is cut into this many parts, each checked
#: (:func:`_not_utf8_in`).
_UTF8_PARTS = 16


def _not_utf8_in(a: pa.Array, start: int, stop: int) -> list[int]:
    """Positions in ``start:stop`` of ``a`` (a slice that failed Arrow's check) whose values
    are not UTF-8: the slice is cut into :data:`_UTF8_PARTS` parts, those that pass are left
    at once, and leaves of :data:`_UTF8_LEAF` values are read value by value (one such value
    among ``n`` costs about ``n / 15`` more bytes checked and ``16 log16(n)`` checks)."""
    if stop - start <= _UTF8_LEAF:
        part = a.slice(start, stop - start)
        return [start + i for i in range(stop - start) if not _utf8(part.slice(i, 1))]
    cuts = np.linspace(start, stop, _UTF8_PARTS + 1).astype(np.int64).tolist()
    out: list[int] = []
    for lo, hi in itertools.pairwise(cuts):
        if hi > lo and not _utf8(a.slice(lo, hi - lo)):
            out += _not_utf8_in(a, lo, hi)
    return out
