"""Declared key positions of Arrow-backed pandas columns (one hash lookup per range of rows,
ranges on several threads): the same codes as Python ``==`` against the declared keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpframe.backends.pandas import declared_codes
from dpframe.core import parallel

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
