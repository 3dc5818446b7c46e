"""The scan front's review (tests/audit/findings_scan.py): what one file's value can no longer
do to a release.

1. integers never go through float64 (ids past 2**53 merged when a safe cast refused one
   value), integers a float type cannot hold exactly, numbers other than 0/1 as booleans and
   decimals as numbers are missing or read by value;
2. a column of the null type is all missing in every file (other files' values went through
   unconformed and a unit plan raised after the charge); a blank CSV column is text;
3. every CSV column is read as bytes and converted value by value (a malformed time of day,
   decimal or duration raised after the charge), with the format's spellings;
4. a union of datasets is read file by file in each file's own schema (pyarrow's strict cast
   raised after the charge);
5. every file is opened before the charge (a corrupt second file raised after it), and a
   blank CSV file is a file of no rows;
6. a CSV row longer than the read block is read with larger blocks (it raised).
"""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.backends.blocks.arrow_conform import conform_array

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions warn


def _session() -> dpf.Session:
    """A budget for releases at epsilon 1e6: the released values are the exact aggregates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e9, 1e-3, seed=5)


def _count(source: Any, column: str | None = None, **scan: Any) -> int:
    priv = dpf.scan(source, **scan).dp(_session())
    return int(priv.count(column, epsilon=1e6) if column else priv.count(epsilon=1e6))


# -- 1. integers exactly ------------------------------------------------------------------------

def test_integers_conform_to_integers_exactly_never_through_float() -> None:
    big = [2**60 + i for i in range(4)]
    got = conform_array(pa.array([*big, 2**64 - 1, None], pa.uint64()), pa.int64())
    assert got.to_pylist() == [*big, None, None]
    got = conform_array(pa.array([-1, 2**62 + 1, 0], pa.int64()), pa.uint64())
    assert got.to_pylist() == [None, 2**62 + 1, 0]
    got = conform_array(pa.array([300, -5, 7], pa.int16()), pa.uint8())
    assert got.to_pylist() == [None, None, 7]


def test_integers_a_float_cannot_hold_exactly_are_missing() -> None:
    got = conform_array(pa.array([2**60, 2**53 + 1, 3, None, 2**63 - 1]), pa.float64())
    assert got.to_pylist() == [float(2**60), None, 3.0, None, None]
    got = conform_array(pa.array([2**64 - 1, 2**63], pa.uint64()), pa.float64())
    assert got.to_pylist() == [None, float(2**63)]
    got = conform_array(pa.array([2**24 + 1, 2**24, -5], pa.int32()), pa.float32())
    assert got.to_pylist() == [None, float(2**24), -5.0]


def test_only_zero_and_one_are_booleans() -> None:
    assert conform_array(pa.array([0, 1, 2, -1, None]), pa.bool_()).to_pylist() == [
        False, True, None, None, None]
    assert conform_array(pa.array([0.0, 1.0, 0.5, float("nan")]), pa.bool_()).to_pylist() == [
        False, True, None, None]


def test_decimals_conform_to_numbers_by_value() -> None:
    d = pa.array([decimal.Decimal(v) for v in ("1.50", "2.00", "-3.00", "300.00")] + [None],
                 pa.decimal128(10, 2))
    assert conform_array(d, pa.float64()).to_pylist() == [1.5, 2.0, -3.0, 300.0, None]
    assert conform_array(d, pa.int64()).to_pylist() == [None, 2, -3, 300, None]
    assert conform_array(d, pa.uint8()).to_pylist() == [None, 2, None, None, None]
    flags = pa.array([decimal.Decimal(v) for v in ("0", "1", "2")], pa.decimal128(3, 0))
    assert conform_array(flags, pa.bool_()).to_pylist() == [False, True, None]
    huge = pa.array([decimal.Decimal(10**40), decimal.Decimal(5)], pa.decimal256(50, 0))
    assert conform_array(huge, pa.uint64()).to_pylist() == [None, 5]


def test_an_id_past_int64_leaves_the_other_ids_of_its_file_whole(tmp_path: Path) -> None:
    """0.x read a uint64 file through float64 when one id passed int64: 2**60 + i were one."""
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), tmp_path / "a.parquet")
    ids = [2**60 + i for i in range(20)] + [2**64 - 1]
    pq.write_table(pa.table({"id": pa.array(ids, pa.uint64())}), tmp_path / "b.parquet")
    scan = dpf.scan(str(tmp_path / "*.parquet"))
    assert int(scan.dp(_session()).count_distinct("id", epsilon=1e6)) == 23
    units = scan.dp(_session(), privacy_unit="id", max_rows_per_unit=1)
    assert int(units.count(epsilon=1e6)) == 23


# -- 2. the null type -------------------------------------------------------------------------

def test_a_column_of_the_null_type_is_missing_in_every_file(tmp_path: Path) -> None:
    pq.write_table(pa.table({"k": pa.nulls(3), "x": [1, 1, 1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"k": [1] * 20, "x": [1] * 20}), tmp_path / "b.parquet")
    pq.write_table(pa.table({"k": ["z"], "x": [1]}), tmp_path / "c.parquet")
    glob = str(tmp_path / "*.parquet")
    assert dpf.scan(glob).schema.field("k").type == pa.null()
    assert _count(glob, "k") == 0
    assert _count(glob) == 24
    units = dpf.scan(glob).dp(_session(), privacy_unit="k", max_rows_per_unit=1)
    assert int(units.count(epsilon=1e6)) == 0
    assert conform_array(pa.array([1, 2]), pa.null()).null_count == 2


def test_a_csv_column_blank_in_the_first_file_is_text(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("k,x\n,1\n,1\n")
    (tmp_path / "b.csv").write_text("k,x\n" + "1,1\n" * 20)
    (tmp_path / "c.csv").write_text("k,x\n" + "2,1\n" * 5 + "z,1\n")
    glob = str(tmp_path / "*.csv")
    assert dpf.scan(glob).schema.field("k").type == pa.string()  # undeclared: text
    units = dpf.scan(glob, types={"k": "string"}).dp(_session(), privacy_unit="k",
                                                     max_rows_per_unit=1)
    assert int(units.count(epsilon=1e6)) == 4  # "", "1", "2", "z"


# -- 3. CSV text converted value by value -------------------------------------------------------

def test_text_as_a_time_of_day() -> None:
    text = pa.array(["12:34", " 12:34:56.5 ", "25:00:00", "x", None, "1:00"])
    assert conform_array(text, pa.time64("us")).to_pylist() == [
        dt.time(12, 34), dt.time(12, 34, 56, 500_000), None, None, None, None]
    assert conform_array(text, pa.time32("s")).to_pylist() == [
        dt.time(12, 34), None, None, None, None, None]


def test_a_malformed_time_of_day_is_missing_alone(tmp_path: Path) -> None:
    """A bad time made its file's column text (every time of it missing), or raised past the
    first block or when pinned, after the charge."""
    (tmp_path / "a.csv").write_text("t,x\n01:00:00,1\n02:00:00,1\n")
    (tmp_path / "b.csv").write_text("t,x\n" + "03:00:00,1\n" * 20 + "25:99:00,1\n")
    glob = str(tmp_path / "*.csv")
    declared = {"t": "time32[s]"}
    assert dpf.scan(glob, types=declared).schema.field("t").type == pa.time32("s")
    assert _count(glob, "t", types=declared) == 22
    pinned = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
        column_types={"t": pa.time64("us"), "x": pa.int64()}))
    (tmp_path / "c.txt").write_text("t,x\n" + "12:00:00,3\n" * 5 + "secret,3\n")
    assert _count(str(tmp_path / "c.txt"), format=pinned) == 6
    assert _count(str(tmp_path / "c.txt"), "t", format=pinned) == 5


def test_pinned_decimals_and_durations_never_raise(tmp_path: Path) -> None:
    fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
        column_types={"x": pa.decimal128(10, 2), "d": pa.duration("s")}))
    path = tmp_path / "x.csv"
    path.write_text("x,d\n" + "1.50,5\n" * 20 + "secret-42,zz\n1.234,1.5\n 2 ,-7\n")
    assert _count(path, format=fmt) == 23
    assert _count(path, "x", format=fmt) == 21
    assert _count(path, "d", format=fmt) == 21
    got = conform_array(pa.array(["1.5", "1e2", "x", "1.234", ".5"]), pa.decimal128(10, 2))
    assert [None if v is None else float(v) for v in got.to_pylist()] == [
        1.5, 100.0, None, None, 0.5]
    assert conform_array(pa.array(["5", "x", "-2"]), pa.duration("ms")).to_pylist() == [
        dt.timedelta(milliseconds=5), None, dt.timedelta(milliseconds=-2)]


def test_timestamps_by_the_formats_parsers(tmp_path: Path) -> None:
    fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
        column_types={"t": pa.timestamp("s")},
        timestamp_parsers=["%d/%m/%Y", pacsv.ISO8601]))
    path = tmp_path / "x.csv"
    path.write_text("t,x\n" + "01/02/2020,1\n" * 5 + "2020-03-04,1\nsecret,1\n40/40/2020,1\n")
    assert _count(path, format=fmt) == 8
    assert _count(path, "t", format=fmt) == 6
    priv = dpf.scan(path, format=fmt).dp(_session())
    out = priv.groupby("t", keys="private").count(epsilon=1e6, delta=1e-4)
    assert {str(k)[:10]: int(v) for k, v in out.items()} == {"2020-02-01": 5}


def test_the_formats_spellings_of_booleans_and_the_decimal_point(tmp_path: Path) -> None:
    path = tmp_path / "yes.csv"
    path.write_text("b,x\n" + "yes,1\n" * 10 + "no,2\n" * 10)
    fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(true_values=["yes"],
                                                                false_values=["no"]))
    assert dpf.scan(path, format=fmt, types={"b": "bool"}).schema.field("b").type == pa.bool_()
    priv = dpf.scan(path, format=fmt, types={"b": "bool"}).dp(_session(), bounds={"b": (0, 1)})
    assert int(priv.count("b", epsilon=1e6)) == 20
    assert round(float(priv.sum("b", epsilon=1e6))) == 10
    with path.open("a") as f:
        f.write("true,3\n")  # not a word of this format
    pinned = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
        true_values=["yes"], false_values=["no"], column_types={"b": pa.bool_()}))
    assert _count(path, "b", format=pinned) == 20
    comma = tmp_path / "comma.csv"
    comma.write_text("x;y\n" + "1,5;1\n" * 10)
    fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(decimal_point=","),
                           parse_options=pacsv.ParseOptions(delimiter=";"))
    priv = dpf.scan(comma, format=fmt, types={"x": "float64"}).dp(_session(),
                                                                 bounds={"x": (0, 10)})
    assert int(priv.count("x", epsilon=1e6)) == 10
    assert abs(float(priv.sum("x", epsilon=1e6)) - 15.0) < 1e-3
    with comma.open("a") as f:
        f.write("2.5;1\n")  # a point is no decimal point here
    pinned = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
        decimal_point=",", column_types={"x": pa.float64()}),
        parse_options=pacsv.ParseOptions(delimiter=";"))
    assert _count(comma, "x", format=pinned) == 10


# -- 4. a union of datasets ---------------------------------------------------------------------

def test_a_union_of_datasets_is_read_in_each_files_schema(tmp_path: Path) -> None:
    pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int64())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"k": pa.array([4] * 10 + [2**64 - 5], pa.uint64())}),
                   tmp_path / "b.parquet")
    schema = pa.schema([("k", pa.int64())])
    union = ds.dataset([ds.dataset(str(tmp_path / "a.parquet"), schema=schema),
                        ds.dataset(str(tmp_path / "b.parquet"), schema=schema),
                        ds.dataset(pa.table({"k": pa.array([9], pa.int64())}))])
    assert _count(union) == 15
    assert _count(union, "k") == 14


# -- 5. every file opened before the charge ----------------------------------------------------

def test_a_corrupt_file_past_the_first_is_refused_before_the_charge(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / "b.parquet")
    raw = (tmp_path / "b.parquet").read_bytes()
    (tmp_path / "b.parquet").write_bytes(raw[:-20])
    for source in (str(tmp_path / "*.parquet"), str(tmp_path)):
        with pytest.raises(dpf.ValidationError, match="cannot open"):
            dpf.scan(source)
    csv = tmp_path / "csv"
    csv.mkdir()
    (csv / "a.csv").write_text("k,x\n1,1\n")
    (csv / "b.csv.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(dpf.ValidationError, match="cannot open"):
        dpf.scan([str(csv / "a.csv"), str(csv / "b.csv.gz")], format="csv")


@pytest.mark.parametrize("blank", [b"", b"\n", b"\xef\xbb\xbf", b" \r\n\n"])
def test_a_blank_csv_file_is_a_file_of_no_rows(tmp_path: Path, blank: bytes) -> None:
    (tmp_path / "b.csv").write_text("k,x\n1,1\n2,1\n")
    (tmp_path / "a.csv").write_bytes(blank)  # first: the schema is read from b.csv
    (tmp_path / "c.csv").write_bytes(blank)
    glob = str(tmp_path / "*.csv")
    assert dpf.scan(glob).columns == ["k", "x"]
    assert _count(glob) == 2
    units = dpf.scan(glob, types={"k": "int64"}).dp(_session(), privacy_unit="k",
                                                    max_rows_per_unit=1)
    assert int(units.count(epsilon=1e6)) == 2
    assert _count(str(tmp_path)) == 2  # the folder


# -- 6. a row longer than the read block ------------------------------------------------------

def test_a_field_longer_than_the_block_is_read(tmp_path: Path) -> None:
    first = tmp_path / "first.csv"  # in the first block: the schema probe reads it
    first.write_bytes(b"g,x\n" + b"a" * ((1 << 20) + 10) + b",3\n" + b"b,1\n" * 10)
    assert _count(first) == 11
    small = ds.CsvFileFormat(read_options=pacsv.ReadOptions(block_size=1024))
    later = tmp_path / "later.csv"  # past blocks already read: they are not read twice
    later.write_bytes(b"g,x\n" + b"b,1\n" * 600 + b"a" * 3000 + b",3\n" + b"b,1\n" * 7)
    assert _count(later, format=small) == 608
    priv = dpf.scan(later, format=small, types={"x": "int64"}).dp(_session(),
                                                                  bounds={"x": (0, 5)})
    assert round(float(priv.sum("x", epsilon=1e6))) == 610
    both = tmp_path / "both"  # the long row as the second file's first row
    both.mkdir()
    (both / "a.csv").write_bytes(b"g,x\nb,1\n")
    (both / "b.csv").write_bytes(b"g,x\n" + b"a" * 3000 + b",3\n" + b"b,1\n")
    assert _count(str(both / "*.csv"), format=small) == 3


def test_a_folder_of_csv_files_is_read_as_csv(tmp_path: Path) -> None:
    """A folder without ``format=`` is read in the format its files' names say, as a glob is
    (it was read as Parquet and refused), and the CLI tells it the same way, from the names
    alone (``inferred_format``): a CSV folder needs ``[input] types`` there."""
    from dpframe.backends.arrow.source import inferred_format

    folder = tmp_path / "parts"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.csv").write_text("x\n1\n2\n")
    s = dpf.Session(1e9, seed=1)
    assert round(float(dpf.scan(folder).dp(s).count(epsilon=1e6))) == 4
    assert inferred_format([str(folder)]) == "csv"
    assert inferred_format([str(folder / "*.csv")]) == "csv"
    assert inferred_format([str(tmp_path / "missing")]) is None


# -- 7. a quote that does not balance ---------------------------------------------------------

_GOOD = [b'%d,"a ""b"" c, %d"' % (i, i) for i in range(400)]  # a delimiter, escaped quotes


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
@pytest.mark.parametrize("at", [0, 20, 300, 400])  # the first row, the first block, past it, last
def test_an_unbalanced_quote_is_one_malformed_row(tmp_path: Path, newline: bytes, at: int
                                                  ) -> None:
    """With values on one line each (Arrow's default), a row whose quote does not close is
    skipped alone: it swallowed every row after it (400 rows counted 21), or raised "out of
    sync" after the charge with smaller blocks."""
    small = ds.CsvFileFormat(read_options=pacsv.ReadOptions(block_size=1024))
    for trail in (newline, b""):
        rows = [*_GOOD[:at], b'7777,"oops', *_GOOD[at:]]
        path = tmp_path / "a.csv"
        path.write_bytes(b"u,x" + newline + newline.join(rows) + trail)
        assert _count(path) == 400
        assert _count(path, format=small) == 400
        assert _count(path, "x", format=small, types={"x": "string"}) == 400
    from dpframe.backends.arrow.source import DatasetSource

    values = [v for b in DatasetSource(path).batches(["x"], 100) for v in b.column(0).to_pylist()]
    assert values == [f'a "b" c, {i}' for i in range(400)]


def test_unbalanced_quotes_in_other_dialects_and_files(tmp_path: Path) -> None:
    esc = ds.CsvFileFormat(parse_options=pacsv.ParseOptions(escape_char="\\",
                                                            double_quote=False))
    (tmp_path / "esc.txt").write_bytes(b'u,x\n1,"a\\"b"\n2,c\\\n3,d\n4,"e\n5,f\n')
    assert _count(tmp_path / "esc.txt", format=esc) == 3  # an escaped newline, an open quote
    mid = tmp_path / "mid.csv"  # a quote inside an unquoted field is a character
    mid.write_bytes(b'u,x\n1,5\'3"\n2,a"b,"c\n3,d\n')
    assert _count(mid) == 2
    gz = tmp_path / "gz"
    gz.mkdir()
    (gz / "a.csv.gz").write_bytes(gzip.compress(b"u,x\n" + b"1,a\n" * 5 + b'2,"b\n' + b"3,c\n"))
    assert _count(str(gz / "*.csv.gz")) == 6
    part = tmp_path / "part" / "k=1"
    part.mkdir(parents=True)
    (part / "a.csv").write_bytes(b'u,x\n1,"a\n2,b\n3,c\n')
    folder = str(tmp_path / "part")
    assert _count(folder, format="csv", partitioning="hive") == 2
    assert dpf.scan(folder, format="csv", partitioning="hive").columns == ["u", "x", "k"]
    probe = tmp_path / "probe.csv"  # the open quote in the first block made u text
    probe.write_bytes(b'u,x\n"1,2\n' + b"3,4\n" * 20)
    priv = dpf.scan(probe, types={"u": "int64"}).dp(_session(), bounds={"u": (0, 5)})
    assert int(priv.sum("u", epsilon=1e6)) == 60


def test_values_on_several_lines_keep_arrows_reading(tmp_path: Path) -> None:
    """With ``newlines_in_values=True`` a quote legitimately continues the row on the next
    lines; a quote that never closes takes the rest of the file, never an error."""
    fmt = ds.CsvFileFormat(parse_options=pacsv.ParseOptions(newlines_in_values=True),
                           read_options=pacsv.ReadOptions(block_size=256))
    path = tmp_path / "a.csv"
    path.write_bytes(b'u,x\n1,"a\nb"\n' + b"2,c\n" * 50)
    assert _count(path, format=fmt) == 51
    path.write_bytes(b'u,x\n1,"a\n' + b"2,c\n" * 50)
    assert _count(path, format=fmt) == 1


# -- 8. CSV read options no row may turn against the others ---------------------------------

def _refused_before_any_charge(source: Any, fmt: ds.CsvFileFormat, words: str) -> None:
    session = _session()
    with pytest.raises(dpf.ValidationError, match=words):
        dpf.scan(source, format=fmt).dp(session).count(epsilon=1e6)
    assert session.spent[0] == 0 and len(session.ledger) == 0


@pytest.mark.parametrize("first", [b"", b"7,8,9\n"])
def test_generated_column_names_are_refused_whatever_the_data(tmp_path: Path, first: bytes
                                                              ) -> None:
    """One person's first line set the file's number of fields (every other row skipped)."""
    path = tmp_path / "a.csv"
    path.write_bytes(first + b"".join(b"%d,%d\n" % (i, i) for i in range(20)))
    fmt = ds.CsvFileFormat(read_options=pacsv.ReadOptions(autogenerate_column_names=True))
    _refused_before_any_charge(path, fmt, "column_names")
    given = pa.schema([("f0", pa.string()), ("f1", pa.string())])
    _refused_before_any_charge(ds.dataset(path, format=fmt, schema=given), fmt, "column_names")


@pytest.mark.parametrize("second", [b"", b"\n", b'7,"oops\n', b'7,"oops\r\n8,"no\n'])
def test_a_file_of_only_dropped_lines_is_a_file_of_no_rows(tmp_path: Path, second: bytes
                                                           ) -> None:
    """Without a header line, a file holding only lines the quote filter drops is read as no
    rows, like an empty file (it refused the scan)."""
    (tmp_path / "a.csv").write_bytes(b"".join(b"%d,%d\n" % (i, i) for i in range(20)))
    (tmp_path / "b.csv").write_bytes(second)
    fmt = ds.CsvFileFormat(read_options=pacsv.ReadOptions(column_names=["u", "x"]))
    assert _count(str(tmp_path / "*.csv"), format=fmt) == 20
    (tmp_path / "b.csv").write_bytes(b'"title\nu,x\n' + second)
    assert _count(str(tmp_path / "b.csv"), format="csv") == 0


@pytest.mark.parametrize("encoding", ["cp1252", "latin-1", "utf-16"])
def test_an_encoding_other_than_utf8_is_refused_whatever_the_data(tmp_path: Path,
                                                                  encoding: str) -> None:
    """The dataset dropped the encoding (only the first file's probe used it) and a byte the
    codec refused in the probed part refused the scan."""
    path = tmp_path / "a.csv"
    for data in (b"u,x\n1,a\n2,b\n", b"u,x\n7,\x81\n1,a\n"):
        path.write_bytes(data)
        fmt = ds.CsvFileFormat(read_options=pacsv.ReadOptions(encoding=encoding))
        _refused_before_any_charge(path, fmt, "UTF-8")
    utf8 = ds.CsvFileFormat(read_options=pacsv.ReadOptions(encoding="UTF-8"))
    assert _count(path, format=utf8) == 2


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_skip_rows_skips_physical_lines_before_the_quote_filter(tmp_path: Path,
                                                                newline: bytes) -> None:
    """A title line whose quote does not close is skipped by ``skip_rows``, not the header
    after it (the filter dropped the title, and skip_rows then skipped the header)."""
    path = tmp_path / "a.csv"
    lines = [b'"Q1 report', b"u,x", *(b"%d,%d" % (i, i) for i in range(10)), b'7,"oops', b""]
    path.write_bytes(b"\xef\xbb\xbf" + newline.join(lines))
    fmt = ds.CsvFileFormat(read_options=pacsv.ReadOptions(skip_rows=1))
    assert dpf.scan(path, format=fmt).columns == ["u", "x"]
    assert _count(path, format=fmt) == 10
    path.write_bytes(b'"Q1 report' + newline)  # nothing after the skipped lines: no rows
    named = ds.CsvFileFormat(read_options=pacsv.ReadOptions(skip_rows=1, column_names=["u"]))
    (tmp_path / "b.csv").write_bytes(b"1\n2\n3\n")
    assert _count(str(tmp_path / "*.csv"), format=named) == 2
