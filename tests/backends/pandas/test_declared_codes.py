"""Declared key positions of Arrow-backed pandas columns (one hash lookup per range of rows,
ranges on several threads): the same codes as Python ``==`` against the declared keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpframe.backends.blocks.frames import declared_codes
from dpframe.core.exact import parallel

N = 3 * parallel.BLOCK_ROWS + 5


def _reference(values: list[object], declared: tuple[object, ...]) -> list[int]:
    out = []
    for v in values:
        hit = [i for i, k in enumerate(declared) if v is not None and v == v and v == k]
        out.append(hit[0] if hit else -1)
    return out


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype,declared,pool", [
    ("string[pyarrow]", ("a", "b", "c"), ["a", "b", "c", "d", None]),
    ("large_string[pyarrow]", ("b", "a"), ["a", "b", "zz", None]),
    ("float64[pyarrow]", (0.0, 1.5), [0.0, -0.0, 1.5, 2.0, None]),
    ("int64[pyarrow]", (7, 1), [1, 7, 3, None]),
])
def test_arrow_columns_on_any_number_of_threads(threads: int, dtype: str,
                                                declared: tuple[object, ...],
                                                pool: list[object],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "THREADS", threads)
    monkeypatch.setattr(parallel, "MIN_ROWS_PER_THREAD", parallel.BLOCK_ROWS)
    rng = np.random.default_rng(threads)
    values = [pool[i] for i in rng.integers(0, len(pool), N)]
    if dtype.startswith("large_string"):
        import pyarrow as pa

        s = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, type=pa.large_string())))
    else:
        s = pd.Series(values, dtype=dtype)
    assert len(parallel.row_ranges(N)) == threads
    got = declared_codes(s, declared)
    assert got.dtype == np.int64
    assert got.tolist() == _reference(values, declared)
    narrow = declared_codes(s, declared, np.int8)  # the type Dask's exchange carries
    assert narrow.dtype == np.int8
    assert narrow.tolist() == _reference(values, declared)


@pytest.mark.parametrize("dtype,declared,values", [
    ("string[pyarrow]", ("a", "b"), ["a", "x", None, "b"]),
    ("float64[pyarrow]", (0.0, 2.5), [-0.0, 0.0, 2.5, None, 1.0]),
    ("int64[pyarrow]", (3, 1), [1, 2, 3, None]),
])
def test_one_range_takes_the_whole_column_at_once(dtype: str, declared: tuple[object, ...],
                                                  values: list[object]) -> None:
    s = pd.Series(values * 50, dtype=dtype)
    assert len(parallel.row_ranges(len(s))) == 1
    got = declared_codes(s, declared)
    assert got.dtype == np.int64
    assert got.tolist() == _reference(values * 50, declared)


def test_remembered_value_sets_follow_the_tuple_and_the_column_type() -> None:
    """Value sets are remembered by the identity of the declared tuple and the Arrow type: the
    same tuple against another type, or an equal-looking new tuple, is looked up afresh."""
    declared = (1, 2)
    ints = pd.Series([2, 1, 5, None], dtype="int64[pyarrow]")
    assert declared_codes(ints, declared).tolist() == [1, 0, -1, -1]
    assert declared_codes(ints, declared).tolist() == [1, 0, -1, -1]  # remembered
    floats = pd.Series([2.0, 1.0, -0.0], dtype="float64[pyarrow]")
    assert declared_codes(floats, declared).tolist() == [1, 0, -1]  # same tuple, other type
    text = pd.Series(["1", "2", "b"], dtype="string[pyarrow]")
    assert declared_codes(text, ("b", "1")).tolist() == [1, -1, 0]
    assert declared_codes(text, ("2", "b")).tolist() == [-1, 0, 1]  # a new tuple


def test_repeated_declared_keys_take_the_factorizing_path_every_time() -> None:
    """A declared list with a repeat has no Arrow value set (index_in would refuse it); that
    decision is remembered too, and the codes are still the first matching position."""
    s = pd.Series(["a", "b", "c"], dtype="string[pyarrow]")
    declared = ("b", "a", "b")
    for _ in range(2):
        assert declared_codes(s, declared).tolist() == [1, 0, -1]


@pytest.mark.parametrize("start,length", [(0, 0), (0, 1), (0, 70), (3, 61), (9, 0), (13, 8)])
@pytest.mark.parametrize("chunks", [1, 2])
def test_found_positions_read_from_buffers_honour_offsets_nulls_and_chunks(
        start: int, length: int, chunks: int) -> None:
    """The buffer read of ``index_in``'s result: a sliced array starts ``offset`` bits into
    its validity bitmap and ``offset`` words into its data, and null slots hold any value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from dpframe.backends.blocks.frames import _found_or_missing

    rng = np.random.default_rng(start * 100 + length + chunks)
    pool = ["a", "b", "c", None, "zz"]
    values = [pool[i] for i in rng.integers(0, len(pool), 80)]
    whole = pa.array(values, type=pa.string()).slice(start, length)
    column = pa.chunked_array([whole] if chunks == 1 else [whole, whole],
                              type=pa.string())
    found = pc.index_in(column, value_set=pa.array(["c", "a", "b"]))
    got = _found_or_missing(found)
    assert got.dtype == np.int64
    assert got.tolist() == _reference(column.to_pylist(), ("c", "a", "b"))
    # Arrow hands back fresh arrays, but a sliced one (offset past 0) must read alike
    positions = [None if v % 4 == 1 else (v * 7) % 5 for v in range(90)]
    sliced = pa.array(positions, type=pa.int32()).slice(start, length)
    assert sliced.offset == (start if length else sliced.offset)
    expected = [-1 if v is None else v for v in positions[start:start + length]]
    assert _found_or_missing(sliced).tolist() == expected
    assert _found_or_missing(pa.chunked_array([sliced] * chunks, type=pa.int32())
                             ).tolist() == expected * chunks


@pytest.mark.parametrize("s", [pd.Series(["a", "b", None, "z"], dtype=object),
                               pd.Series([1.0, float("nan"), 2.0, 3.0])])
def test_narrow_codes_on_the_factorizing_path(s: pd.Series) -> None:
    """Columns that are not Arrow-backed factorize; their codes come in the asked type too."""
    declared: tuple[object, ...] = ("a", "b") if s.dtype == object else (2.0, 1.0)
    narrow = declared_codes(s, declared, np.int16)
    assert narrow.dtype == np.int16
    assert narrow.tolist() == declared_codes(s, declared).tolist() == _reference(
        s.tolist(), declared)
