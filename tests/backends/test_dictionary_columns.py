"""Dictionary-encoded columns release exactly what their decoded values release.

Arrow dictionaries reach dpframe from Parquet (``read_parquet(dtype_backend="pyarrow")`` gives
``dictionary<...>[pyarrow]`` pandas columns), from Arrow tables given to ``dpf.scan`` and from
Polars, whose Categorical and Enum columns are dictionaries with *unsigned* indices (uint32,
uint8). Before this test, a pandas dictionary column of strings grouped by declared keys raised
``ArrowTypeError`` after the charge, and an unsigned dictionary holding a missing key raised
``OverflowError`` after the charge, but only when some row was missing (one person could turn
a release into an exception: docs/audit.md, finding 12).

Property, on every backend of the registry (Spark, a JVM job a release, skipped with the
registry's reason), for dictionaries of strings,
integers and floats (with repeated entries, ``0.0`` next to ``-0.0``, NaN) under signed and
unsigned indices, with missing rows anywhere: each query's result, labels, index dtype and
charge equal those of the same frame with the column decoded, under sessions seeded alike.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpframe as dpf
from tests.backends.contract import Data, built, examples, params

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions warn

#: Dictionaries by value type: repeated entries, 0.0 beside -0.0 and NaN included, and the
#: keys declared for them (unsorted, with keys no dictionary holds).
DICTIONARIES: dict[str, tuple[pa.DataType, list[object], list[object]]] = {
    "string": (pa.string(), ["a", "b", "zz", "a", ""], ["zz", "a", "q", "b"]),
    "large_string": (pa.large_string(), ["b", "a", "q", "b"], ["q", "b", "x"]),
    "int64": (pa.int64(), [7, 0, 2, 7, -3], [7, 0, 99, 2]),
    "float64": (pa.float64(), [0.0, -0.0, 1.5, math.nan, 1.5], [1.5, 0.0, 99.0]),
}
INDEX_TYPES = (pa.int8(), pa.int32(), pa.uint8(), pa.uint32())


def _column(value: str, index_type: pa.DataType, positions: list[int | None]) -> pa.Array:
    value_type, dictionary, _ = DICTIONARIES[value]
    return pa.DictionaryArray.from_arrays(pa.array(positions, type=index_type),
                                          pa.array(dictionary, type=value_type))


def _data(k: pa.Array, x: list[float]) -> Data:
    """A frame with key / unit column ``k`` (dictionary-encoded or not) and values ``x``: pandas
    and Dask get ``k`` as an Arrow-backed column, scans read it in several unaligned batches."""
    table = pa.table({"k": k, "x": pa.array(x, type=pa.float64())})
    return Data(lambda: pd.DataFrame({"k": pd.arrays.ArrowExtensionArray(table.column("k")),
                                      "x": np.asarray(x, dtype=np.float64)}),
                lambda: table, batch_size=7)


def _queries(value: str) -> dict[str, Callable[[Any, dpf.Session], Any]]:
    declared = DICTIONARIES[value][2]
    numeric = value in ("int64", "float64")
    out: dict[str, Callable[[Any, dpf.Session], Any]] = {
        "count by declared keys": lambda f, s: f.dp(s, keys={"k": declared}).groupby(
            "k").count(epsilon=1.0),
        "sum by declared keys": lambda f, s: f.dp(s, bounds={"x": (0.0, 10.0)}, keys={
            "k": declared}).groupby("k").sum("x", epsilon=1.0),
        "count by private keys": lambda f, s: f.dp(s).groupby("k", keys="private").count(
            epsilon=1.0, delta=1e-6),
        "count of units": lambda f, s: f.dp(s, privacy_unit="k", max_rows_per_unit=2).count(
            epsilon=1.0),
        "count of the column": lambda f, s: f.dp(s).count("k", epsilon=1.0),
    }
    if numeric:
        out["sum of the column"] = lambda f, s: f.dp(s, bounds={"k": (-5, 5)}).sum(
            "k", epsilon=1.0)
    return out


def _release(query: Callable[[Any, dpf.Session], Any], frame: Any) -> tuple[Any, ...]:
    """What a release shows: its values, labels and index dtype (or its typed error), and the
    charge."""
    s = dpf.Session(100.0, 1e-3, seed=7)
    try:
        out = query(frame, s)
    except dpf.DPError as e:  # a typed refusal is an answer; anything else fails the test
        return type(e).__name__, str(e), s.spent
    if isinstance(out, pd.Series):
        return (out.index.tolist(), str(out.index.dtype), out.tolist(), s.spent)
    return (float(out), s.spent)


#: Every backend of the registry (``tests/backends/contract.py``) with every dictionary; text
#: only where a backend lacks dictionaries of numbers, none where it lacks many cases (Spark), each
#: skipped with the registry's reason.
CASES = [pytest.param(p.values[0], value, marks=p.marks, id=f"{p.id}-{value}")
         for value in DICTIONARIES
         for p in params(needs=("many_cases",) if value in ("string", "large_string") else
                         ("many_cases", "numeric_dictionaries"))]


@pytest.mark.parametrize(("front", "value"), CASES)
def test_a_dictionary_column_releases_what_its_values_release(front: str, value: str) -> None:
    """12 examples, or the backend's share of them (``contract.examples``)."""
    check = settings(max_examples=examples(front, 12), deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])(given(data=st.data())(
                         lambda data: _encoded_releases_as_decoded(front, value, data)))
    check()


def _encoded_releases_as_decoded(front: str, value: str, data: st.DataObject) -> None:
    size = len(DICTIONARIES[value][1])
    index_type = data.draw(st.sampled_from(INDEX_TYPES), label="index type")
    positions = data.draw(st.lists(st.none() | st.integers(0, size - 1), max_size=25),
                          label="positions")
    x = [float(i % 11) for i in range(len(positions))]
    encoded = _column(value, index_type, positions)
    plain = encoded.dictionary_decode()
    with warnings.catch_warnings(), dask.config.set(scheduler="sync"):
        warnings.simplefilter("ignore")
        for name, query in _queries(value).items():
            with built(front, _data(encoded, x)) as frame:
                got = _release(query, frame)
            with built(front, _data(plain, x)) as frame:
                want = _release(query, frame)
            assert got == want, (name, index_type)


def test_unsigned_indices_with_a_missing_key_release_like_any_other() -> None:
    """The finding itself (scan of an Arrow table, as Polars' Categorical gives): one row whose
    key is missing must not turn the release into an exception after the charge."""
    declared = ["a", "b"]
    for positions in ([0, 1, 0], [0, 1, 0, None]):
        keys = pa.DictionaryArray.from_arrays(pa.array(positions, type=pa.uint32()),
                                              pa.array(["a", "b"]))
        s = dpf.Session(10.0, seed=1)
        out = dpf.scan(pa.table({"k": keys, "x": [1.0] * len(positions)})).dp(
            s, keys={"k": declared}).groupby("k").count(epsilon=1.0)
        assert out.index.tolist() == declared
        assert s.spent == (1.0, 0.0)


def test_dictionary_columns_have_their_values_kind_in_pandas() -> None:
    """A numeric dictionary column is numeric (as in a scan of the same data): bounded sums and
    means run; a dictionary of strings is text."""
    from dpframe.backends.blocks.frames import column_kind

    for value_type, kind in ((pa.string(), "str"), (pa.large_string(), "str"),
                             (pa.int64(), "int"), (pa.float64(), "float"),
                             (pa.bool_(), "bool")):
        for index_type in INDEX_TYPES:
            assert column_kind(pd.ArrowDtype(pa.dictionary(index_type, value_type))) == kind
