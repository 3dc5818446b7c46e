"""The canonical, keyed hash of a privacy unit that routes a unit's rows to one bucket of the
Dask backend's exchange (:mod:`dpframe.backends.dask.exchange`), the same in every partition
and process whatever dtype a partition gave the unit column.

Privacy: the hash only routes rows (buckets tell units apart by their exact ids), and it is
keyed by fresh randomness per release, so nobody can aim units at one bucket.
"""

from __future__ import annotations

import datetime

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from ...core.exact.hashing import (
    keyed,
    number_words,
    time_words,
    value_words,
)
from ..base import (
    one_time_spelling,
)
from ..blocks.arrow_words import column_words
from ..blocks.frames import (
    column_kind,
)

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
    """The word (:mod:`dpframe.core.exact.hashing`) of each unit value, such that values
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
TEMPORAL = (datetime.date, datetime.time, datetime.timedelta, np.datetime64, np.timedelta64)
_EPOCH_DAY = datetime.date(1970, 1, 1).toordinal()


def _object_words(values: npt.NDArray[np.object_]) -> npt.NDArray[np.uint64]:
    """:func:`unit_words` of an object column's values:
    :func:`~dpframe.core.exact.hashing.value_words`
    (numbers by value, text by its bytes, other objects 0), dates, times and spans by
    :func:`_time_word`, the word a typed column gives the same value."""
    words = value_words(values, exact=False)
    for i, v in enumerate(values):
        if isinstance(v, TEMPORAL):
            words[i] = _time_word(v)
    return words


def _time_word(v: object) -> int:
    """The word of a date, time or span in an object column, computed as a typed column's
    (:func:`~dpframe.core.exact.hashing.time_words` of its integer count and unit): a date-time or a
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
    :func:`dpframe.core.exact.hashing.keyed`), the same in every process and partition. Unequal
    units
    may collide: that only puts them in one partition, where they stay distinct units. ``key``
    (fresh randomness per release) makes the partition of a unit unpredictable, so nobody can
    aim many units at one partition."""
    return keyed(unit_words(s), key)


def unit_hash_by_codes(s: pd.Series, codes: npt.NDArray[np.int64], key: tuple[int, int]
                       ) -> npt.NDArray[np.uint64]:
    """:func:`unit_hash` of ``s``, whose values have the unit codes ``codes``
    (:func:`~dpframe.backends.blocks.frames.unit_codes`, all >= 0). Text and object ids, whose words
    cost most, are hashed once per unit, through one row of each: values the value model counts
    as one unit have one word (:func:`unit_words`), so any row of a unit gives its hash."""
    if codes.size == 0 or not (column_kind(s.dtype) == "str" or s.dtype == object):
        return unit_hash(s, key)
    # one row of each unit; a code no row has (its rows were dropped) reads row 0, unused
    row_of = np.zeros(int(codes.max()) + 1, dtype=np.intp)
    row_of[codes] = np.arange(codes.size)
    return unit_hash(s.iloc[row_of], key)[codes]

