"""Unit codes in every backend: equal units share a code and unequal units never do, whether
the ids are used as offsets (a narrow integer range) or hashed."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dpframe.backends.base import offset_codes
from dpframe.backends.blocks.arrow_columns import unit_codes as arrow_unit_codes
from dpframe.backends.blocks.frames import unit_codes as pandas_unit_codes


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether codes ``a`` and ``b`` split the rows into the same classes."""
    pairs = set(zip(a.tolist(), b.tolist(), strict=True))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("ids", [
    np.array([5, 3, 5, 4, 3], dtype=np.int64),                      # narrow: offsets
    np.array([2**62, -(2**62), 7, 2**62], dtype=np.int64),         # wide: hashed
    np.array([2**64 - 1, 2**64 - 3, 2**64 - 1], dtype=np.uint64),  # unsigned, narrow
    np.array([0, 2**63 + 5, 0], dtype=np.uint64),                  # unsigned, wide
    np.array([-3, -1, -3, -2], dtype=np.int32),
])
def test_unit_codes_are_the_units_equality(ids: np.ndarray) -> None:
    arrow = arrow_unit_codes(pa.chunked_array([pa.array(ids)]))
    assert _same_partition(arrow, ids) and (arrow >= 0).all()
    if ids.dtype != np.uint64:  # pandas' own unit ids are read as int64
        pandas = pandas_unit_codes(pd.Series(ids))
        assert _same_partition(pandas, ids) and (pandas >= 0).all()


def test_offsets_only_for_a_narrow_integer_range() -> None:
    narrow = np.array([10, 12, 10, 11], dtype=np.int64)
    assert offset_codes(narrow).tolist() == [0, 2, 0, 1]
    assert offset_codes(np.array([0, 9], dtype=np.int64)) is None       # range 9 > 2 * 2
    ids = np.array([0, 4], dtype=np.int64)
    own = offset_codes(ids)  # ids from 0: themselves, read-only (never written through)
    assert own is not None and own.tolist() == [0, 4] and not own.flags.writeable
    with pytest.raises(ValueError):
        own[0] = 1
    assert ids.flags.writeable and ids.tolist() == [0, 4]
    assert offset_codes(np.array([1.0, 2.0])) is None                   # floats: hashed
    assert offset_codes(np.zeros(0, dtype=np.int64)) is None
    top = np.array([2**64 - 1, 2**64 - 2], dtype=np.uint64)
    assert offset_codes(top).tolist() == [1, 0]


@pytest.mark.parametrize("start", [0, 7, -(2**40)])
def test_thinly_spread_ids_are_renumbered_densely(start: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids covering a wide span sparsely (a scan partition's share of the id range) get dense
    codes by rank, the same equality as the ids; ids that fill their span keep offsets."""
    from dpframe.backends import base

    monkeypatch.setattr(base, "SPARSE_MIN_SPAN", 64)
    rng = np.random.default_rng(abs(start) % 97)
    present = start + np.sort(rng.choice(1000, 60, replace=False))  # 60 ids over ~1000
    ids = present[rng.integers(0, 60, 700)]
    codes = offset_codes(ids)
    assert codes is not None and codes.dtype == np.int64
    assert _same_partition(codes, ids)
    assert sorted(set(codes.tolist())) == list(range(len(set(ids.tolist()))))
    # ranks follow the ids' order
    order = np.argsort(ids, kind="stable")
    assert (np.diff(codes[order]) >= 0).all()
    dense = start + rng.integers(0, 100, 700)  # fills its span: offsets as before
    assert offset_codes(dense).tolist() == (dense - dense.min()).tolist()


# -- the pandas backend bound to a release's columns -------------------------------------------

def test_a_bound_backend_reads_one_snapshot_of_its_columns() -> None:
    """``bind`` takes each named column once: replacing a column of the frame afterwards does
    not reach the bound backend (a release validates and computes on the same data)."""
    from dpframe.backends.pandas import PandasBackend

    df = pd.DataFrame({"g": ["a", "b"], "x": [1.0, 2.0], "y": [1, 2]})
    backend = PandasBackend(df)
    bound = backend.bind(["x", "g", "nope", 3])  # type: ignore[list-item]
    df["x"] = ["p", "q"]
    assert bound.column("x").tolist() == [1.0, 2.0]
    assert bound.schema(["x", "g", "nope"]) == {"x": "float", "g": backend.schema()["g"]}
    assert backend.schema(["x"]) == {"x": backend.schema()["g"]}  # the frame has moved on
    assert bound.column("y").tolist() == [1, 2]  # not bound: read from the frame


@pytest.mark.parametrize("width", [2, 9, 40])
def test_schema_of_some_columns_is_the_schema_restricted_to_them(width: int) -> None:
    """Unbound, the schema reads ``df.dtypes``; bound to a release's columns, their own dtypes;
    both give the full schema restricted to the named columns that exist."""
    from dpframe.backends.pandas import PandasBackend

    kinds = [np.arange(3), np.arange(3.0), ["a", "b", "c"], [True, False, True]]
    df = pd.DataFrame({f"c{i}": kinds[i % 4] for i in range(width)})
    backend = PandasBackend(df)
    full = backend.schema()
    for names in (["c0"], ["c1", "c0", "zz"], [f"c{i}" for i in range(width)], [["c0"]]):
        want = {c: full[c] for c in names if isinstance(c, str) and c in full}
        assert backend.schema(names) == want  # type: ignore[arg-type]
        assert backend.bind(names).schema(names) == want  # type: ignore[arg-type]


def test_a_column_dropped_after_wrapping_is_an_unknown_column_before_any_charge() -> None:
    import warnings

    import dpframe as dpf
    from dpframe.errors import ValidationError

    df = pd.DataFrame({"g": ["a", "b"], "x": [1.0, 2.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(1.0, seed=1)
    priv = df.dp(s, bounds={"x": (0, 5)})
    del df["x"]
    with pytest.raises(ValidationError, match="unknown column"):
        priv.sum("x", epsilon=0.5)
    assert float(s.spent[0]) == 0.0


@pytest.mark.parametrize("dtype", ["str", "string[python]", pd.ArrowDtype(pa.large_string()),
                                   object])
def test_text_unit_codes_match_the_factorized_labels(dtype: object) -> None:
    """Text ids in a string dtype skip the canonical labels (nothing to merge); the codes must
    still tell exactly the distinct strings apart, with missing ids as -1, as the labelled
    path does for object columns."""
    from dpframe.backends.blocks.frames import factorize

    values = ["b", "a", None, "b", "", "a\x00", "a", None, "é"]
    s = pd.Series(values, dtype=dtype)  # type: ignore[call-overload]
    codes = pandas_unit_codes(s)
    labelled, _ = factorize(pd.Series(values, dtype=object))
    assert (codes == -1).tolist() == [v is None for v in values]
    assert _same_partition(codes, labelled)
