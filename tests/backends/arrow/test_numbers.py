"""Review of 86ccceb (CSV text to integers parsed exactly) and 241489a (words of integers in
[2**63, 2**64)): equal numbers are one value and one unit, unequal uint64 values past 2**63
stay apart, on every front; integer text conforms as pandas reads it, value by value.

The last tests are defects found in review, each failing on the code before its fix."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.backends.blocks.arrow_conform import conform_array
from dpframe.core.exact.hashing import number_words, value_words

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions warn

BIG = [2**64 - 1, 2**64 - 2, 2**63, 2**63 + 1, 2**63 + 2**11, 5]  # 2**64 - 1, - 2: one float
UNITS = {"privacy_unit": "u", "max_rows_per_unit": 1}


def _session() -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e12, 1e-3, seed=1)


def _units_and_distinct(front: Callable[[dpf.Session, dict[str, Any]], Any]) -> tuple[int, int]:
    """Units (one row kept per unit: every row of a unit is one value) and distinct values of
    ``u``, released at a noise far below 0.5."""
    units = front(_session(), UNITS).count(epsilon=1e6)
    distinct = front(_session(), {}).count_distinct("u", epsilon=1e6)
    return round(float(units)), round(float(distinct))


# -- hashing: words of equal numbers are equal, of unequal ones apart --------------------------

@pytest.mark.parametrize("exact", [True, False])
def test_equal_numbers_have_one_word(exact: bool) -> None:
    for n in (1, 2**63, 2**63 + 2**11, 2**64 - 2**11):
        spellings: list[object] = [n, float(n), np.uint64(n), np.float64(n), Fraction(n),
                                   Decimal(n), Decimal(f"{n}.000")]
        if n < 2**63:
            spellings += [np.int64(n), True] if n == 1 else [np.int64(n)]
        words = set(value_words(spellings, exact=exact).tolist())
        assert len(words) == 1, n
        assert words == {int(number_words(np.array([n], dtype=np.uint64))[0])}
        assert words == {int(number_words(np.array([float(n)]))[0])}


def test_unequal_uint64_values_past_2_63_have_words_apart() -> None:
    u = np.array(BIG, dtype=np.uint64)
    assert len(set(number_words(u).tolist())) == len(BIG)
    assert len(set(value_words(BIG).tolist())) == len(BIG)
    assert len(set(value_words([Fraction(b) for b in BIG]).tolist())) == len(BIG)
    # 2**64 - 1 is not the float 2**64 it rounds to
    assert value_words([2**64 - 1])[0] != value_words([2.0**64])[0]
    assert value_words([2**64])[0] == value_words([2.0**64])[0]


# -- every front: uint64 units past 2**63 stay apart, equal numbers are one -------------------

@pytest.mark.parametrize("parts", [1, 3])
def test_uint64_units_past_2_63_stay_apart_on_every_front(tmp_path: Path, parts: int) -> None:
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    pl = pytest.importorskip("polars")
    import dpframe.fronts.polars  # noqa: F401  (registers pl_df.dp)

    rows = [b for b in BIG for _ in range(2)]
    want = (len(BIG), len(BIG))
    frames = {"uint64": pd.DataFrame({"u": np.array(rows, dtype=np.uint64)}),
              "UInt64": pd.DataFrame({"u": pd.array(rows, dtype="UInt64")}),
              "object": pd.DataFrame({"u": pd.Series(rows, dtype=object)})}
    with dask.config.set({"scheduler": "synchronous", "dataframe.convert-string": False}):
        for name, df in frames.items():  # Dask would read a mixed object column as strings
            assert _units_and_distinct(lambda s, o, df=df: df.dp(s, **o)) == want, name
            got = _units_and_distinct(
                lambda s, o, df=df: dd.from_pandas(df, npartitions=3, sort=False).dp(s, **o))
            assert got == want, f"dask {name}"
    table = pa.table({"u": pa.array(rows, pa.uint64())})
    pq.write_table(table, tmp_path / "u.parquet", row_group_size=3)
    (tmp_path / "u.csv").write_text("u\n" + "".join(f"{r}\n" for r in rows))
    pinned = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
        column_types={"u": pa.uint64()}))
    frame = pl.from_arrow(table)
    sources: dict[str, Callable[[], Any]] = {
        "table": lambda: dpf.scan(table, partitions=parts, batch_size=5),
        "parquet": lambda: dpf.scan(tmp_path / "u.parquet", partitions=parts),
        "pinned csv": lambda: dpf.scan(tmp_path / "u.csv", format=pinned, partitions=parts,
                                       batch_size=5)}
    for name, scan in sources.items():
        assert _units_and_distinct(lambda s, o, scan=scan: scan().dp(s, **o)) == want, name
    for lazy in (False, True):
        f = frame.lazy() if lazy else frame
        got = _units_and_distinct(lambda s, o, f=f: f.dp(s, partitions=parts, batch_size=5,
                                                         **o))
        assert got == want, f"polars lazy={lazy}"


@pytest.mark.parametrize("n", [1, 2**63, 2**64 - 1, 2**64])
def test_equal_numbers_are_one_unit_and_one_value_on_pandas_and_dask(n: int) -> None:
    """One object column, one spelling a row; on Dask each row in its own partition."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    values: list[object] = [n, Fraction(n), Decimal(n), Decimal(f"{n}.00")]
    if float(n) == n:
        values.append(float(n))
    if n < 2**64:
        values.append(np.uint64(n))
    if n == 1:
        values += [True, np.int8(1), np.float32(1.0)]
    df = pd.DataFrame({"u": pd.Series(values, dtype=object)})
    assert _units_and_distinct(lambda s, o: df.dp(s, **o)) == (1, 1)
    with dask.config.set({"scheduler": "synchronous", "dataframe.convert-string": False}):
        got = _units_and_distinct(
            lambda s, o: dd.from_pandas(df, npartitions=len(values), sort=False).dp(s, **o))
    assert got == (1, 1)


# -- integer text, conformed value by value ----------------------------------------------------

#: Spellings of integers pandas reads in a column pinned to an integer type (None: missing).
SPELLED = {"+5": 5, " 5 ": 5, "5.0": 5, "05": 5, "1e1": 10, "0": 0, "-7": -7, "": None,
           "NaN": None, "1e400": None, "1.5": None, "abc": None, "٥": None, "５": None,
           "9" * 40: None, "9223372036854775807": 2**63 - 1, "-9223372036854775808": -(2**63)}


@pytest.mark.parametrize("t", [pa.int8(), pa.int64(), pa.uint64()])
def test_integer_text_conforms_value_by_value(t: pa.DataType) -> None:
    info = np.iinfo(t.to_pandas_dtype())
    want = {s: v if v is not None and info.min <= v <= info.max else None
            for s, v in SPELLED.items()}
    texts = list(SPELLED)
    got = conform_array(pa.array(texts), t).to_pylist()
    assert dict(zip(texts, got, strict=True)) == want
    for s in texts:  # alone, and beside a value that forces the value-by-value path
        assert conform_array(pa.array([s]), t).to_pylist() == [want[s]], s
        assert conform_array(pa.array([s, "zz"]), t).to_pylist() == [want[s], None], s


@pytest.mark.parametrize("t", ["int8", "int64", "uint64"])
def test_pinned_csv_counts_and_sums_equal_pandas(tmp_path: Path, t: str) -> None:
    """A CSV with odd integer spellings, its column pinned: per row, the scan's count and sum
    equal pandas reading the same file with the same type pinned (spellings pandas reads)."""
    texts = ["+5", " 5 ", "5.0", "05", "1e1", "0", "", "NaN", "12"]
    path = tmp_path / "x.csv"
    path.write_text("u,g\n" + "".join(f"{s},{i}\n" for i, s in enumerate(texts)))
    ref = pd.read_csv(path, dtype={"u": t.capitalize().replace("Uint", "UInt")})
    keys = {"g": list(range(len(texts)))}
    opts = {"bounds": {"u": (0, 20)}, "keys": keys}

    def agg(f: Any) -> dict[Any, Any]:
        r = f.groupby("g").agg({"u": ["count", "sum"]}, epsilon=1e9)
        return r.round().astype(int).to_dict()

    expect = agg(ref.dp(_session(), **opts))
    fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
        column_types={"u": pa.from_numpy_dtype(np.dtype(t)), "g": pa.int64()}))
    assert agg(dpf.scan(path, format=fmt).dp(_session(), **opts)) == expect
    schema = pa.schema([("u", pa.from_numpy_dtype(np.dtype(t))), ("g", pa.int64())])
    pinned = dpf.scan(ds.dataset(path, format="csv", schema=schema),  # a dataset's schema
                      types={"u": t, "g": "int64"})  # is no declaration: types= is
    assert agg(pinned.dp(_session(), **opts)) == expect


# -- defects found in review ---------------------------------------------------------------------

def test_hex_text_does_not_depend_on_its_neighbours() -> None:
    alone = conform_array(pa.array(["0x10", "5"]), pa.int64()).to_pylist()
    beside = conform_array(pa.array(["0x10", "5", ""]), pa.int64()).to_pylist()
    assert alone[:2] == beside[:2]


def test_adding_a_blank_row_to_a_csv_moves_a_sum_by_its_own_value_only(tmp_path: Path) -> None:
    def total(text: str) -> int:
        (tmp_path / "x.csv").write_text(text)
        f = dpf.scan(tmp_path / "x.csv", types={"v": "int64"}).dp(_session(),
                                                                 bounds={"v": (0, 100)})
        return round(float(f.sum("v", epsilon=1e9)))

    assert total("v,w\n0x10,a\n1,b\n") == total("v,w\n0x10,a\n1,b\n,c\n")


def test_hex_past_int64_is_not_wrapped() -> None:
    assert conform_array(pa.array(["0xFFFFFFFFFFFFFFFF", "5"]), pa.int64())[0].as_py() != -1


def test_minus_zero_text_is_zero_in_unsigned_columns() -> None:
    assert conform_array(pa.array(["-0", "5"]), pa.uint64()).to_pylist() == [0, 5]


def test_unicode_spaces_trim_alike_for_every_number_spelling() -> None:
    got = conform_array(pa.array(["\u00a05", "\u00a05.0", "\x0b5", "\x0b5.0"]), pa.int64())
    assert len(set(got.to_pylist())) == 1


def test_a_huge_integer_label_releases_noise() -> None:
    df = pd.DataFrame({"u": pd.Series([1, 10**5000], dtype=object)})
    s = _session()
    assert round(float(df.dp(s).count_distinct("u", epsilon=1e6))) == 2
