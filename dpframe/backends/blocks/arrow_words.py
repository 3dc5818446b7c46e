"""Arrow columns as the words of the core's one hash rule (:mod:`dpframe.core.exact.hashing`).

Only the engine-specific part lives here: numbers become numpy arrays, text and bytes their
value buffers, dates and times their integers and unit; the core hashes them. Equal
values get equal words in every batch, file and process (and as in the pandas backend).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...core.exact.hashing import (
    BYTES,
    TEXT,
    Key,
    bytes_words,
    distinct_hash,
    keyed,
    number_words,
    time_words,
)
from .arrow_columns import Bools, Column, decoded, flat, is_number

U64 = npt.NDArray[np.uint64]


def column_words(col: Column) -> U64:
    """The word of each value of a column (a missing value gets some word: callers drop it)."""
    arr = flat(col)
    t = arr.type
    if pa.types.is_dictionary(t):
        words = column_words(arr.dictionary)
        if not words.size:
            return np.zeros(len(arr), dtype=np.uint64)
        return words[pc.fill_null(arr.indices, 0).to_numpy(zero_copy_only=False)]
    if pa.types.is_null(t):
        return np.zeros(len(arr), dtype=np.uint64)
    if is_number(t):
        zero = pa.scalar(False if pa.types.is_boolean(t) else 0, t)
        return number_words(arr.fill_null(zero).to_numpy(zero_copy_only=False))
    if pa.types.is_temporal(t) and t.bit_width in (32, 64):  # dates and times: nanoseconds
        ints = arr.view(pa.int32() if t.bit_width == 32 else pa.int64()).fill_null(0)
        return time_words(ints.to_numpy(zero_copy_only=False), _time_unit(t))
    return _buffer_words(arr)


def _time_unit(t: pa.DataType) -> str | None:
    """The unit of a date or time type's integers (None: an interval, no single unit)."""
    if pa.types.is_date32(t):
        return "D"
    if pa.types.is_date64(t):
        return "ms"
    return getattr(t, "unit", None)


_PLAIN = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
          pa.types.is_large_binary)


def _buffer_words(arr: pa.Array) -> U64:
    """Text and bytes by their value buffers; other values (decimals, ...) by their text, or
    all one word when they have none (one shared bucket: equal values never hash apart)."""
    t = arr.type
    binary = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
    if not any(plain(t) for plain in _PLAIN):
        try:
            arr = pc.cast(arr, pa.large_binary() if binary else pa.large_string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return np.zeros(len(arr), dtype=np.uint64)
    return bytes_words(*_buffers(arr), BYTES if binary else TEXT)


def _buffers(arr: pa.Array) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The value bytes and the offsets of a string or binary array (without copying bytes)."""
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    _, offsets_buf, data_buf = arr.buffers()
    raw = np.frombuffer(offsets_buf, dtype=np.int64 if large else np.int32)
    offsets = raw[arr.offset: arr.offset + len(arr) + 1].astype(np.int64)
    if data_buf is None:  # every value empty or missing
        return np.zeros(0, dtype=np.uint8), offsets
    return np.frombuffer(data_buf, dtype=np.uint8), offsets


def unit_hash(col: Column, key: Key) -> U64:
    """A keyed 64-bit hash of each value: equal values get equal hashes in every batch."""
    return keyed(column_words(col), key)


def value_hashes(col: Column) -> tuple[U64, Bools]:
    """A hash of each value (equal values, 0.0 and -0.0 included, hash equal in every batch)
    and whether it is present (not null, not NaN; nested values count as missing), for
    distinct counts."""
    arr = decoded(flat(col))
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_floating(arr.type):
        valid &= ~np.asarray(pc.is_nan(arr).fill_null(False).to_numpy(zero_copy_only=False),
                             dtype=bool)
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=np.uint64), valid
    return distinct_hash(column_words(arr)), valid
