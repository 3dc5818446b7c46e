"""Arrow types a scan reads as other types, and values no cast or Python object can hold.

A review of the types the scan and Polars fronts accept (docs/audit.md, findings 13 and 14)
found releases that raised after the charge or erased rows:

* run-end encoded, string- and binary-view, 32- and 64-bit decimal and half-float columns
  reached Arrow kernels that lack them (a take, a hash, an add): each is now read in its
  public type (``conform.public_type``), the same values in a type every reader handles;
* a date or timestamp past the year 9999 raised while its label was made (only when such a
  row was there), an int64 CSV value that rounds to ``2**63`` raised in the cast, and a date
  malformed past the first CSV block raised in the CSV parser (quoting it): each is missing;
* a value of one file that its public type cannot hold made its whole batch missing: now only
  that value is.

Property: a column in such a type releases what the same values in the plain type release,
on every plan (one pass, several batches, the spilled privacy-unit plan).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dpf
from dpframe.backends.blocks.arrow_conform import conform_array, public_type

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions warn

Release = Callable[[Any, dpf.Session], Any]


def _outcome(release: Release, source: Any, unit: str | None = None) -> tuple[Any, ...]:
    s = dpf.Session(100.0, 1e-3, seed=3, **({"privacy_unit": unit} if unit else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = release(source, s)
        except dpf.DPError as e:
            return type(e).__name__, s.spent
    if hasattr(out, "index"):
        return out.index.tolist(), str(out.index.dtype), out.tolist(), s.spent
    return float(out), s.spent


#: (encode, plain type): an encoding of a column and the type it is read as.
ENCODINGS: dict[str, tuple[Callable[[pa.Array], pa.Array], Callable[[pa.DataType], bool]]] = {
    "run-end encoded": (lambda a: pc.run_end_encode(a), lambda t: True),
    "string view": (lambda a: a.cast(pa.string_view()), pa.types.is_string),
    "decimal64": (lambda a: a.cast(pa.decimal64(12, 2)), pa.types.is_decimal),
    "decimal32": (lambda a: a.cast(pa.decimal32(7, 2)), pa.types.is_decimal),
    "half float": (lambda a: a.cast(pa.float16()), pa.types.is_floating),
}
PLAIN = {
    "run-end encoded": pa.array(["a", "b", "a", None, "c", "a", "b", "b"] * 3),
    "string view": pa.array(["a", "b", "", None, "zz", "a", "b", "b"] * 3),
    "decimal64": pa.array([decimal.Decimal(v) if v else None for v in
                           ["1.50", "2.25", "1.50", None, "-3.00", "2.25", "0.00", "1.50"] * 3],
                          pa.decimal128(12, 2)),
    "decimal32": pa.array([decimal.Decimal(v) if v else None for v in
                           ["1.50", "2.25", "1.50", None, "-3.00", "2.25", "0.00", "1.50"] * 3],
                          pa.decimal128(7, 2)),
    "half float": pa.array([1.5, 2.0, -0.0, None, 0.0, 1.5, float("nan"), 2.0] * 3,
                           pa.float32()),
}


def _declared(col: pa.Array) -> list[object]:
    seen: list[object] = []
    for v in col.to_pylist():
        if v is not None and v == v and v not in seen:
            seen.append(v)
    return seen


def _releases(plain: pa.Array) -> dict[str, tuple[Release, str | None]]:
    declared = _declared(plain)
    numeric = pa.types.is_floating(plain.type)
    out: dict[str, tuple[Release, str | None]] = {
        "count by declared keys": (lambda t, s: t.dp(s, keys={"c": declared}).groupby(
            "c").count(epsilon=1.0), None),
        "count by private keys": (lambda t, s: t.dp(s).groupby("c", keys="private").count(
            epsilon=1.0, delta=1e-6), None),
        "count of the column": (lambda t, s: t.dp(s).count("c", epsilon=1.0), None),
        "count of units": (lambda t, s: t.dp(s, privacy_unit="c", max_rows_per_unit=2).count(
            epsilon=1.0), "c"),
        "sum by units": (lambda t, s: t.dp(s, bounds={"x": (0.0, 10.0)}, privacy_unit="c",
                                           max_rows_per_unit=1).sum("x", epsilon=1.0), "c"),
    }
    if numeric:
        out["sum of the column"] = (lambda t, s: t.dp(s, bounds={"c": (-5.0, 5.0)}).sum(
            "c", epsilon=1.0), None)
    return out


@pytest.mark.parametrize("plan", [{}, {"batch_size": 5}, {"partitions": 3}])
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_a_column_releases_what_its_plain_values_release(encoding: str, plan: dict[str, int]
                                                         ) -> None:
    encode, plain_check = ENCODINGS[encoding]
    plain = PLAIN[encoding]
    encoded = encode(plain)
    assert public_type(encoded.type) != encoded.type and plain_check(plain.type)
    x = pa.array([float(i % 7) for i in range(len(plain))])
    for name, (release, unit) in _releases(plain).items():
        got = _outcome(release, dpf.scan(pa.table({"c": encoded, "x": x}), **plan), unit)
        want = _outcome(release, dpf.scan(pa.table({"c": plain, "x": x}), **plan), unit)
        assert got == want, name
        assert not isinstance(got[0], str), (name, got)  # released, never refused


def _far(values: list[int], t: pa.DataType) -> pa.Array:
    return pa.array(values, pa.int64()).view(t) if t.bit_width == 64 else pa.array(
        values, pa.int32()).view(t)


FAR_TYPES = [
    (pa.timestamp("s"), 1_577_836_800, 2**40),
    (pa.timestamp("us", "UTC"), 1_577_836_800 * 10**6, 2**62),
    (pa.timestamp("ns", "Asia/Kolkata"), 0, 2**63 - 1),
    (pa.date32(), 18_262, 2**31 - 1),
    (pa.date64(), 1_577_836_800_000, 2**62),
]


@pytest.mark.parametrize("plan", [{}, {"partitions": 3}])
@pytest.mark.parametrize(("t", "near", "far"), FAR_TYPES)
def test_a_date_past_python_s_range_is_one_more_missing_value(t: pa.DataType, near: int,
                                                              far: int, plan: dict[str, int]
                                                              ) -> None:
    """D: ten rows at one date; D': one more at a date Python cannot hold. Both release, with
    the same structure (as key, private key and unit)."""
    d, d2 = _far([near] * 10, t), _far([near] * 10 + [far], t)
    x = [1.0] * 11
    label = d.to_pylist()[0]
    releases: dict[str, tuple[Release, str | None]] = {
        "declared": (lambda s_, ss: s_.dp(ss, keys={"c": [label]}).groupby("c").count(
            epsilon=1.0), None),
        "private": (lambda s_, ss: s_.dp(ss).groupby("c", keys="private").count(
            epsilon=50.0, delta=1e-6), None),
        "units": (lambda s_, ss: s_.dp(ss, privacy_unit="c", max_rows_per_unit=20).count(
            epsilon=1.0), "c"),
    }
    for name, (release, unit) in releases.items():
        a = _outcome(release, dpf.scan(pa.table({"c": d, "x": x[:10]}), **plan), unit)
        b = _outcome(release, dpf.scan(pa.table({"c": d2, "x": x}), **plan), unit)
        assert not isinstance(a[0], str) and not isinstance(b[0], str), name
        if isinstance(a[0], list):  # the released keys and their dtype: the same structure
            assert a[:2] == b[:2], name


def test_a_csv_integer_at_the_int64_limit_is_read_exactly(tmp_path: Path) -> None:
    """CSV integers are parsed as integers: int64's largest value is itself (through float64
    it rounded to 2**63 and was missing), and is clamped like any value."""
    path = tmp_path / "x.csv"
    path.write_text("x\n1\n9223372036854775807\n2\n")
    got = _outcome(lambda t, s: t.dp(s, bounds={"x": (0, 10)}).sum("x", epsilon=50.0),
                   dpf.scan(str(path), types={"x": "int64"}))
    assert got[0] == pytest.approx(13.0, abs=0.5)  # 1 + 10 (clamped) + 2


def test_a_malformed_csv_date_past_the_first_block_is_missing(tmp_path: Path) -> None:
    """The CSV parser infers the types from the first block and raised (quoting the value) on
    a malformed one further down; dates and timestamps are now read as text and conformed."""
    path = tmp_path / "d.csv"
    path.write_text("d,t\n" + "2020-01-01,2020-01-01 10:00:00\n" * 2000
                    + "2020-13-45,2020-01-01 99:00:00\n,\nNA,null\n"
                    + "2020-01-02,2020-01-02T11:00:00\n")
    fmt = ds.CsvFileFormat(read_options=pacsv.ReadOptions(block_size=4096))
    types = {"d": "date32", "t": "timestamp[s]"}
    for col in ("d", "t"):
        got = _outcome(lambda t, s, c=col: t.dp(s).count(c, epsilon=100.0),  # type: ignore[misc]
                       dpf.scan(str(path), format=fmt, types=types))
        assert got[0] == pytest.approx(2001, abs=0.5), col
    keys = [dt.date(2020, 1, 1), dt.date(2020, 1, 2)]
    got = _outcome(lambda t, s: t.dp(s, keys={"d": keys}).groupby("d").count(epsilon=100.0),
                   dpf.scan(str(path), format=fmt, types=types))
    assert got[2] == pytest.approx([2000, 1], abs=0.5)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 300), bad=st.sets(st.integers(0, 299), max_size=4))
def test_a_value_that_does_not_convert_is_missing_alone(n: int, bad: set[int]) -> None:
    """Casting a column to its public type: the values that do not convert are missing, every
    other value converts (a refused cast made the whole batch missing: one row erased up to a
    batch of others, far past a count's sensitivity)."""
    bad = {i for i in bad if i < n}
    seconds = np.where(np.isin(np.arange(n), list(bad)), 2**40, 1_577_836_800 + np.arange(n))
    column = pa.array(seconds, pa.int64()).view(pa.timestamp("s"))
    got = conform_array(column, pa.timestamp("ns"))
    assert got.null_count == len(bad)
    kept = [i for i in range(n) if i not in bad]
    assert pc.cast(got.take(pa.array(kept, pa.int64())), pa.int64()).to_pylist() == [
        int(v) * 10**9 for v in seconds[kept]]


def test_one_file_s_value_the_dataset_type_cannot_hold_erases_no_other(tmp_path: Path) -> None:
    """A folder whose schema comes from its first file (timestamp[ns]); another file holds a
    date past 2262 among 1,000 others. Counts move by one row, not by a batch."""
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"t": pa.array([0], pa.timestamp("ns"))}), folder / "a.parquet")
    near = [1_577_836_800] * 1000
    for name, values in (("b.parquet", near), ("c.parquet", [*near[:999], 2**40])):
        sub = tmp_path / name.split(".")[0]
        sub.mkdir()
        pq.write_table(pa.table({"t": pa.array([0], pa.timestamp("ns"))}), sub / "a.parquet")
        pq.write_table(pa.table({"t": pa.array(values, pa.int64()).view(pa.timestamp("s"))}),
                       sub / name)
    counts = [_outcome(lambda t, s: t.dp(s).count("t", epsilon=100.0), dpf.scan(str(sub)))[0]
              for sub in (tmp_path / "b", tmp_path / "c")]
    assert counts[0] == pytest.approx(1001, abs=0.5)
    assert counts[1] == pytest.approx(1000, abs=0.5)
    assert math.isfinite(counts[1])


def test_text_in_another_date_format_is_missing_and_iso_text_converts() -> None:
    """Text read for a date or timestamp column: ISO 8601 converts, anything else (another
    format, blank text, ``NA``, a 13th month) is missing, value by value."""
    good = ["2020-01-01", "2021-12-31"]
    bad = ["01/02/2020", "", "NA", "2020-13-45", "abc", None]
    got = conform_array(pa.array((good + bad) * 50), pa.date32()).to_pylist()
    assert got == ([dt.date(2020, 1, 1), dt.date(2021, 12, 31)] + [None] * len(bad)) * 50
    stamps = ["2020-01-01T10:00:00", "2020-01-01 10:00:00.5", "2020-01-01T10:00:00+01:00"]
    got = conform_array(pa.array(stamps), pa.timestamp("us")).to_pylist()
    assert got[:2] == [dt.datetime(2020, 1, 1, 10), dt.datetime(2020, 1, 1, 10, 0, 0, 500000)]
    assert got[2] is None  # a zoned text is no naive timestamp (Arrow's cast refuses it)


@pytest.mark.parametrize("pinned", [False, True])
@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("rows", [200, 60_000])
def test_a_csv_value_that_is_not_utf8_is_missing_alone(tmp_path: Path, pinned: bool, where: str,
                                                       rows: int) -> None:
    """One byte that is not UTF-8 in a text field: Arrow inferred the whole column as binary
    (declared text keys then matched nothing), refused to open the file with pinned types, or
    raised after the charge past the first block. The field is missing, alone."""
    good = "".join(f"{('CA', 'NY', 'TX')[i % 3]},{i % 10}\n" for i in range(rows))
    odd = b"\xffCA,5\n"
    files = {}
    for name, extra in (("d", b""), ("d2", odd)):
        body = good.encode()
        body = extra + body if where == "first" else body + extra
        path = tmp_path / f"{name}.csv"
        path.write_bytes(b"state,x\n" + body)
        files[name] = str(path)
    fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
        column_types={"state": pa.string(), "x": pa.float64()})) if pinned else None
    types = None if pinned else {"state": "string"}  # declared by the format, or by types=

    def release(path: str) -> tuple[Any, ...]:
        return _outcome(lambda t, s: t.dp(s, bounds={"x": (0, 10)},
                                          keys={"state": ["CA", "NY", "TX"]}).groupby(
            "state").count(epsilon=100.0), dpf.scan(path, format=fmt, types=types))

    a, b = release(files["d"]), release(files["d2"])
    assert a[:2] == b[:2] and a[3] == b[3]  # labels, index dtype and charge
    assert b[2] == pytest.approx(a[2], abs=0.5)  # the odd row counts in no group
